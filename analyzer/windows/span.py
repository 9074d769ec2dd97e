"""Time a window really covers, the sampling interval, and the default window length.

Rules and their sources: docs/formulas.md#windows ("Window length" and "Covered time").

* Sampling interval of a GPU: the median of the positive steps between its samples (within a
  window: ``(last - first) / (k - 1)`` with ``k`` samples of its most-sampled field; across
  windows: the step from one window's last sample to the next window's first, unless that step is
  a gap: longer than :data:`GAP_STEPS` x the larger of the within-window interval and the window
  length; a gap is missing data, not one long sampling interval).
* Covered time of a window: from its first sample to its last sample plus one interval (each
  sample stands for one interval), at most the window length. A GPU whose interval cannot be measured (one instant scrape) covers 0 s: it is
  linted, never stretched to the window length.
* Default window: the smallest of :data:`NICE_S` that is at least the sampling interval and at
  least the capture's span / :data:`TARGET_WINDOWS`, capped at :data:`DEFAULT_MAX_S` unless the
  interval itself is longer.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rooftop.analyzer.windows.codes import _epoch_ms
from rooftop.analyzer.windows.fields import METRICS
from rooftop.analyzer.windows.gaps import (
    gap_limit,
)

TARGET_WINDOWS = 60  # windows across the capture's span that a default window aims for
DEFAULT_MAX_S = 60.0  # the longest default window (the long-standing default, fleet's nightly unit)
NICE_S = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0)
_ENTITY = ("host", "gpu", "uuid", "pci_bus_id", "mig")


def sample_interval_s(samples: pd.DataFrame) -> float | None:
    """Median sampling interval (s) over the sampled entities of a sample table; None if unknown."""
    if not len(samples):
        return None
    keys = [c for c in _ENTITY if c in samples.columns]
    s = samples[keys].assign(_t=_epoch_ms(samples["timestamp"])).drop_duplicates()
    s = s.sort_values([*keys, "_t"], kind="stable")
    d = s.groupby(keys, dropna=False, sort=False)["_t"].diff() if keys else s["_t"].diff()
    s = s.assign(_d=d)
    s = s[s["_d"] > 0]
    if not len(s):
        return None
    med = s.groupby(keys, dropna=False, sort=False)["_d"].median() if keys else s["_d"]
    return float(np.median(med.to_numpy(dtype="float64"))) / 1000.0


def capture_span_s(samples: pd.DataFrame) -> float:
    """Longest span (s) from first to last sample of one entity."""
    if not len(samples):
        return 0.0
    keys = [c for c in _ENTITY if c in samples.columns]
    t = samples[keys].assign(_t=_epoch_ms(samples["timestamp"]))
    g = t.groupby(keys, dropna=False, sort=False)["_t"] if keys else t["_t"]
    span = (g.max() - g.min()) if keys else pd.Series([g.max() - g.min()])
    return float(span.max()) / 1000.0


def choose_window(samples: pd.DataFrame) -> tuple[float, str]:
    """The default window length (s) for a capture and the sentence that says why."""
    interval = sample_interval_s(samples)
    span = capture_span_s(samples)
    # no measurable interval (one instant per GPU): nothing to resolve, the long-standing 60 s
    want = max(interval, min(span / TARGET_WINDOWS, DEFAULT_MAX_S)) if interval else DEFAULT_MAX_S
    window = next((n for n in NICE_S if n >= want - 1e-9), float(np.ceil(want)))
    itext = f"sampling interval {interval:g} s" if interval else "sampling interval unknown"
    reason = (f"{window:g} s, chosen from the capture: span {span:g} s, {itext}; the smallest "
              f"of {', '.join(f'{n:g}' for n in NICE_S if n <= DEFAULT_MAX_S)} s that is >= the interval "
              f"and >= span/{TARGET_WINDOWS} (capped at {DEFAULT_MAX_S:g} s); --window overrides "
              "(docs/formulas.md#windows)")
    return window, reason


def add_coverage(w: pd.DataFrame) -> pd.DataFrame:
    """Add ``interval_s`` (per GPU) and ``covered_s``; move ``start``/``end`` to the samples' span.

    ``w``: finished windows (sorted by GPU key then window start) with ``first_ts``/``last_ts``."""
    n = len(w)
    if not n or "first_ts" not in w.columns:
        return w
    first = _epoch_ms(w["first_ts"]).astype("float64")
    last = _epoch_ms(w["last_ts"]).astype("float64")
    ws_ms = np.round(w["window_s"].to_numpy(dtype="float64") * 1000)
    k = np.zeros(n, dtype="int64")
    for m in METRICS:
        if m + "__n" in w.columns:
            k = np.maximum(k, w[m + "__n"].to_numpy(dtype="int64"))
    keys = [c for c in _ENTITY if c in w.columns]
    gid = w.groupby(keys, dropna=False, sort=False).ngroup().to_numpy() if keys else np.zeros(n, "int64")
    interval = _intervals(gid, first, last, k, ws_ms)
    known = np.isfinite(interval)
    end = np.where(known, np.minimum(last + np.nan_to_num(interval), first + ws_ms), last)
    covered = np.maximum(end - first, 0.0) / 1000.0
    out = w.copy(deep=False)
    out["interval_s"] = interval / 1000.0
    out["covered_s"] = covered
    out["start"] = pd.to_datetime(first.astype("int64"), unit="ms", utc=True)
    out["end"] = pd.to_datetime(end.astype("int64"), unit="ms", utc=True)
    return out


def _intervals(gid: np.ndarray, first: np.ndarray, last: np.ndarray, k: np.ndarray,
               window_ms: np.ndarray) -> np.ndarray:
    """Per-row sampling interval (ms) of its GPU (NaN where no step can be measured). A step across
    windows longer than :data:`GAP_STEPS` x max(the GPU's within-window interval, the window) is a
    gap in the data and measures nothing (two scrapes months apart are not a months-long interval)."""
    n = len(gid)
    with np.errstate(invalid="ignore", divide="ignore"):
        inner = np.where(k >= 2, (last - first) / np.maximum(k - 1, 1), np.nan)
    same = np.r_[False, gid[1:] == gid[:-1]]
    across = np.full(n, np.nan)
    across[same] = (first[1:] - last[:-1])[same[1:]]
    inner_med = pd.Series(inner).groupby(gid).transform("median").to_numpy(dtype="float64")
    with np.errstate(invalid="ignore"):  # the window where no within-window step exists
        across = np.where(across <= gap_limit(inner_med, window_ms), across, np.nan)
    cand = pd.DataFrame({"g": np.r_[gid, gid], "v": np.r_[inner, across]})
    cand = cand[cand["v"] > 0]
    med = cand.groupby("g")["v"].median()
    return np.asarray(pd.Series(gid).map(med).to_numpy(dtype="float64"), dtype="float64")

