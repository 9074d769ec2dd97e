"""``rooftop diff BEFORE AFTER`` of two timelines (nsys / Kineto): per device the idle fraction,
gaps and kernel time, and the matched kernels, with the diff's noise-aware gate
(docs/formulas.md#timeline-diff; the gate: analyzer/diff/stats.py, docs/formulas.md#diff).

Series compared with Mann-Whitney U + Holm (``stats.compare_series``): every kernel name on a
device (its launch durations on each side) and the device's idle gaps (their lengths). A series
regresses when its median grows by more than ``--fail-on`` % and the test says it is not noise;
a series tested only by threshold (too few samples) is reported, never failed on.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.diff import stats
from rooftop.analyzer.document import build_document
from rooftop.analyzer.timeline import TimelineAnalysis, analyze_timelines
from rooftop.analyzer.timeline.metrics import GPU_KINDS
from rooftop.errors import InputError
from rooftop.parsers import ParseResult, open_input, parse_input

SIDES = ("baseline", "candidate")
DEVICE_FIELDS = ("kernels", "span_s", "kernel_sum_s", "kernel_busy_s", "gpu_busy_s", "idle_s", "idle_fraction")
GAPS = "(idle gaps)"


def is_trace_pair(baseline: str, candidate: str) -> bool:
    """Both inputs are timelines (the registry's ``events`` kind)."""
    try:
        return all(open_input(p).format.kind == "events" for p in (baseline, candidate))
    except InputError:
        return False


def _durations(r: ParseResult, side: str) -> pd.DataFrame:
    """Per launch ``series`` = ``device · name``, plus one ``device · (idle gaps)`` row per gap."""
    ev = r.events
    act = ev[ev["kind"].isin(GPU_KINDS).fillna(False)]
    k = act[act["kind"] == "kernel"]
    rows = [pd.DataFrame({"series": k["device"].astype(str) + " · " + k["name"].astype(str),
                          "side": side, "duration_s": (k["end_ns"] - k["start_ns"]).to_numpy() / 1e9})]
    for device, g in act.groupby("device"):
        from rooftop.analyzer.timeline.metrics import union

        gaps = union(g["start_ns"].to_numpy(np.int64), g["end_ns"].to_numpy(np.int64)).gaps
        rows.append(pd.DataFrame({"series": f"{device} · {GAPS}", "side": side, "duration_s": gaps / 1e9}))
    return pd.concat(rows, ignore_index=True)


def _device_rows(ta: list[TimelineAnalysis]) -> list[dict[str, Any]]:
    sides = [{str(e["device"]): e for e in a.timeline} for a in ta]
    out = []
    for device in sorted(set(sides[0]) | set(sides[1])):
        b, c = sides[0].get(device), sides[1].get(device)
        row: dict[str, Any] = {"device": device}
        for f in DEVICE_FIELDS:
            vb, vc = (b or {}).get(f), (c or {}).get(f)
            row[f] = {"baseline": vb, "candidate": vc,
                      "delta": None if vb is None or vc is None else round(vc - vb, 9)}
        row["gaps"] = {s: (e or {}).get("gaps", {}).get("count") if e else None for s, e in zip(SIDES, (b, c), strict=True)}
        row["label"] = {s: (e or {}).get("label") for s, e in zip(SIDES, (b, c), strict=True)}
        out.append(row)
    return out


def _series_records(table: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for name, r in table.iterrows():
        dev, what = str(name).split(" · ", 1)
        out.append({"device": dev, "series": what, "n_base": int(r.n_base), "n_cand": int(r.n_cand),
                    "median_base_s": _f(r.median_base_s), "median_cand_s": _f(r.median_cand_s),
                    "change": _f(r.change), "method": r.method, "p_adjusted": _f(r.p_adjusted),
                    "significant": bool(r.significant)})
    return out


def _f(v: Any) -> float | None:
    return float(v) if v is not None and math.isfinite(float(v)) else None


def _verdict(series: list[dict[str, Any]], fail_on: float | None) -> dict[str, Any]:
    thr = fail_on if fail_on is not None else 0.0
    moved = [s for s in series if s["significant"] and s["change"] is not None]
    reg = [s for s in moved if s["change"] * 100 > thr]
    imp = [s for s in moved if s["change"] * 100 < -thr]
    fail = fail_on is not None and bool(reg)
    reason = (f"{len(reg)} series slower by more than {thr:g}% and beyond noise "
              f"({stats.TEST_NAME}, alpha {stats.ALPHA})" if reg else "no significant regression")
    return {"fail": fail, "threshold_pct": thr, "regressions": reg, "improvements": imp, "reason": reason,
            "alpha": stats.ALPHA, "test": stats.TEST_NAME}


def run_trace_diff(baseline: str, candidate: str, *, fail_on: float | None, command: str) -> dict[str, Any]:
    """The ``diff`` document of two timelines."""
    results = [parse_input(open_input(p)) for p in (baseline, candidate)]
    ta = [analyze_timelines([r]) for r in results]
    durations = pd.concat([_durations(r, s) for r, s in zip(results, SIDES, strict=True)], ignore_index=True)
    table = stats.compare_series(durations) if len(durations) else pd.DataFrame()
    series = _series_records(table) if len(table) else []
    verdict = _verdict(series, fail_on)
    names = [{str(e["device"]) for e in a.timeline} for a in ta]
    lint = []
    if names[0] != names[1]:
        lint.append({"code": "timeline-diff-devices", "kernels": [], "side": "both",
                     "message": f"devices differ: baseline {sorted(names[0])}, candidate {sorted(names[1])}"})
    inputs = [{**r.accounting.as_dict(), "side": s} for r, s in zip(results, SIDES, strict=True)]
    rejected = [{**x.as_dict(), "side": s} for r, s in zip(results, SIDES, strict=True) for x in r.rejected]
    extra = {"sides": {s: {"path": p, "source": r.accounting.format, "kernels": int((r.events["kind"] == "kernel").sum())}
                       for s, p, r in zip(SIDES, (baseline, candidate), results, strict=True)},
             "verdict": verdict, "timeline_diff": _device_rows(ta), "timeline_series": series}
    return build_document(kind="diff", inputs=inputs, rejected=rejected, devices=[], kernels=None,
                          findings=[], lint=lint, command=command, extra=extra)
