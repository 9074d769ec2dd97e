"""``rooftop diff BEFORE AFTER`` of two timelines (nsys / Kineto), compared by what changed
(docs/formulas.md#timeline-diff): per device busy and idle time, idle by gap bucket and by cause,
kernel time per family, step time where steps exist; the largest change leads.

The gate is the diff's own (docs/formulas.md#diff, :mod:`analyzer.diff.gate`): the series are each
kernel family's launch durations on a device and, where both captures have them, the step times
(ProfilerStep#N) and repeated ranges. A series regresses when its median grows beyond the effect
threshold and, with enough repeats, the test says it is more than noise. Idle and kernel time sums
over a capture window are reported, not gated (a sum, not a test; without steps the windows may
hold different work). The work is in :mod:`analyzer.diff.timelines`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from rooftop.analyzer.diff import stats
from rooftop.analyzer.diff import timelines as tl
from rooftop.analyzer.diff.deltas import pct
from rooftop.analyzer.diff.gate import MIN_EFFECT_PCT, Gate
from rooftop.analyzer.diff.verdict import decided_counts, how_text, named, noise_text, test_text
from rooftop.analyzer.document import build_document
from rooftop.analyzer.schema import Document
from rooftop.analyzer.timeline import TimelineAnalysis, analyze_timelines
from rooftop.errors import InputError
from rooftop.parsers import open_input, parse_input
from rooftop.parsers.model import ParseResult, concat_frames

SIDES = tl.SIDES
DEVICE_FIELDS = ("kernels", "span_s", "kernel_sum_s", "kernel_busy_s", "gpu_busy_s", "idle_s", "idle_fraction")


def is_trace_pair(baseline: str, candidate: str) -> bool:
    """Both inputs are timelines (the registry's ``events`` kind)."""
    try:
        return all(open_input(p).format.kind == "events" for p in (baseline, candidate))
    except InputError:
        return False


def _device_rows(ta: list[TimelineAnalysis], extra: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    sides = [{str(e["device"]): e for e in a.timeline} for a in ta]
    out = []
    for device in sorted(set(sides[0]) | set(sides[1])):
        b, c = sides[0].get(device), sides[1].get(device)
        row: dict[str, Any] = {"device": device}
        for f in DEVICE_FIELDS:
            vb, vc = (b or {}).get(f), (c or {}).get(f)
            row[f] = {"baseline": vb, "candidate": vc,
                      "delta": None if vb is None or vc is None else round(vc - vb, 9)}
        row["gaps"] = {s: ((e or {}).get("gaps") or {}).get("count") for s, e in zip(SIDES, (b, c), strict=True)}
        row["label"] = {s: (e or {}).get("label") for s, e in zip(SIDES, (b, c), strict=True)}
        row.update(extra.get(device, {}))
        out.append(row)
    return out


def _totals(series: pd.DataFrame, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Kernel time summed over devices (what the per-device table adds up to), launches in families
    on both sides, and in families on one side only (docs/formulas.md#timeline-diff)."""
    def total(side: str) -> tuple[int, float | None]:
        vals = [r["kernel_sum_s"][side] for r in rows if r["kernel_sum_s"][side] is not None]
        n = [r["kernels"][side] for r in rows if r["kernels"][side] is not None]
        return int(sum(n)), (round(sum(vals), 9) if vals else None)

    (nb, tb), (nc, tc) = total("baseline"), total("candidate")
    k = series[series["kind"] == "kernel"] if len(series) else series
    both = k[(k["n_base"] > 0) & (k["n_cand"] > 0)] if len(k) else k
    new = k[k["n_base"] == 0] if len(k) else k
    gone = k[k["n_cand"] == 0] if len(k) else k

    def secs(frame: pd.DataFrame, col: str) -> float | None:
        return round(float(frame[col].fillna(0.0).sum()), 9) if len(frame) else 0.0

    return {
        "baseline": {"kernels": nb, "duration_s": tb},
        "candidate": {"kernels": nc, "duration_s": tc},
        "change": {"duration": _ratio(tb, tc)},
        "matched": {"launches": int(both["n_cand"].sum()) if len(both) else 0,
                    "baseline_s": secs(both, "time_base_s"), "candidate_s": secs(both, "time_cand_s"),
                    "change": _ratio(secs(both, "time_base_s"), secs(both, "time_cand_s")),
                    "families": len(both)},
        "new": {"launches": int(new["n_cand"].sum()) if len(new) else 0, "duration_s": secs(new, "time_cand_s")},
        "vanished": {"launches": int(gone["n_base"].sum()) if len(gone) else 0,
                     "duration_s": secs(gone, "time_base_s")},
    }


def _span_regressions(rows: list[dict[str, Any]], gate: Gate) -> list[dict[str, Any]]:
    """Devices whose span (the time of the same work) grew beyond the effect threshold."""
    out = []
    for r in rows:
        b, c = r["span_s"]["baseline"], r["span_s"]["candidate"]
        if b and c is not None and c / b - 1.0 > gate.threshold:
            out.append({"device": r["device"], "baseline_s": b, "candidate_s": c, "change": c / b - 1.0})
    return out


def _ratio(b: float | None, c: float | None) -> float | None:
    return None if not b or c is None else c / b - 1.0


def _verdict(series: pd.DataFrame, gate: Gate, alpha: float, changes: list[dict[str, Any]],
             rows: list[dict[str, Any]], throughput: tuple[str | None, str]) -> dict[str, Any]:
    """The gate over the kernel and step series (and the span when both captures hold the same
    work); the reason leads with the largest change."""
    s = series if len(series) else pd.DataFrame(columns=["status", "method", "n_base", "n_cand", "decided_by",
                                                        "significant", "delta_s", "change"])
    reg = s[s["status"] == "regressed"].sort_values(["delta_s", "change"], ascending=False)
    imp = s[s["status"] == "improved"].sort_values(["delta_s", "change"], ascending=True)
    tested = int((s["method"] == "mann-whitney").sum())
    compared = int(((s["n_base"] > 0) & (s["n_cand"] > 0)).sum())
    spans = _span_regressions(rows, gate) if throughput[0] == "span" else []
    fail = gate.fail_on is not None and (len(reg) > 0 or bool(spans))
    thr, how = gate.threshold_text(), how_text(tested, compared, alpha)
    span_text = "; ".join(f"GPU {x['device']} span {tl.ms(x['baseline_s'])} → {tl.ms(x['candidate_s'])} "
                          f"({pct(x['change'])}) for the same kernel launches" for x in spans)
    lead = [c["text"] for c in changes[:3] if c.get("delta")]
    what = ("Largest changes: " + "; ".join(lead) + ". ") if lead else ""
    heads = " ".join(tl.headline(r["device"], r) + "." for r in rows)
    if fail:
        judged = "; ".join(([f"{len(reg)} regression(s) beyond {thr}{gate.floor_note()}: {named(reg)}"] if len(reg)
                            else []) + ([f"slower beyond {thr}: {span_text}"] if spans else [])) + f". {how}."
    elif gate.fail_on is not None:
        judged = f"no kernel or step regression beyond {thr} that is more than noise{gate.floor_note()}. {how}."
    else:
        judged = (f"report only (no --fail-on): {len(reg)} regression(s), {len(imp)} improvement(s) beyond {thr}. "
                  f"{how}.")
    noise = noise_text(s, gate) if compared else ""
    reason = f"{what}{heads} {judged[0].upper()}{judged[1:]}" + (f" {noise[0].upper()}{noise[1:]}." if noise else "")
    reason += f" {throughput[1][0].upper()}{throughput[1][1:]}."
    if fail:
        what_failed = ([f"{len(reg)} regression(s)"] if len(reg) else []) + (
            [f"span of {len(spans)} GPU(s)"] if spans else [])
        summary = f"FAIL: {' and '.join(what_failed)} beyond {gate.effect_pct:g} %"
    elif gate.fail_on is not None:
        summary = f"ok: no regression beyond {gate.effect_pct:g} %"
    else:
        summary = f"report only: {len(reg)} regression(s), {len(imp)} improvement(s) beyond {gate.effect_pct:g} %"
    return {
        "fail": bool(fail), "summary": summary, **gate.fields(), "alpha": alpha,
        "test": test_text(tested, compared, alpha), "gate": "series",
        "decided_by": decided_counts(s),
        "regressions": tl.series_records(reg), "improvements": tl.series_records(imp),
        "reason": reason, "throughput_by": throughput[0], "span_regressions": spans,
    }


def _summary_only(a: TimelineAnalysis) -> bool:
    """An ``nsys stats`` summary: per-kernel totals, no launch on a time axis (docs/formulas.md#timelines)."""
    return bool(a.timeline) and all(e.get("span_s") is None for e in a.timeline)


def _summary_verdict(paths: list[str]) -> dict[str, Any]:
    """Nothing to gate when a side is a summary: no launch to test, no time axis for idle
    (docs/formulas.md#timeline-diff; docs/contract.md#ci)."""
    names = " and ".join(dict.fromkeys(paths))
    return {"fail": False, "summary": "summary-only input: no verdict", "regressions": [], "improvements": [],
            "throughput_by": None, "span_regressions": [],
            "reason": (f"Nothing to gate: {names} {'is' if len(set(paths)) == 1 else 'are'} summary-only "
                       "(nsys stats: per-kernel totals, no launch durations and no time axis), so no kernel can be "
                       "tested and no idle time compared; the total kernel time is reported, not gated. Diff the "
                       ".nsys-rep or its SQLite export (nsys export --type sqlite) instead.")}


def run_trace_diff(baseline: str, candidate: str, *, fail_on: float | None, command: str,
                   min_effect: float = MIN_EFFECT_PCT, alpha: float = stats.ALPHA) -> Document:
    """The ``diff`` document of two timelines."""
    gate = Gate(fail_on, min_effect)
    results: list[ParseResult] = [parse_input(open_input(p)) for p in (baseline, candidate)]
    ta = [analyze_timelines([r]) for r in results]
    samples = concat_frames([tl.kernel_samples(r.events, s) for r, s in zip(results, SIDES, strict=True)]
                            + [tl.step_samples(a.steps, s) for a, s in zip(ta, SIDES, strict=True)])
    series = tl.series_table(tl.repeated(samples), gate, alpha)
    parts = [tl.device_parts(a) for a in ta]
    extra = tl.device_changes(parts)
    rows = _device_rows(ta, extra)
    entries = [{d: p["entry"] for d, p in side.items()} for side in parts]
    changes = tl.ranked_changes({r["device"]: extra[r["device"]] for r in rows if r["device"] in extra}, series,
                                entries)
    throughput = tl.throughput(extra, series)
    verdict = _verdict(series, gate, alpha, changes, rows, throughput)
    summaries = [p for p, a in zip((baseline, candidate), ta, strict=True) if _summary_only(a)]
    if summaries:
        verdict.update(_summary_verdict(summaries))
    names = [{str(e["device"]) for e in a.timeline} for a in ta]
    lint = []
    if names[0] != names[1]:
        lint.append({"code": "timeline-diff-devices", "kernels": [], "side": "both",
                     "message": f"devices differ: baseline {sorted(names[0])}, candidate {sorted(names[1])}"})
    inputs = [{**r.accounting.as_dict(), "side": s} for r, s in zip(results, SIDES, strict=True)]
    rejected = [{**x.as_dict(), "side": s} for r, s in zip(results, SIDES, strict=True) for x in r.rejected]
    doc_extra = {
        "sides": {s: {"path": p, "source": r.accounting.format, "kernels": int((r.events["kind"] == "kernel").sum())}
                  for s, p, r in zip(SIDES, (baseline, candidate), results, strict=True)},
        "verdict": verdict, "totals": _totals(series, rows), "timeline_diff": rows,
        "timeline_changes": changes,
        "timeline_series": tl.series_records(series) if len(series) else [],
    }
    return build_document(kind="diff", inputs=inputs, rejected=rejected, devices=[], kernels=None,
                          findings=[], lint=lint, command=command, extra=doc_extra)
