"""Hysteresis at the idle cut: a GPU hovering at 5 % activity does not flip idle / busy every window.

The rule (docs/formulas.md#windows, "Hysteresis"), a Schmitt trigger applied per GPU in time order:
a window is idle when its activity is below :data:`IDLE_MAX` (the cut, entering idle); a window
whose activity lies in the band ``[IDLE_MAX, IDLE_EXIT)`` keeps the state of the window before it
(idle stays idle, anything else stays what its own values say); activity at or above
:data:`IDLE_EXIT` leaves idle at once. The state starts fresh (not idle) at a GPU's first window
of the analysed table and after a gap in its data (the gap rule of :mod:`span`), so it depends
only on the GPU's finished windows in time order, never on how samples were split across files,
partitions or workers (the fleet engines classify after the reduction, on whole windows).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rooftop.analyzer.windows.codes import _epoch_ms
from rooftop.analyzer.windows.gaps import gap_limit
from rooftop.analyzer.windows.span import _ENTITY

IDLE_EXIT = 0.10  # leave idle only at or above this activity: a band as wide as the 5 % cut itself


def held_idle(out: pd.DataFrame, idle: np.ndarray, band: np.ndarray) -> np.ndarray:
    """Windows held idle by hysteresis: in ``band`` (activity in ``[IDLE_MAX, IDLE_EXIT)``) and
    preceded, in their GPU's contiguous run of windows, by an idle window with only band windows
    between. ``idle``: the windows idle by their own values. Any row order; rows are matched by
    GPU (``host, gpu, uuid, mig``) and ordered by their first sample."""
    n = len(out)
    if not n or not band.any():
        return np.zeros(n, dtype=bool)
    keys = [c for c in _ENTITY if c in out.columns]
    gid = out.groupby(keys, dropna=False, sort=False).ngroup().to_numpy() if keys else np.zeros(n, "int64")
    first = _epoch_ms(out["first_ts" if "first_ts" in out.columns else "start"]).astype("float64")
    last = _epoch_ms(out["last_ts"]).astype("float64") if "last_ts" in out.columns else first
    order = np.lexsort((first, gid))
    g, f, la = gid[order], first[order], last[order]
    window_ms = out["window_s"].to_numpy(dtype="float64")[order] * 1000 if "window_s" in out.columns \
        else np.zeros(n)
    interval_ms = out["interval_s"].to_numpy(dtype="float64")[order] * 1000 if "interval_s" in out.columns \
        else np.full(n, np.nan)
    step = np.r_[np.inf, f[1:] - la[:-1]]
    with np.errstate(invalid="ignore"):
        gap = step > gap_limit(interval_ms, window_ms)
    new_run = np.r_[True, g[1:] != g[:-1]] | gap
    run = np.cumsum(new_run)
    # state: 1 idle, 0 not idle, NaN in the band (carries the state before it within the run)
    state = np.where(idle[order], 1.0, np.where(band[order], np.nan, 0.0))
    carried = pd.Series(state).groupby(run).ffill().to_numpy(dtype="float64")
    held_sorted = band[order] & (carried == 1.0)
    held = np.zeros(n, dtype=bool)
    held[order] = held_sorted
    return held
