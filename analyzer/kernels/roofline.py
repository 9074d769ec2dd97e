"""Hierarchical (L1 / L2 / DRAM) roofline arithmetic, vectorized over the kernel table.

docs/research/formulas.md §0 and §8:

* ``AI_L = FLOPs / bytes_L`` (FLOP per byte at level L);
* ``ridge_L = P / BW_L``;
* ``attainable_L = min(P, AI_L x BW_L)``; overall attainable = min over the levels with data;
* binding level = argmin attainable_L, which is the level with the highest bandwidth
  utilization ``(bytes_L / T) / BW_L`` (the two are the same thing: ``AI_L x BW_L = F/T / util_L``).

``P`` is the compute roof for the kernel's FLOP mix. A kernel doing one class of work gets that
class's peak. For a mix, ``P = F / Σ_c (F_c / P_c)``: the rate if each class ran at its own peak
one after another (the serial-mix peak), so compute utilization ``= Σ_c (F_c / T) / P_c``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rooftop.analyzer.metrics.columns import FLOP_CLASSES, LEVELS


@dataclass
class Roofline:
    """Per-kernel roofline quantities (all aligned to the kernel table index; NaN = not evaluable)."""

    table: pd.DataFrame
    """Columns: flops, achieved_flops_s, compute_peak, compute_util, util_<class>, dominant_class,
    intensity_<lvl>, bw_util_<lvl>, ridge_<lvl>, attainable_<lvl>, attainable_flops_s,
    bw_time_s (the time the bytes need at the ceilings), bw_time_complete, binding_level, memory_util,
    pct_of_roof."""


def _argmax_label(frame: pd.DataFrame, labels: tuple[str, ...]) -> pd.Series:
    """Row-wise label of the largest non-NaN value; ``None`` where the row is all NaN."""
    arr = frame.to_numpy(dtype="float64")
    has = ~np.isnan(arr).all(axis=1)
    filled = np.where(np.isnan(arr), -np.inf, arr)
    pos = filled.argmax(axis=1)
    out = np.array(labels, dtype=object)[pos]
    return pd.Series(np.where(has, out, None), index=frame.index, dtype="object")


def compute(flops: pd.DataFrame, bytes_: pd.DataFrame, dur: pd.Series, ceilings: pd.DataFrame) -> Roofline:
    """The roofline for every kernel.

    ``flops``: columns ``fp64 fp32 fp16 tensor`` (FLOPs, NaN = not collected);
    ``bytes_``: columns ``l1 l2 dram`` (bytes); ``dur``: seconds;
    ``ceilings``: ``peak_<class>`` (FLOP/s) and ``bw_<level>`` (bytes/s).
    """
    idx = flops.index
    t = pd.DataFrame(index=idx)
    T = dur.where(dur > 0)
    total = flops[list(FLOP_CLASSES)].sum(axis=1, min_count=1)
    t["flops"] = total
    t["achieved_flops_s"] = total / T

    # per-class utilization of its own peak; serial-mix compute roof
    utils = pd.DataFrame(index=idx)
    denom = pd.Series(0.0, index=idx)
    unknown_peak = pd.Series(False, index=idx)
    for c in FLOP_CLASSES:
        f = flops[c]
        p = ceilings[f"peak_{c}"].where(ceilings[f"peak_{c}"] > 0)
        utils[c] = (f / T) / p
        work = f.fillna(0.0) > 0
        denom = denom + (f / p).where(work, 0.0)
        unknown_peak |= work & p.isna()
        t[f"util_{c}"] = utils[c]
    has_work = total.fillna(0.0) > 0
    peak_mix = (total / denom).where(has_work & ~unknown_peak)
    # no FLOPs at all: the FP32 roof is the reference for ridge points (a copy kernel sits at AI 0)
    peak = peak_mix.where(has_work, ceilings["peak_fp32"])
    t["compute_peak"] = peak
    t["compute_util"] = (t["achieved_flops_s"] / peak).where(has_work | total.eq(0))
    t["dominant_class"] = _argmax_label(utils.where(flops.fillna(0.0) > 0), FLOP_CLASSES)

    bw_utils = pd.DataFrame(index=idx)
    attain = pd.DataFrame(index=idx)
    for lvl in LEVELS:
        b = bytes_[lvl]
        bw = ceilings[f"bw_{lvl}"].where(ceilings[f"bw_{lvl}"] > 0)
        ai = (total / b).where(b > 0)
        t[f"intensity_{lvl}"] = ai
        t[f"bw_util_{lvl}"] = bw_utils[lvl] = (b / T) / bw
        t[f"ridge_{lvl}"] = peak / bw
        t[f"attainable_{lvl}"] = attain[lvl] = np.minimum(peak, ai * bw)
    t["attainable_flops_s"] = attain.min(axis=1, skipna=True).where(attain.notna().any(axis=1))
    # 0 FLOPs measured: no place on the FLOP roofline (intensity 0, attainable 0 say nothing); the bytes bound it
    zero = total.eq(0)
    for col in ["attainable_flops_s", *(f"{p}_{lvl}" for p in ("intensity", "ridge", "attainable") for lvl in LEVELS)]:
        t[col] = t[col].mask(zero)
    # the time the bytes need at the ceilings, max over levels (docs/formulas.md#work-bytes); complete
    # when every level that moved bytes has a ceiling (else an unmeasured level could need more)
    need = pd.DataFrame({lvl: (bytes_[lvl] / ceilings[f"bw_{lvl}"].where(ceilings[f"bw_{lvl}"] > 0)) for lvl in LEVELS})
    b = bytes_[list(LEVELS)]
    t["bw_time_s"] = need.max(axis=1, skipna=True).where(need.notna().any(axis=1))
    # every level's bytes known, and each that moved bytes with a ceiling
    t["bw_time_complete"] = (b.notna() & (need.notna() | b.eq(0))).all(axis=1) & (b.fillna(0.0) > 0).any(axis=1)
    t["binding_level"] = _argmax_label(bw_utils, LEVELS)
    t["memory_util"] = bw_utils.max(axis=1, skipna=True).where(bw_utils.notna().any(axis=1))
    t["pct_of_roof"] = 100.0 * t["achieved_flops_s"] / t["attainable_flops_s"].where(t["attainable_flops_s"] > 0)
    return Roofline(t)
