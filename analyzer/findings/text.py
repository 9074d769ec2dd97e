"""The words of a kernel finding: evidence, title, NVIDIA's rule text and what would decide an
unknown bound (docs/formulas.md#findings). Pure functions of a family row of
:func:`analyzer.findings.estimate.family_estimates`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.findings.bounds import PRESERVING, RuleFix
from rooftop.analyzer.findings.estimate import RuleClaim
from rooftop.analyzer.findings.severity import ROOF_HIGH

QUOTE_CHARS = 400
"""NVIDIA's rule text is quoted up to this many characters (then cut at a word, with …)."""
_NOT_EVALUATED = "Not in the export, so not evaluated: "
_DECIDES = {  # what a missing input needs (docs/formulas.md#findings)
    "SpeedOfLight %": "--section SpeedOfLight (sm__throughput, gpu__compute_memory_throughput)",
    "L1 bytes": "the L1 bytes (--section SpeedOfLight_HierarchicalSingleRooflineChart, or l1tex__t_bytes)",
    "L2 bytes": "the L2 bytes (--section SpeedOfLight_HierarchicalSingleRooflineChart, or lts__t_bytes)",
    "DRAM bytes": "dram__bytes (--section SpeedOfLight_RooflineChart)",
    "FLOP counters": "the FLOP counters (--section SpeedOfLight_RooflineChart)",
    "tensor FLOPs": "sm__ops_path_tensor_* (--section SpeedOfLight_HierarchicalTensorRooflineChart)",
    "duration": "gpu__time_duration",
}


def fmt_s(s: float) -> str:
    """Seconds with three significant digits in s, ms, µs or ns."""
    for f, u in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(s) >= f:
            return f"{s / f:.3g} {u}"
    return f"{s * 1e9:.3g} ns"


def rule_message(results: pd.DataFrame, kernels: Any, rule: Any, title: Any = None) -> str:
    """NVIDIA's text for ``rule`` (and ``title``: console logs name no rule, so the title tells each
    message's own rule) on the first of ``kernels`` that has it ('' when none does)."""
    if "ncu_rules" not in results or not isinstance(rule, str):
        return ""
    col = results["ncu_rules"]
    for k in list(kernels):
        for r in col.iloc[int(k)] if isinstance(col.iloc[int(k)], (list, tuple)) else []:
            if isinstance(r, Mapping) and r.get("rule") == rule and r.get("message") and \
                    (not isinstance(title, str) or not title or r.get("title") == title):
                text = str(r["message"])
                return text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS].rsplit(" ", 1)[0] + " …"
    return ""


@dataclass
class EstimateText:
    """A family's estimated saving with the evidence and advice it adds (docs/formulas.md#findings)."""

    est: float | None
    evidence: list[str] = field(default_factory=list)
    advice: str = ""  # appended to the recommendation
    main_rule: str | None = None  # NVIDIA's rule with the largest summed saving


def _short(title: str) -> str:
    """A rule title of at most 60 characters (console logs give NVIDIA's first sentence as the title)."""
    return title if len(title) <= 60 else title[:60].rsplit(" ", 1)[0] + " …"


def _rule_name(title: str, fix: RuleFix) -> str:
    """A rule's title, or what its fix is where the title is a whole sentence (console logs)."""
    return title if len(title) <= 60 else f"{fix.what[:1].upper()}{fix.what[1:]} ({title[:40].rsplit(' ', 1)[0]} …)"


def _claim_lines(claims: list[RuleClaim]) -> tuple[list[str], list[str]]:
    """Per NVIDIA rule (title) of the family: the counted ones, with NVIDIA's estimate and the physical
    bound that limits it, and the ones not counted because their fix works on a unit that does not bind
    (docs/formulas.md#findings). Sums over launches; the bound's reason from the longest launch."""
    by: dict[tuple[str, bool], list[RuleClaim]] = {}
    for c in claims:
        by.setdefault((str(c.title or c.rule or "NVIDIA rule"), c.bound.counted), []).append(c)
    counted, other = [], []
    for (title, ok), cs in sorted(by.items(), key=lambda kv: -sum(c.raw_s for c in kv[1])):
        raw = sum(c.raw_s for c in cs)
        rep = max(cs, key=lambda c: c.raw_s)
        kind = "keeps the work" if rep.fix.kind == PRESERVING else "removes work"
        caveat = rep.fix.caveat or ""
        if ok:
            bounds = [c.bound.seconds for c in cs]
            claim = sum(c.claim_s for c in cs)
            why = [f"{rep.bound.text}{caveat}"]
            if all(math.isfinite(b) for b in bounds):
                why[0] = f"physical bound {fmt_s(sum(bounds))}: " + why[0]
            if any(c.gap_capped for c in cs):
                why.append("capped at rooftop's roofline bound (the time above the roof at today's intensity)")
            counted.append(f"{_rule_name(title, rep.fix)} ({rep.fix.what}, a fix that {kind}): NVIDIA estimates "
                           f"{fmt_s(raw)}, counted {fmt_s(claim)}; " + "; ".join(why) + " (docs/formulas.md#findings)")
        else:
            other.append(f"NVIDIA's estimate for {_rule_name(title, rep.fix)} ({rep.fix.what}): {fmt_s(raw)}, not counted as the saving: "
                         f"{rep.bound.text}, so at most {fmt_s(sum(c.bound.seconds for c in cs))} "
                         "(docs/formulas.md#findings)")
    return counted, other


def _nvidia_text(row: Mapping[str, Any], frules: pd.DataFrame, results: pd.DataFrame,
                 claims: list[RuleClaim]) -> EstimateText:
    """NVIDIA's summed whole-kernel estimate: its three largest rules, their bounds, the rules not
    counted, the gap, the main rule's text."""
    out = EstimateText(est=float(row["nv_s"]))
    top_rules = frules.groupby(["rule", "title"])["saving"].sum().sort_values(ascending=False).head(3)
    names = [f"{_short(t) if isinstance(t, str) and t else r} (~{fmt_s(s)})" for (r, t), s in top_rules.items()]
    if len(top_rules):
        main_rule = top_rules.index[0][0]
        if isinstance(main_rule, str) and main_rule:
            out.main_rule = main_rule
    out.evidence.append(f"NVIDIA rules (largest counted whole-kernel estimate per launch): {', '.join(names)}")
    counted, other = _claim_lines(claims)
    out.evidence += counted[:3] + other[:3]
    if row["n_gap"] > 0:
        out.evidence.append(f"roofline gap at today's intensity: {fmt_s(float(row['gap_s']))} (bounds the fixes that "
                            "keep the work)")
    if len(top_rules):
        out.advice = " NVIDIA's rules for these launches: " + "; ".join(
            _short(t) if isinstance(t, str) and t else str(r) for (r, t) in top_rules.index) + "."
        quote = rule_message(results, row["kernels"], top_rules.index[0][0], top_rules.index[0][1])
        if quote:
            out.advice += f" NVIDIA's rule text: “{quote}”"
    out.evidence.insert(0, f"estimated saving {fmt_s(float(row['nv_s']))} from NVIDIA's estimated speedup, each "
                        "rule's estimate bounded by what its fix can physically save")
    return out


def _gap_text(row: Mapping[str, Any]) -> EstimateText:
    """The roofline gap as the estimate, with its SpeedOfLight caps and the launches that add nothing."""
    out = EstimateText(est=float(row["gap_s"]))
    if row["n_sol_capped"] > 0:
        out.evidence.append(
            f"capped in {int(row['n_sol_capped'])} launch record(s) at duration × (1 − NCU's busier "
            "SpeedOfLight % / 100): the busiest unit cannot run above its peak (docs/formulas.md#findings)")
    if row["n_gap"] < row["rows"]:
        out.evidence.append(f"{int(row['rows'] - row['n_gap'])} of {int(row['rows'])} launch records lack "
                            "achieved or attainable FLOP/s and add no saving")
    basis = ("the roofline gap, duration × (1 − achieved/attainable), an upper bound" if not row.get("bw_only")
             else "the bandwidth gap, duration − the time its bytes need at the ceilings (max over levels of "
                  "bytes / bandwidth), an upper bound for the same bytes")
    out.evidence.insert(0, f"estimated saving {fmt_s(float(row['gap_s']))} from {basis}")
    return out


def estimate_text(row: Mapping[str, Any], label: str, frules: pd.DataFrame, results: pd.DataFrame,
                  claims: list[RuleClaim] | None = None) -> EstimateText:
    """The estimate a family claims and why: NVIDIA's, else the roofline gap (not for an unknown
    label), else none, ranked by time share (docs/formulas.md#findings). ``claims``: NVIDIA's bounded
    rule estimates of the family's launches."""
    claims = claims or []
    if row["n_nv"] > 0:
        return _nvidia_text(row, frules, results, claims)
    _, other = _claim_lines(claims)
    if row["n_gap"] > 0 and label == "unknown":
        return EstimateText(est=None, evidence=[
            f"no saving claimed: the roofline gap at the measured levels ({fmt_s(float(row['gap_s']))}) is no "
            "estimate while the bound is unknown, since an unmeasured level may bind lower (less would be "
            "recoverable) and NVIDIA gives no whole-kernel estimate; severity from the time share, at most medium "
            "(docs/formulas.md#findings)", *other[:3]])
    if row["n_gap"] > 0:
        out = _gap_text(row)
        out.evidence += other[:3]
        return out
    return EstimateText(est=None, evidence=[
        "no attainable FLOP/s (no device ceiling or FLOP counts), no complete bandwidth bound (a level that moved "
        "bytes has no ceiling, or no bytes) and no NVIDIA speedup estimate: ranked by share of GPU time only",
        *other[:3]])


def note_text(row: Mapping[str, Any]) -> list[str]:
    """Notes on what does not count: NVIDIA's local estimates, and a roof already >= ROOF_HIGH %."""
    notes: list[str] = []
    if pd.notna(row["local_max"]):
        notes.append(f"NVIDIA's local estimates (up to {float(row['local_max']):.1f} % of one unit or pipe) are "
                     "not whole-kernel savings and are not counted (docs/formulas.md#findings)")
    if pd.notna(row["roof_pct"]) and row["roof_pct"] >= ROOF_HIGH:
        notes.append(f"already at {float(row['roof_pct']):.0f} % of its roof (rooftop's roofline, or NCU's "
                     f"SpeedOfLight % of the side its label names; >= {ROOF_HIGH:.0f} %): severity at most medium "
                     "(docs/formulas.md#findings)")
    return notes


_LAUNCH_FACTS = "NCU launch facts: "


def kernel_evidence(k_ev: Any) -> list[str]:
    """The first four evidence lines of the family's representative launch, and its NCU launch facts
    (occupancy, registers, shared memory, waves, local memory) where they come later: every finding
    shows NCU's facts beside its verdict (docs/formulas.md#kernel-labels)."""
    if not isinstance(k_ev, (list, tuple, np.ndarray)):
        return []
    lines = [str(e) for e in k_ev]
    return lines[:4] + [e for e in lines[4:] if e.startswith(_LAUNCH_FACTS)]


def missing_named(k_ev: Any) -> list[str]:
    """The inputs a kernel's evidence names as not in the export."""
    if not isinstance(k_ev, (list, tuple, np.ndarray)):
        return []
    for e in k_ev:
        if isinstance(e, str) and e.startswith(_NOT_EVALUATED):
            return [w.strip() for w in e[len(_NOT_EVALUATED):].split(",") if w.strip()]
    return []


def what_decides(missing: list[str], k_ev: Any) -> str:
    """The collection (and ``--device``) that would decide an unknown bound, in words."""
    parts = [_DECIDES[m] for m in missing if m in _DECIDES]
    texts = [str(e) for e in k_ev] if isinstance(k_ev, (list, tuple, np.ndarray)) else []
    out = ["collect " + ", ".join(parts)] if parts else []
    if any("pass --device NAME" in t or "pass `--device NAME`" in t for t in texts):
        out.append("pass --device NAME (the ceilings)")
    return "; ".join(out)


def short(family: str) -> str:
    """The family's display name, at most 90 characters."""
    from rooftop.analyzer.kernels.families import display_name

    return display_name(family, 90)


def title(family: str, what: str, share: float | None, launches: int) -> str:
    """``<family>: <label (limiter)>, <share>% of kernel time in <n> launch(es)`` (``duration unknown``
    where the export has no duration)."""
    part = f"{share * 100:.1f}% of kernel time" if share is not None else "duration unknown"
    return f"{short(family)}: {what}, {part} in {launches} launch(es)"
