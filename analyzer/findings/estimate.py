"""Recoverable time per launch record and per kernel family (docs/formulas.md#findings).

Per launch: NVIDIA's *whole-kernel* (``global``) rule estimates, each bounded by physics
(:mod:`analyzer.findings.bounds`: a work-preserving fix by the busiest unit's SpeedOfLight % and the
roofline gap, a work-removing one by what the remaining work needs), the largest counted one; the
roofline gap itself, duration × (1 − achieved/attainable), capped by the busiest unit's %.
Per family: the sums of those, the estimate (NVIDIA's where any launch has one, else the gap, and
no gap for an unknown label), the bound it respects and the score (estimate over all kernel time,
else the time share).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from rooftop.analyzer.findings.bounds import (
    PRESERVING,
    REMOVING,
    Bound,
    RuleFix,
    Units,
    rule_bound,
    rule_fix,
)
from rooftop.analyzer.metrics.columns import column

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
class RuleClaim:
    """NVIDIA's whole-kernel estimate of one rule for one launch record, and what rooftop lets it claim."""

    rule: str | None
    title: str | None
    fix: RuleFix
    raw_s: float  # NVIDIA's estimate, duration × speedup
    bound: Bound  # the physical bound (docs/formulas.md#findings)
    claim_s: float  # min(raw, bound, and for work-preserving fixes the roofline gap)
    gap_capped: bool = False  # the roofline gap, not the bound, limited the claim


@dataclass(frozen=True)
class LaunchEstimates:
    """Per launch record (a row of the kernel table), times in seconds weighted by ``invocations``."""

    dur: Floats
    gap: Floats  # the roofline gap, duration × (1 − achieved/attainable), else the bandwidth gap
    gap_bw: Bools  # the gap is the bandwidth gap (no FLOP roofline)
    gap_est: Floats  # the gap capped by the busiest unit's SpeedOfLight %
    sol_cap: Floats  # duration × (1 − busiest unit % / 100), the bound on any work-preserving fix
    nv_raw: Floats  # NVIDIA's estimate of the counted rule with the largest claim
    nv: Floats  # that rule's claim (bounded)
    nv_bound: Floats  # that rule's physical bound
    nv_kind: list[str | None]  # that rule's fix kind (bounds.PRESERVING / REMOVING)
    capped_nv: Bools
    roof_pct: Floats  # % of the roof: rooftop's, or NCU's SOL % of the labelled side where higher
    failed: Bools
    best: list[RuleBest]  # the counted whole-kernel rule with the largest claim, per launch
    claims: list[list[RuleClaim]]  # every whole-kernel rule estimate of the launch, bounded
    local: Floats  # the largest local (one unit or pipe) estimate per launch


def _column(results: pd.DataFrame, col: str) -> Floats:
    return np.asarray(column(results, col).to_numpy(dtype=float), dtype=np.float64)


def _objects(results: pd.DataFrame, col: str) -> list[Any]:
    if col not in results:
        return [None] * len(results)
    return [None if (v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA) else v
            for v in results[col].astype("object").tolist()]


def launch_units(results: pd.DataFrame, rows: Sequence[int] | None = None) -> list[Units]:
    """Each launch record's measured unit percentages (:class:`analyzer.findings.bounds.Units`); with
    ``rows``, those rows' only (in that order)."""
    if rows is not None:
        results = results.iloc[list(rows)]
    busiest = _busiest(results)
    word, name = _objects(results, "top_unit_word"), _objects(results, "top_unit_name")
    side, level = _objects(results, "top_unit_side"), _objects(results, "top_unit_level")
    comp = _column(results, "sol_compute_pct")
    lv = {lvl: _column(results, f"sol_{lvl}_pct") for lvl in ("l1", "l2", "dram")}
    sol_c = _column(results, "sol_compute_pct")
    out = []
    for i in range(len(results)):
        b = float(busiest[i])
        s = side[i] if side[i] is not None else ("compute" if math.isfinite(sol_c[i]) and sol_c[i] >= b else None)
        if s is None and math.isfinite(b):
            s = "memory"
        out.append(Units(b, word[i], name[i] or ("SM (Compute (SM) Throughput)" if s == "compute" else None), s,
                         level[i], float(comp[i]), {k: float(v[i]) for k, v in lv.items()}))
    return out


def _busiest(results: pd.DataFrame) -> Floats:
    """``Units.busiest`` of every launch record: the busiest unit NCU measured, else its SOL %."""
    return np.fmax(_column(results, "busiest_pct"),
                   np.fmax(_column(results, "sol_compute_pct"), _column(results, "sol_memory_pct")))


def rule_claims(rules: Any, dur: float, gap: float, units: Units, grid: float) -> list[RuleClaim]:
    """NVIDIA's whole-kernel estimates of one launch, each bounded (docs/formulas.md#findings)."""
    out: list[RuleClaim] = []
    if not isinstance(rules, (list, tuple, np.ndarray)) or not math.isfinite(dur):
        return out
    for r in rules:
        if not isinstance(r, Mapping) or str(r.get("speedup_type") or "").lower() == "local":
            continue
        raw = r.get("speedup_pct")
        if not isinstance(raw, (int, float)) or isinstance(raw, bool) or not math.isfinite(raw) or raw <= 0:
            continue
        fix = rule_fix(r, grid)
        nv = dur * min(float(raw), 100.0) / 100.0
        bound = rule_bound(fix, dur, units)
        claim = nv if not math.isfinite(bound.seconds) else min(nv, bound.seconds)
        by_gap = fix.kind == PRESERVING and math.isfinite(gap) and gap < claim
        if by_gap:
            claim = gap  # the same work cannot beat the roofline either
        out.append(RuleClaim(r.get("rule"), r.get("title"), fix, nv, bound, claim, by_gap))
    return out


def launch_estimates(results: pd.DataFrame) -> LaunchEstimates:
    """The recoverable-time columns of every launch record of ``results`` (docs/formulas.md#findings)."""
    from rooftop.analyzer.kernels.families import launch_weights

    n = len(results)
    dur = _column(results, "duration_s") * launch_weights(results).to_numpy()
    ach, att = _column(results, "achieved_flops_s"), _column(results, "attainable_flops_s")
    with np.errstate(divide="ignore", invalid="ignore"):
        gap_frac = np.clip(1.0 - ach / att, 0.0, 1.0)
    gap = np.where(np.isfinite(gap_frac) & (att > 0) & np.isfinite(dur), dur * gap_frac, np.nan)
    # no FLOP roofline (0 FLOPs measured, or FLOPs unknown): the time its bytes need at the ceilings bounds
    # the same work (every level that moved bytes has a ceiling; docs/formulas.md#findings)
    weight = dur / np.where(_column(results, "duration_s") > 0, _column(results, "duration_s"), np.nan)
    bw_need = _column(results, "bw_time_s") * weight
    complete = results["bw_time_complete"].astype("object").eq(True).to_numpy() if "bw_time_complete" in results \
        else np.zeros(n, dtype=bool)
    bw_gap = np.where(complete & np.isfinite(bw_need) & np.isfinite(dur), np.clip(dur - bw_need, 0.0, None), np.nan)
    from_bw = ~np.isfinite(gap) & np.isfinite(bw_gap)
    gap = np.where(np.isfinite(gap), gap, bw_gap)
    # the busiest unit NCU measured at X % of its peak needs X % of the time with the same work
    busiest = _busiest(results)
    sol_cap = np.where(np.isfinite(busiest) & np.isfinite(dur), dur * np.clip(1.0 - busiest / 100.0, 0.0, 1.0), np.nan)
    gap_est = np.where(np.isfinite(gap) & np.isfinite(sol_cap), np.fmin(gap, sol_cap), gap)
    rules = results["ncu_rules"] if "ncu_rules" in results else pd.Series([None] * n, index=results.index)
    rule_lists = rules.tolist()
    grid = _column(results, "grid")
    # a launch's units are read only where it has NCU rules to bound (most raw-page launches have none)
    with_rules = [i for i, r in enumerate(rule_lists) if isinstance(r, (list, tuple, np.ndarray)) and len(r)]
    claims: list[list[RuleClaim]] = [[] for _ in range(n)]
    for i, u in zip(with_rules, launch_units(results, with_rules), strict=True):
        claims[i] = rule_claims(rule_lists[i], float(dur[i]), float(gap[i]), u, float(grid[i]))
    best: list[RuleBest] = []
    nv_raw, nv, nv_bound = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    nv_kind: list[str | None] = [None] * n
    for i, cs in enumerate(claims):
        counted = [c for c in cs if c.bound.counted]
        if not counted:
            best.append((None, None, None))
            continue
        c = max(counted, key=lambda c: c.claim_s)
        best.append((100.0 * c.claim_s / dur[i] if dur[i] > 0 else 0.0, c.rule, c.title))
        nv_raw[i], nv[i], nv_bound[i], nv_kind[i] = c.raw_s, c.claim_s, c.bound.seconds, c.fix.kind
    capped_nv = np.isfinite(nv_raw) & (nv < nv_raw)
    local = [best_rules(r, local=True) for r in rule_lists]
    roof_pct = _column(results, "pct_of_roof")
    # NCU's SOL % of the side the label names counts as the roof too (its >= 80 % "High Throughput")
    lab = results["label"].astype("object").to_numpy() if "label" in results else np.full(n, None, dtype=object)
    side = np.where(lab == "memory-bound", _column(results, "sol_memory_pct"),
                    np.where(lab == "compute-bound", _column(results, "sol_compute_pct"), np.nan))
    roof_pct = np.where(np.isfinite(side) & ~(roof_pct >= side), side, roof_pct)
    failed = results["profile_failed"].to_numpy(dtype=bool, na_value=False) if "profile_failed" in results else \
        np.zeros(n, dtype=bool)
    return LaunchEstimates(dur=dur, gap=gap, gap_bw=from_bw, gap_est=gap_est, sol_cap=sol_cap, nv_raw=nv_raw, nv=nv,
                           nv_bound=nv_bound, nv_kind=nv_kind, capped_nv=capped_nv, roof_pct=roof_pct, failed=failed,
                           best=best, claims=claims,
                           local=np.array([b[0] if b[0] is not None else np.nan for b in local], dtype=float))


def family_estimates(fams: pd.DataFrame, est: LaunchEstimates, pos_family: npt.NDArray[np.object_]) -> pd.DataFrame:
    """One row per family of ``fams`` (:func:`analyzer.kernels.families.family_table`) that has a launch not
    failed, with the family's columns and the sums of ``est`` over its launches (``pos_family`` names
    each launch's family): ``gap_s``, ``nv_s``, ``nv_raw_s``, their counts, the time-weighted ``roof_pct``,
    ``local_max``, then ``est``, ``share`` and ``score`` (docs/formulas.md#findings)."""
    ok_roof = np.isfinite(est.roof_pct) & np.isfinite(est.dur)
    has_nv = np.isfinite(est.nv)
    has_gap = np.isfinite(est.gap_est)
    frame = pd.DataFrame({"family": pos_family, "gap": est.gap_est, "sol_capped": est.gap_est < est.gap,
                          "nv": est.nv, "nv_raw": est.nv_raw, "capped": est.capped_nv,
                          # the physical bound each claimed saving respects (NaN: none stated for it)
                          "nv_bound": np.where(has_nv, est.nv_bound, np.nan),
                          "nv_unbounded": has_nv & ~np.isfinite(est.nv_bound),
                          "nv_removing": has_nv & (np.array(est.nv_kind, dtype=object) == REMOVING),
                          "gap_bound": np.where(has_gap, est.sol_cap, np.nan),
                          "gap_unbounded": has_gap & ~np.isfinite(est.sol_cap),
                          "gap_bw": has_gap & est.gap_bw,
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
    agg["bw_only"] = (groups["gap_bw"].sum().reindex(agg.index).fillna(0) == agg["n_gap"]) & (agg["n_gap"] > 0)
    for col in ("nv_bound", "gap_bound"):
        agg[col + "_s"] = groups[col].sum(min_count=1).reindex(agg.index)
    for col in ("nv_unbounded", "nv_removing", "gap_unbounded"):
        agg["n_" + col] = groups[col].sum().reindex(agg.index).fillna(0)
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
    # the physical bound the claimed saving respects, where every launch that adds to it states one
    nv_b = agg["nv_bound_s"].where(agg["n_nv_unbounded"] == 0)
    gap_b = agg["gap_bound_s"].where(agg["n_gap_unbounded"] == 0)
    agg["bound_s"] = np.where(agg["n_nv"] > 0, nv_b, np.where(agg["est"].notna(), gap_b, np.nan))
    agg["basis"] = np.where(agg["n_nv"] > 0,
                            np.where(agg["n_nv_removing"] == 0, "nvidia-preserving",
                                     np.where(agg["n_nv_removing"] == agg["n_nv"], "nvidia-removing", "nvidia-mixed")),
                            np.where(agg["est"].notna(), "roofline-gap", "none"))
    return agg
