"""The OFU efficiency estimate of a DCGM window: an MFU-like figure from DCGM alone
(docs/formulas.md#ofu; Pedersen et al., "Instant GPU Efficiency Visibility at Fleet Scale",
arXiv:2605.20799).

``OFU = tensor pipe activity x SM clock / max SM clock``: the tensor pipe's share of cycles, times
the share of the peak clock those cycles ran at (a GPU's tensor peak is stated at its max clock).
Unknown (NaN, never 0) where the window has no tensor field, no SM clock, or no max clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.metrics.columns import column

# DCGM's split of the tensor pipe by instruction (HMMA: FP16/BF16/TF32/FP8, IMMA: integer, DFMA: FP64),
# read where the whole-pipe field 1004 is absent
TENSOR_PARTS = ("hmma_active", "imma_active", "dfma_active")


def _col(w: pd.DataFrame, c: str) -> np.ndarray:
    return np.asarray(column(w, c).to_numpy(dtype="float64"), dtype="float64")


def tensor_activity(w: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per window the tensor pipe's activity and where it comes from (``"tensor"``: field 1004;
    ``"parts"``: the sum of the per-precision fields 1013-1015, capped at 1; None: unknown)."""
    whole = _col(w, "tensor_active")
    parts = np.stack([_col(w, c) for c in TENSOR_PARTS], axis=1)
    has_parts = np.isfinite(parts).any(axis=1)
    summed = np.minimum(np.nansum(np.where(np.isfinite(parts), parts, 0.0), axis=1), 1.0)
    ok = np.isfinite(whole)
    value = np.where(ok, whole, np.where(has_parts, summed, np.nan))
    source = np.select([ok, has_parts], ["tensor", "parts"], "").astype(object)
    source[source == ""] = None
    return value, source


def max_clocks(w: pd.DataFrame, spec_clock: np.ndarray) -> np.ndarray:
    """Per window the max SM clock (MHz): field 113 where the data carries it, else the device
    table's boost clock for the window's model (``spec_clock``, NaN where unknown)."""
    own = _col(w, "max_sm_clock_mhz")
    return np.where(np.isfinite(own) & (own > 0), own, spec_clock)


def ofu(w: pd.DataFrame, spec_clock: np.ndarray) -> np.ndarray:
    """Per window the OFU estimate in 0..1, NaN where a field it needs is absent (the clock ratio is
    capped at 1: a clock sample above the stated max is the max)."""
    tensor, _src = tensor_activity(w)
    clock = _col(w, "sm_clock_mhz")
    peak = max_clocks(w, spec_clock)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(np.isfinite(clock) & (clock >= 0) & np.isfinite(peak) & (peak > 0),
                         np.minimum(clock / peak, 1.0), np.nan)
    out: np.ndarray = np.clip(tensor, 0.0, 1.0) * ratio
    return out


def spec_clocks(mspecs: Sequence[Any], mcode: np.ndarray) -> np.ndarray:
    """Each window's device-table SM boost clock (MHz), NaN where the model or its clock is unknown."""
    per = np.array([float(s.clock_mhz.get("sm") or np.nan) if s is not None else np.nan for s in mspecs])
    out: np.ndarray = per[mcode]
    return out


def weighted_ofu(values: np.ndarray, hours: np.ndarray) -> tuple[float | None, float]:
    """GPU-hour-weighted mean OFU over the windows that have one, and the GPU-hours it covers
    (None, 0.0 where no window has one)."""
    ok = np.isfinite(values) & (hours > 0)
    h = float(hours[ok].sum())
    if h <= 0:
        return None, 0.0
    return float((values[ok] * hours[ok]).sum() / h), h
