"""Reading a side (ncu exports or a saved analysis) and the whole ``diff`` job."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from rooftop.analyzer.diff.compare import compare
from rooftop.analyzer.diff.gate import MIN_EFFECT_PCT, Gate
from rooftop.analyzer.diff.match import _HINT, NUMERIC, SIDES, _str_col
from rooftop.analyzer.diff.records import diff_payload, findings, listing_lint
from rooftop.analyzer.diff.saved import read_document
from rooftop.analyzer.document import KERNEL_FIELDS, build_document
from rooftop.analyzer.schema import Document
from rooftop.errors import InputError


@dataclass
class Side:
    """One run as read: flat kernel results plus what the document lists about its inputs."""

    path: str
    source: str  # "profile" (ncu exports analysed now) or "analysis" (a saved rooftop JSON)
    results: pd.DataFrame
    inputs: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    devices: list[dict[str, Any]] = field(default_factory=list)
    lint: list[dict[str, Any]] = field(default_factory=list)


def frame_from_document(doc: dict[str, Any], path: str) -> pd.DataFrame:
    """Rebuild the flat kernel-result frame (``KERNEL_FIELDS`` + ``extra``) from a saved analysis."""
    if doc.get("schema_version") != 1:
        raise InputError(path, f"has schema_version {doc.get('schema_version')!r}; this rooftop reads 1",
                         "re-run `rooftop analyze --json` with this version")
    if doc.get("kind", "analyze") != "analyze":
        raise InputError(path, f"is a rooftop {doc.get('kind')!r} document, not an analysis", _HINT)
    kernels = doc.get("kernels")
    if not isinstance(kernels, list):
        raise InputError(path, "has no 'kernels' list", _HINT)
    rows = []
    for k in kernels:
        if not isinstance(k, dict):
            continue
        row: dict[str, Any] = {}
        for col, p in KERNEL_FIELDS.items():
            v: Any = k
            for part in p:
                v = v.get(part) if isinstance(v, dict) else None
            row[col] = v
        extra = k.get("extra")
        if isinstance(extra, dict):
            for col, v in extra.items():
                row.setdefault(col, v)
        rows.append(row)
    frame = pd.DataFrame(rows, columns=list(KERNEL_FIELDS) if not rows else None)
    for col in NUMERIC:
        if col in frame.columns:
            frame[col] = pd.to_numeric(frame[col], errors="coerce").astype(float)
    for col in ("grid", "block", "index"):
        if col in frame.columns:
            frame[col] = pd.to_numeric(frame[col], errors="coerce").astype("Int64")
    return frame


def _with_nvtx(results: pd.DataFrame, kernels: pd.DataFrame) -> pd.DataFrame:
    """Carry the kernel table's NVTX path onto the results (by input and index) when it is absent."""
    if "nvtx" in results.columns or "nvtx" not in kernels.columns or not {"input", "index"} <= set(results.columns):
        return results
    src = kernels[["input", "index", "nvtx"]].drop_duplicates(["input", "index"])
    src = src.astype({"input": "string", "index": "Int64"})
    out = results.astype({"input": "string", "index": "Int64"})
    return out.merge(src, on=["input", "index"], how="left", validate="many_to_one")


def load_side(path: str, side: str, device: str | None) -> Side:
    """Read one side: a saved rooftop analysis JSON, or ncu exports (file or folder) analysed now."""
    p = Path(path)
    if not p.exists():
        raise InputError(path, "does not exist", _HINT)
    if p.is_file():
        doc = read_document(p)
        if doc is not None:
            frame = frame_from_document(doc, path)
            if not len(frame):
                raise InputError(path, "is a rooftop analysis with no kernels", _HINT)
            lint = list(doc.get("lint") or [])
            if device:
                lint.append({"code": "diff-device-ignored", "kernels": [],
                             "message": f"{side} {path} is a saved analysis: its ceilings are kept, --device is not applied"})
            return Side(path=path, source="analysis", results=frame,
                        inputs=[{"path": path, "format": "rooftop-json", "records": len(frame), "missing": 0,
                                 "rejected": 0}],
                        rejected=list(doc.get("rejected") or []), devices=list(doc.get("devices") or []),
                        lint=lint)
    from rooftop.analyzer.pipeline import analyze_inputs

    ai = analyze_inputs([path], device)
    if not len(ai.kernels):
        raise InputError(path, "holds no kernel launches",
                         "rooftop diff compares two ncu profiles, two timelines, or two DCGM captures")
    results = _with_nvtx(ai.results, ai.kernels)
    return Side(path=path, source="profile", results=results, inputs=ai.parsed.inputs(),
                rejected=ai.parsed.rejected(), devices=ai.devices, lint=ai.lint)


def _side_lint(sides: list[Side]) -> list[dict[str, Any]]:
    """Each side's lint tagged with ``side``; one entry with side ``both`` when both say the same.

    ``kernels`` indices refer to that side's own analysis (positions in its kernel list).
    """
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for name, side in zip(SIDES, sides, strict=True):
        for lt in side.lint:
            key = (str(lt.get("code")), str(lt.get("message")))
            if key in out and out[key]["side"] != name:
                out[key]["side"] = "both"
            else:
                out.setdefault(key, {**lt, "side": name})
    return list(out.values())


def _device_lint(b: pd.DataFrame, c: pd.DataFrame) -> list[dict[str, Any]]:
    db = sorted(set(_str_col(b, "device")) - {""})
    dc = sorted(set(_str_col(c, "device")) - {""})
    if db and dc and db != dc:
        return [{"code": "diff-different-devices", "kernels": [],
                 "message": f"baseline ran on {', '.join(db)}, candidate on {', '.join(dc)}: "
                            "durations are not comparable like for like"}]
    return []


def run_diff(baseline: str, candidate: str, *, fail_on: float | None, device: str | None,
             command: str, gate: str = "total", min_effect: float = MIN_EFFECT_PCT) -> Document:
    """The whole ``diff`` job; returns the contract document of kind ``diff``."""
    Gate(fail_on, min_effect)  # both options checked before any input is read
    from rooftop.analyzer.timeline.diff import is_trace_pair, run_trace_diff

    if is_trace_pair(baseline, candidate):  # two nsys/Kineto timelines: docs/formulas.md#timeline-diff
        return run_trace_diff(baseline, candidate, fail_on=fail_on, command=command, min_effect=min_effect)
    from rooftop.analyzer.diff.window_sides import run_windows_diff, window_side

    wsides = [window_side(p) for p in (baseline, candidate)]  # DCGM windows: docs/formulas.md#windows-diff
    if all(w is not None for w in wsides):
        return run_windows_diff([w for w in wsides if w is not None], fail_on=fail_on, command=command,
                                min_effect=min_effect)
    for w, other in zip(wsides, (candidate, baseline), strict=True):
        if w is not None:
            raise InputError(w.path, f"holds DCGM windows, {other} does not",
                             "compare two DCGM captures (or rooftop analyze/fleet JSON of them), or two kernel "
                             "profiles")
    sides = [load_side(path, side, device) for path, side in zip((baseline, candidate), SIDES, strict=True)]
    result = compare(sides[0].results, sides[1].results, fail_on=fail_on, gate=gate, min_effect=min_effect)
    inputs = [{**i, "side": s} for s, side in zip(SIDES, sides, strict=True) for i in side.inputs]
    rejected = [{**r, "side": s} for s, side in zip(SIDES, sides, strict=True) for r in side.rejected]
    devices: list[dict[str, Any]] = []
    for side in sides:
        devices += [d for d in side.devices if d not in devices]
    lint = _side_lint(sides) + _device_lint(result.baseline, result.candidate)
    payload = diff_payload(result)
    lint += listing_lint(payload)
    extra = {
        "sides": {s: {"path": side.path, "source": side.source, "kernels": len(side.results)}
                  for s, side in zip(SIDES, sides, strict=True)},
        **payload,
    }
    return build_document(kind="diff", inputs=inputs, rejected=rejected, devices=devices, kernels=None,
                          findings=findings(result), lint=lint, command=command, extra=extra)
