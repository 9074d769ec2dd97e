"""Ranked findings: one per kernel family (the problem), ranked by what fixing it could save.

Rules in docs/formulas.md#findings: families from :func:`analyzer.kernels.families.family_table`
(invocation-weighted time); per launch the largest *whole-kernel* (``global``) NVIDIA estimate,
capped at rooftop's roofline gap, else the gap, else unknown (ranked by time share); severity from
the recoverable share of kernel time (>= 10 % high, >= 2 % medium), at most medium without an
estimate, with an unknown label or at >= 80 % of the roof; failed profiles get no finding.
DCGM window findings (``windows.findings``, contract shape) are merged and re-ranked with the
same severity-then-score order.

Modules: :mod:`.estimate` (recoverable time per launch and family), :mod:`.severity`,
:mod:`.text` (evidence and titles), :mod:`.recommendations` (advice per label and limiter).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from rooftop.analyzer.kernels.evidence import Facts

from rooftop.analyzer.findings.estimate import (
    RuleClaim,
    family_estimates,
    launch_estimates,
    total_time,
)
from rooftop.analyzer.findings.recommendations import UNKNOWN, recommendation, rule_id
from rooftop.analyzer.findings.severity import SEVERITY_ORDER, rank_families, severity
from rooftop.analyzer.findings.text import (
    estimate_text,
    kernel_evidence,
    missing_named,
    note_text,
    title,
    what_decides,
)

__all__ = ["kernel_findings", "rank_findings"]


def _rules_by_family(est_best: list[tuple[float | None, str | None, str | None]], nv: Any,
                     pos_family: Any, chosen: set[Any]) -> tuple[dict[Any, pd.DataFrame], pd.DataFrame]:
    """NVIDIA rules of the chosen families: one row per launch (family, rule, title, saving)."""
    rule_rows = [(pos_family[i], b[1] or "", b[2] or "", nv[i]) for i, b in enumerate(est_best)
                 if b[0] is not None and pos_family[i] in chosen]
    rule_df = pd.DataFrame(rule_rows, columns=["family", "rule", "title", "saving"])
    return {f: g for f, g in rule_df.groupby("family", sort=False)}, rule_df


# the representative launch's NCU facts the advice reads (docs/formulas.md#findings)
_REP_FACTS = ("pipe_name", "pipe_pct", "sol_compute_pct", "sol_memory_pct", "zero_flops", "bw_util_l1", "bw_util_l2",
              "bw_util_dram", "occupancy_achieved_pct", "occupancy_theoretical_pct", "occupancy_limiter",
              "registers_per_thread", "local_memory_ops", "block")


def _finding(fam: Any, row: pd.Series, fam_row: Mapping[str, Any], frules: pd.DataFrame,
             results: pd.DataFrame, k_ev: Any, total: float, claims: list[RuleClaim]) -> dict[str, Any]:
    """The contract finding of one family row (docs/contract.md), with its ``_score``."""
    from rooftop.analyzer.kernels.advice import advise

    label = str(row["label"] or "unknown")
    limiter = str(row["limiter"] or "unknown")
    # a family whose durations are not in the export has no share: unknown, never 0 % (docs/formulas.md#findings)
    share: float | None = float(row["time_s"]) / total if pd.notna(row["time_s"]) and total > 0 else None
    rep = results.iloc[int(row["representative"])]
    facts = {k: rep.get(k) for k in _REP_FACTS if k in results.columns}
    rec = advise(label, limiter, recommendation(label, limiter), {**facts, **dict(fam_row)},
                 float(row["roof_pct"]) if pd.notna(row["roof_pct"]) else math.nan)
    et = estimate_text(row, label, frules, results, claims)
    rule = f"ncu.{et.main_rule}" if et.main_rule else rule_id(label, limiter)
    rec += et.advice
    ev = et.evidence + note_text(row) + kernel_evidence(k_ev)
    if label == "unknown":
        missing = missing_named(k_ev)
        what = f"unknown ({', '.join(missing)} not in the export)" if missing else "unknown"
        decide = what_decides(missing, k_ev)
        if decide:
            ev.insert(0, f"what would decide it: {decide}")
            # the named metrics replace the generic "re-profile with --set full" advice
            rec = f"Bound unknown: {decide}." + ("" if rec == UNKNOWN else " " + rec)
    else:
        what = f"{label} ({limiter})"
    score = float(row["score"])
    return {
        "rank": 0, "rule": rule, "severity": severity(score, et.est is not None, bool(row["capped"])),
        "title": title(str(fam), what, share, round(float(row["launches"]))),
        "kernels": list(row["kernels"]), "time_share": share,
        "est_saving_s": et.est, "recommendation": rec,
        "saving_bound_s": _finite(row["bound_s"]) if et.est is not None else None,
        "saving_basis": str(row["basis"]) if et.est is not None else "none",
        "family": str(fam), "label": label, "limiter": limiter, "evidence": ev, "source": "ncu",
        "_score": score,
    }


def kernel_findings(results: pd.DataFrame, limit: int | None = None,
                    evidence: Facts | None = None, families: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """Findings, one per family of :func:`analyzer.kernels.families.family_table`, best first (at most
    ``limit``), each with a ``_score``. Per-launch savings are weighted by the launches a row
    stands for (``invocations``). Scores and order are computed for all families at once; dicts
    are built only for the kept ones. ``families``: ``family_table(results)`` when the caller has it.
    """
    from rooftop.analyzer.kernels.families import family_table

    n = len(results)
    if n == 0:
        return []
    est = launch_estimates(results)
    fams = family_table(results) if families is None else families.copy()
    pos_family = np.empty(n, dtype=object)
    for fam, ks in zip(fams["family"], fams["kernels"], strict=True):
        pos_family[ks] = fam
    agg = rank_families(family_estimates(fams, est, pos_family))
    if limit is not None:
        agg = agg.head(limit)
    rules_by_family, rule_df = _rules_by_family(est.best, est.nv, pos_family, set(agg.index))
    fam_rows = fams.set_index("family").to_dict("index")
    evidence_col = results["evidence"].tolist() if "evidence" in results else [None] * n
    if evidence is not None:  # the facts (analyzer.kernels.evidence.Facts): draw what is not drawn yet
        reps = [int(r) for r in agg["representative"] if evidence_col[int(r)] is None]
        for pos, sentences in evidence.sentences(reps).items():
            evidence_col[pos] = sentences
    total = total_time(est)
    return [_finding(fam, row, fam_rows.get(fam, {}), rules_by_family.get(fam, rule_df.iloc[:0]), results,
                     evidence_col[int(row["representative"])], total,
                     [c for k in row["kernels"] for c in est.claims[int(k)]])
            for fam, row in agg.iterrows()]


def _finite(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _window_score(f: Mapping[str, Any]) -> float:
    for key in ("score", "time_share"):
        v = f.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            return float(v)
    return 0.0


def rank_findings(results: pd.DataFrame, windows: Any, top: int = 10,
                  others: Sequence[Mapping[str, Any]] = (), evidence: Facts | None = None,
                  families: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """Contract findings (kernel families + DCGM windows + ``others``, e.g. a trace's own findings,
    each with a ``time_share`` or ``score``), ranked, at most ``top``; ``evidence``: the kernels'
    evidence facts, for a representative launch whose sentences ``results`` does not hold; ``families``:
    ``family_table(results)`` when the caller has it (computed once for the findings and the roofline view).

    When both kernel and other findings exist, each keeps at least ``top // 3`` slots if it has that many.
    """
    kf = kernel_findings(results, limit=max(int(top), 0), evidence=evidence, families=families) \
        if results is not None and len(results) else []
    wf = []
    for f in [*list(getattr(windows, "findings", None) or []), *others]:
        g = dict(f)
        g.setdefault("source", "dcgm")
        g["_score"] = _window_score(g)
        wf.append(g)

    def order(f: Mapping[str, Any]) -> tuple[int, float]:
        return (SEVERITY_ORDER.get(str(f.get("severity")), 2), -float(f["_score"]))

    kf.sort(key=order)
    wf.sort(key=order)
    top = max(int(top), 0)
    if kf and wf:
        floor = top // 3
        keep_w = max(min(len(wf), floor), top - len(kf))
        keep_k = max(min(len(kf), floor), top - keep_w)
        chosen = kf[:keep_k] + wf[:min(keep_w, top - min(keep_k, len(kf)))]
    else:
        chosen = (kf or wf)[:top]
    chosen.sort(key=order)
    out = []
    for rank, f in enumerate(chosen[:top], start=1):
        g = {k: v for k, v in f.items() if k != "_score"}
        g["rank"] = rank
        out.append(g)
    return out
