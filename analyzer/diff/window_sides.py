"""Reading a side of windows (a DCGM stream analysed now, or a saved ``analyze``/``fleet`` document)
and the whole ``diff`` of two such sides (docs/formulas.md#windows-diff)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from rooftop.analyzer.diff import stats
from rooftop.analyzer.diff import windows as wd
from rooftop.analyzer.diff.gate import MIN_EFFECT_PCT, Gate
from rooftop.analyzer.diff.saved import read_document
from rooftop.analyzer.diff.verdict import decided_counts, how_text, noise_text, test_text
from rooftop.analyzer.document import build_document
from rooftop.analyzer.schema import Document
from rooftop.errors import InputError

SIDES = wd.SIDES


@dataclass
class WindowSide:
    """One side: its windows (contract records) and what the document lists about its inputs."""

    path: str
    source: str  # "dcgm" (a stream analysed now), "analysis" or "fleet" (a saved document)
    windows: list[dict[str, Any]]
    inputs: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    lint: list[dict[str, Any]] = field(default_factory=list)
    period: dict[str, Any] | None = None
    by: list[str] = field(default_factory=list)  # a fleet's --by keys: its owners


def window_side(path: str) -> WindowSide | None:
    """``path`` as a side of windows, or None when it is not one (kernels or a timeline)."""
    p = Path(path)
    if not p.is_file():
        return None
    doc = read_document(p)
    if doc is not None:
        windows = [w for w in doc.get("windows") or [] if isinstance(w, dict)]
        kind = doc.get("kind", "analyze")
        if kind == "fleet" or (kind == "analyze" and windows and not doc.get("kernels")):
            lint = list(doc.get("lint") or [])
            fleet = doc.get("fleet") if isinstance(doc.get("fleet"), dict) else {}
            total = (fleet or {}).get("windows_total")
            if isinstance(total, int) and total > len(windows):
                lint.append({"code": "diff-windows-capped", "kernels": [],
                             "message": f"{path} lists {len(windows)} of its {total} windows: the comparison "
                                        "covers the listed ones only"})
            return WindowSide(path=path, source="fleet" if kind == "fleet" else "analysis", windows=windows,
                              inputs=[{"path": path, "format": "rooftop-json", "records": len(windows),
                                       "missing": 0, "rejected": 0}],
                              rejected=list(doc.get("rejected") or []), lint=lint,
                              period=(fleet or {}).get("period"),
                              by=[str(b) for b in (fleet or {}).get("by") or []])
        return None
    from rooftop.parsers import open_input

    try:
        if open_input(path).format.kind != "samples":
            return None
    except InputError:
        return None
    from rooftop.analyzer.pipeline import run_analysis

    a: Mapping[str, Any] = run_analysis([path])
    return WindowSide(path=path, source="dcgm", windows=list(a.get("windows") or []), inputs=list(a["inputs"]),
                      rejected=list(a["rejected"]), lint=list(a.get("lint") or []))


def _windowless_text(paths: list[str]) -> str:
    """Why nothing is gated when a capture holds no window (docs/formulas.md#windows-diff)."""
    return (f"nothing to gate: {' and '.join(paths)} {'hold' if len(paths) > 1 else 'holds'} no DCGM window: "
            "no sample carries a field a window "
            "averages (SM, GR-engine, tensor or DRAM activity, GPU utilisation, power, memory used; "
            "docs/formulas.md#windows), so no owner has an efficiency to compare. Collect "
            "DCGM_FI_PROF_SM_ACTIVE (or DCGM_FI_PROF_GR_ENGINE_ACTIVE) in both captures.")


def _verdict(table: pd.DataFrame, hs: dict[str, Any], gate: Gate, alpha: float,
             windowless: list[str] | None = None) -> dict[str, Any]:
    empty = pd.DataFrame(columns=["status", "method", "n_base", "n_cand", "decided_by", "significant", "change",
                                  "short_name", "series"])
    t = table if len(table) else empty
    reg = t[t["status"] == "regressed"].sort_values("change", kind="stable")
    imp = t[t["status"] == "improved"].sort_values("change", ascending=False, kind="stable")
    tested = int((t["method"] == "mann-whitney").sum())
    compared = int(((t["n_base"] > 0) & (t["n_cand"] > 0)).sum())
    fail = gate.fail_on is not None and len(reg) > 0
    thr, how = gate.threshold_text(), how_text(tested, compared, alpha, "owners")
    if windowless:
        judged = _windowless_text(windowless)
    elif not compared:
        judged = ("nothing to gate: no owner has windows with SM activity, GR-engine activity or GPU utilisation "
                  "on both sides (collect DCGM_FI_PROF_SM_ACTIVE in both).")
    elif fail:
        judged = f"{len(reg)} owner(s) less efficient beyond {thr}{gate.floor_note()}: {wd.owner_text(reg)}. {how}."
    elif gate.fail_on is not None:
        judged = f"no owner less efficient beyond {thr} that is more than noise{gate.floor_note()}. {how}."
    else:
        judged = (f"report only (no --fail-on): {len(reg)} owner(s) less and {len(imp)} more efficient beyond "
                  f"{thr}. {how}.")
    noise = noise_text(t, gate, "owners") if compared else ""
    reason = (f"{judged[0].upper()}{judged[1:]}" + (f" {noise[0].upper()}{noise[1:]}." if noise else "")
              + f" {wd.shares_text(hs)} (GPU-hours and label shares are sums: reported, not gated).")
    if fail:
        summary = f"FAIL: {len(reg)} owner(s) less efficient beyond {gate.effect_pct:g} %"
    elif not compared:
        summary = "no efficiency on both sides: no verdict"
    elif gate.fail_on is not None:
        summary = f"ok: no owner less efficient beyond {gate.effect_pct:g} %"
    else:
        summary = f"report only: {len(reg)} less, {len(imp)} more efficient beyond {gate.effect_pct:g} %"
    return {"fail": bool(fail), "summary": summary, **gate.fields(), "alpha": alpha,
            "test": test_text(tested, compared, alpha, "owners"), "gate": "owners", "decided_by": decided_counts(t),
            "regressions": wd.owner_records(reg), "improvements": wd.owner_records(imp), "reason": reason}


def run_windows_diff(sides: list[WindowSide], *, fail_on: float | None, command: str,
                     min_effect: float = MIN_EFFECT_PCT, alpha: float = stats.ALPHA) -> Document:
    """The ``diff`` document of two sides of windows."""
    gate = Gate(fail_on, min_effect)
    windowless = list(dict.fromkeys(s.path for s in sides if not s.windows))  # said, not refused (contract#ci)
    if sides[0].by != sides[1].by:
        raise InputError(sides[1].path, f"groups its windows by {sides[1].by or 'owner'}, the baseline by "
                         f"{sides[0].by or 'owner'}", "compare two fleet analyses run with the same --by, "
                         "or two DCGM captures")
    by = sides[0].by
    frames = [wd.window_frame(s.windows, name, by) for s, name in zip(sides, SIDES, strict=True)]
    hs = wd.hours_and_shares(frames)
    table = wd.owner_table(frames, gate, alpha)
    inputs = [{**i, "side": n} for n, s in zip(SIDES, sides, strict=True) for i in s.inputs]
    rejected = [{**r, "side": n} for n, s in zip(SIDES, sides, strict=True) for r in s.rejected]
    lint = [{**lt, "side": n} for n, s in zip(SIDES, sides, strict=True) for lt in s.lint]
    metrics = sorted(set(table["metric"])) if len(table) else []
    mixed = wd.no_common_metric(frames)
    if mixed:
        lint.append({"code": "diff-owner-metric-differs", "kernels": [], "side": "both",
                     "message": f"{len(mixed)} owner(s) not compared: their windows carry an efficiency metric "
                                f"on each side but none in common (SM activity, GR-engine activity, GPU "
                                f"utilisation): {', '.join(mixed[:10])}" + (" …" if len(mixed) > 10 else "")})
    extra = {
        "sides": {n: {"path": s.path, "source": s.source, "windows": len(s.windows),
                      **({"period": s.period} if s.period else {})} for n, s in zip(SIDES, sides, strict=True)},
        "windows_diff": {**hs, "efficiency_metric": metrics},
        "window_series": wd.owner_records(table) if len(table) else [],
        "verdict": _verdict(table, hs, gate, alpha, windowless),
    }
    return build_document(kind="diff", inputs=inputs, rejected=rejected, devices=[], kernels=None, findings=[],
                          lint=lint, command=command, extra=extra)
