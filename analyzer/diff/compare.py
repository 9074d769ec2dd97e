"""The whole comparison of two flat kernel-result frames, and the side totals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from rooftop.analyzer.diff import stats
from rooftop.analyzer.diff.deltas import group_deltas, pair_deltas
from rooftop.analyzer.diff.gate import MIN_EFFECT_PCT, Gate
from rooftop.analyzer.diff.match import LEVELS, Matched, identify, match_kernels
from rooftop.analyzer.diff.verdict import GATES, series_table, verdict
from rooftop.errors import InputError


@dataclass
class DiffResult:
    """Everything :func:`compare` finds, as frames (rendered into the document by :func:`diff_payload`)."""

    baseline: pd.DataFrame
    candidate: pd.DataFrame
    pairs: pd.DataFrame
    new: pd.DataFrame
    vanished: pd.DataFrame
    families: pd.DataFrame
    series: pd.DataFrame
    totals: dict[str, Any]
    verdict: dict[str, Any]


def compare(baseline: pd.DataFrame, candidate: pd.DataFrame, *, fail_on: float | None,
            alpha: float = stats.ALPHA, gate: str = "total", min_effect: float = MIN_EFFECT_PCT) -> DiffResult:
    """Pure core: two flat kernel-result frames in, the whole comparison out. ``gate``:
    ``total`` (matched series and total kernel time) or ``matched``; ``min_effect``: the effect
    floor in % (docs/formulas.md#diff)."""
    if gate not in GATES:
        raise InputError("--gate", f"unknown gate {gate!r}", f"use one of {', '.join(GATES)}")
    threshold = Gate(fail_on, min_effect).threshold
    m = match_kernels(identify(baseline), identify(candidate))
    b, c = m.baseline, m.candidate
    pairs = pair_deltas(m.pairs)
    families = group_deltas(pairs, by="family")
    series = series_table(b, c, m.pairs, threshold, alpha)
    fam_status = _family_status(series)
    families["status"] = families["family"].map(fam_status).fillna("within threshold")
    tot = totals(b, c, m)
    gate_total = {"change": tot["change"]["duration"], "baseline_s": tot["baseline"]["duration_s"],
                  "candidate_s": tot["candidate"]["duration_s"],
                  "new": _by_family(m.new), "vanished": _by_family(m.vanished)}
    return DiffResult(
        baseline=b, candidate=c, pairs=pairs, new=m.new, vanished=m.vanished, families=families,
        series=series, totals=tot,
        verdict=verdict(series, fail_on, alpha, total=gate_total, gate=gate, min_effect=min_effect,
                        matched=len(m.pairs), metrics=matched_metrics(m.pairs)),
    )


_METRICS = {"duration": ["duration_s"], "FLOPs": ["flops"], "bytes": [f"bytes_{lv}" for lv in LEVELS]}


def matched_metrics(pairs: pd.DataFrame) -> dict[str, list[str]]:
    """Per side, the metrics (duration, FLOPs, bytes) that at least one matched launch carries."""
    out: dict[str, list[str]] = {}
    for side, suf in (("baseline", "_base"), ("candidate", "_cand")):
        out[side] = [name for name, cols in _METRICS.items()
                     if any(f"{c}{suf}" in pairs.columns and pd.to_numeric(pairs[f"{c}{suf}"], errors="coerce").notna().any()
                            for c in cols)]
    return out


def _by_family(frame: pd.DataFrame) -> list[tuple[str, float]]:
    """(family, total seconds) of unmatched launches, longest first."""
    if not len(frame) or "duration_s" not in frame.columns:
        return []
    fam = frame["family"] if "family" in frame.columns else frame.get("name")
    d = pd.to_numeric(frame["duration_s"], errors="coerce").fillna(0.0)
    s = d.groupby(fam.astype(str), sort=False).sum().sort_values(ascending=False, kind="stable")
    return [(str(k), float(v)) for k, v in s.items()]


_STATUS_ORDER = ["regressed", "improved", "not significant", "within threshold", "no duration", "unmatched"]


def _family_status(series: pd.DataFrame) -> pd.Series:
    """Worst series status per family (regressed before improved before the rest)."""
    if not len(series):
        return pd.Series(dtype=object)
    rank = series["status"].map({s: i for i, s in enumerate(_STATUS_ORDER)})
    best = series.assign(_r=rank).sort_values("_r", kind="stable").drop_duplicates("family")
    return best.set_index("family")["status"]


def _side_totals(frame: pd.DataFrame) -> dict[str, Any]:
    def total(col: str) -> float | None:
        if col not in frame.columns:
            return None
        v = pd.to_numeric(frame[col], errors="coerce")
        return float(v.sum()) if v.notna().any() else None

    dur, flops = total("duration_s"), total("flops")
    out: dict[str, Any] = {"kernels": len(frame), "duration_s": dur, "flops": flops,
                           "bytes": {lv: total(f"bytes_{lv}") for lv in LEVELS}}
    out["achieved_flops_s"] = flops / dur if flops is not None and dur else None
    out["intensity"] = {lv: (flops / b if flops is not None and b else None)
                        for lv, b in out["bytes"].items()}
    return out


def _one_side(pairs: pd.DataFrame, suffix: str) -> pd.DataFrame:
    """The ``<col><suffix>`` columns of a pairs frame, renamed ``<col>``."""
    cols = [c for c in pairs.columns if c.endswith(suffix)]
    return pairs[cols].rename(columns=lambda c: c[: -len(suffix)])


def totals(baseline: pd.DataFrame, candidate: pd.DataFrame, m: Matched) -> dict[str, Any]:
    """Time-weighted totals of both runs, of the matched launches, and of new/vanished launches."""
    tb, tc = _side_totals(baseline), _side_totals(candidate)

    def ch(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None or a == 0 else b / a - 1.0

    mb, mc = _side_totals(_one_side(m.pairs, "_base")), _side_totals(_one_side(m.pairs, "_cand"))
    return {
        "baseline": tb,
        "candidate": tc,
        "change": {
            "duration": ch(tb["duration_s"], tc["duration_s"]),
            "achieved_flops_s": ch(tb["achieved_flops_s"], tc["achieved_flops_s"]),
            "flops": ch(tb["flops"], tc["flops"]),
            "bytes": {lv: ch(tb["bytes"][lv], tc["bytes"][lv]) for lv in LEVELS},
        },
        "matched": {
            "launches": len(m.pairs),
            "baseline_s": mb["duration_s"],
            "candidate_s": mc["duration_s"],
            "change": ch(mb["duration_s"], mc["duration_s"]),
        },
        "new": {"launches": len(m.new), "duration_s": _side_totals(m.new)["duration_s"]},
        "vanished": {"launches": len(m.vanished), "duration_s": _side_totals(m.vanished)["duration_s"]},
    }
