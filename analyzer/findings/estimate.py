"""Recoverable time per launch record and per kernel family (docs/formulas.md#findings).

Per launch: the largest *whole-kernel* (``global``) NVIDIA estimate, capped at rooftop's roofline
gap; the gap itself, duration × (1 − achieved/attainable), capped by NCU's busier SpeedOfLight %.
Per family: the sums of those, the estimate (NVIDIA's where any launch has one, else the gap, and
no gap for an unknown label) and the score (estimate over all kernel time, else the time share).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]
RuleBest = tuple[float | None, str | None, str | None]


def best_rules(rules: Any, local: bool = False) -> RuleBest:
    """Largest ``speedup_pct`` of one launch's ncu rules with its rule id and title: among the
    whole-kernel (``global`` or untyped) estimates, or with ``local=True`` among the ``local``
    ones (a speedup of one unit or pipe, not of the kernel; docs/formulas.md#findings)."""
    best: RuleBest = (None, None, None)
    if not isinstance(rules, (list, tuple, np.ndarray)):
        return best
    for r in rules:
        if not isinstance(r, Mapping):
            continue
        if (str(r.get("speedup_type") or "").lower() == "local") != local:
            continue
        raw = r.get("speedup_pct")
        if not isinstance(raw, (int, float)) or isinstance(raw, bool):
            continue
        sp = float(raw)
        if math.isfinite(sp) and sp > 0 and (best[0] is None or sp > best[0]):
            best = (min(sp, 100.0), r.get("rule"), r.get("title"))
    return best


@dataclass(frozen=True)
class LaunchEstimates:
    """Per launch record (a row of the kernel table), times in seconds weighted by ``invocations``."""

    dur: Floats
    gap: Floats  # the roofline gap, duration × (1 − achieved/attainable)
    gap_est: Floats  # the gap capped by NCU's busier SpeedOfLight %
    nv_raw: Floats  # NVIDIA's largest whole-kernel estimate
    nv: Floats  # the same, capped at the gap
    capped_nv: Bools
    roof_pct: Floats  # % of the roof: rooftop's, or NCU's SOL % of the labelled side where higher
    failed: Bools
    best: list[RuleBest]  # the largest whole-kernel rule per launch
    local: Floats  # the largest local (one unit or pipe) estimate per launch


def _column(results: pd.DataFrame, col: str) -> Floats:
    if col not in results:
        return np.full(len(results), np.nan)
    return np.asarray(pd.to_numeric(results[col], errors="coerce").to_numpy(dtype=float), dtype=np.float64)


def launch_estimates(results: pd.DataFrame) -> LaunchEstimates:
    """The recoverable-time columns of every launch record of ``results`` (docs/formulas.md#findings)."""
    from rooftop.analyzer.kernels.families import launch_weights

    n = len(results)
    dur = _column(results, "duration_s") * launch_weights(results).to_numpy()
    ach, att = _column(results, "achieved_flops_s"), _column(results, "attainable_flops_s")
    with np.errstate(divide="ignore", invalid="ignore"):
        gap_frac = np.clip(1.0 - ach / att, 0.0, 1.0)
    gap = np.where(np.isfinite(gap_frac) & (att > 0) & np.isfinite(dur), dur * gap_frac, np.nan)
    # a unit NCU measured at X % of its peak needs X % of the time at 100 %: no saving above 1 − X
    busiest = np.fmax(_column(results, "sol_compute_pct"), _column(results, "sol_memory_pct"))
    sol_cap = np.where(np.isfinite(busiest) & np.isfinite(dur), dur * np.clip(1.0 - busiest / 100.0, 0.0, 1.0), np.nan)
    # (only the roofline-gap estimate, which assumes the same work; NVIDIA's rules may remove work)
    gap_est = np.where(np.isfinite(gap) & np.isfinite(sol_cap), np.fmin(gap, sol_cap), gap)
    rules = results["ncu_rules"] if "ncu_rules" in results else pd.Series([None] * n, index=results.index)
    rule_lists = rules.tolist()
    best = [best_rules(r) for r in rule_lists]
    local = [best_rules(r, local=True) for r in rule_lists]
    sp = np.array([b[0] if b[0] is not None else np.nan for b in best], dtype=float)
    nv_raw = np.where(np.isfinite(sp) & np.isfinite(dur), dur * sp / 100.0, np.nan)
    # never above rooftop's own roofline bound where there is one (docs/formulas.md#findings)
    capped_nv = np.isfinite(nv_raw) & np.isfinite(gap) & (nv_raw > gap)
    nv = np.where(capped_nv, gap, nv_raw)
    roof_pct = _column(results, "pct_of_roof")
    # NCU's SOL % of the side the label names counts as the roof too (its >= 80 % "High Throughput")
    lab = results["label"].astype("object").to_numpy() if "label" in results else np.full(n, None, dtype=object)
    side = np.where(lab == "memory-bound", _column(results, "sol_memory_pct"),
                    np.where(lab == "compute-bound", _column(results, "sol_compute_pct"), np.nan))
    roof_pct = np.where(np.isfinite(side) & ~(roof_pct >= side), side, roof_pct)
    failed = results["profile_failed"].fillna(False).to_numpy(dtype=bool) if "profile_failed" in results else \
        np.zeros(n, dtype=bool)
    return LaunchEstimates(dur=dur, gap=gap, gap_est=gap_est, nv_raw=nv_raw, nv=nv, capped_nv=capped_nv,
                           roof_pct=roof_pct, failed=failed, best=best,
                           local=np.array([b[0] if b[0] is not None else np.nan for b in local], dtype=float))


def family_estimates(fams: pd.DataFrame, est: LaunchEstimates, pos_family: npt.NDArray[np.object_]) -> pd.DataFrame:
    """One row per family of ``fams`` (:func:`analyzer.kernels.families.family_table`) that has a launch not
    failed, with the family's columns and the sums of ``est`` over its launches (``pos_family`` names
    each launch's family): ``gap_s``, ``nv_s``, ``nv_raw_s``, their counts, the time-weighted ``roof_pct``,
    ``local_max``, then ``est``, ``share`` and ``score`` (docs/formulas.md#findings)."""
    ok_roof = np.isfinite(est.roof_pct) & np.isfinite(est.dur)
    frame = pd.DataFrame({"family": pos_family, "gap": est.gap_est, "sol_capped": est.gap_est < est.gap,
                          "nv": est.nv, "nv_raw": est.nv_raw, "capped": est.capped_nv,
                          "roof_t": np.where(ok_roof, est.roof_pct * est.dur, np.nan),
                          "t_roof": np.where(ok_roof, est.dur, np.nan), "failed": est.failed, "local": est.local})
    groups = frame.groupby("family", sort=False)
    agg = fams.set_index("family")[["time_s", "launches", "label", "limiter", "kernels", "representative"]].copy()
    agg["gap_s"] = groups["gap"].sum(min_count=1).reindex(agg.index)
    agg["nv_s"] = groups["nv"].sum(min_count=1).reindex(agg.index)
    agg["n_gap"] = groups["gap"].count().reindex(agg.index).fillna(0)
    agg["n_nv"] = groups["nv"].count().reindex(agg.index).fillna(0)
    agg["rows"] = agg["kernels"].map(len)
    agg["nv_raw_s"] = groups["nv_raw"].sum(min_count=1).reindex(agg.index)
    agg["n_capped"] = groups["capped"].sum().reindex(agg.index).fillna(0)
    agg["n_sol_capped"] = groups["sol_capped"].sum().reindex(agg.index).fillna(0)
    agg["roof_pct"] = (groups["roof_t"].sum(min_count=1) / groups["t_roof"].sum(min_count=1)).reindex(agg.index)
    agg["local_max"] = groups["local"].max().reindex(agg.index)
    agg = agg[~groups["failed"].all().reindex(agg.index).fillna(False).astype(bool)]  # failed profiles: no advice
    return recoverable(agg, total_time(est))


def total_time(est: LaunchEstimates) -> float:
    """All kernel time, seconds (the denominator of shares and scores)."""
    return float(np.nansum(est.dur))


def recoverable(agg: pd.DataFrame, total: float) -> pd.DataFrame:
    """``agg`` with ``est`` (NVIDIA's summed estimate where any launch has one, else the gap; an unknown
    label's gap at the measured levels bounds nothing, since an unmeasured level may bind lower),
    ``share`` of ``total`` and ``score`` (est / total, else the share) added (docs/formulas.md#findings)."""
    agg = agg.copy()
    unknown = (agg["label"].fillna("unknown") == "unknown").to_numpy()
    agg["est"] = np.where(agg["n_nv"] > 0, agg["nv_s"],
                          np.where((agg["n_gap"] > 0) & ~unknown, agg["gap_s"], np.nan))
    agg["share"] = agg["time_s"].fillna(0.0) / total if total > 0 else 0.0
    agg["score"] = np.where(agg["est"].notna(), agg["est"] / total if total > 0 else 0.0, agg["share"])
    return agg
