"""The diff document's records, findings and listing lint."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.diff.compare import DiffResult
from rooftop.analyzer.diff.deltas import pct
from rooftop.analyzer.diff.match import LEVELS, SIDES
from rooftop.analyzer.diff.verdict import series_records
from rooftop.analyzer.document import jsonable


def _side_record(row: dict[str, Any], suf: str) -> dict[str, Any]:
    g = row.get
    return {
        "input": g(f"input{suf}"), "index": g(f"index{suf}"), "id": g(f"id{suf}"), "name": g(f"name{suf}"),
        "device": g(f"device{suf}"),
        "duration_s": g(f"duration_s{suf}"), "flops": g(f"flops{suf}"),
        "achieved_flops_s": g(f"achieved_flops_s{suf}"),
        "bytes": {lv: g(f"bytes_{lv}{suf}") for lv in LEVELS},
        "intensity": {lv: g(f"intensity_{lv}{suf}") for lv in LEVELS},
        "label": g(f"label{suf}"), "limiter": g(f"limiter{suf}"),
    }


def _change_record(row: dict[str, Any]) -> dict[str, Any]:
    g = row.get
    return {
        "duration": g("duration_s_change"), "achieved_flops_s": g("achieved_flops_s_change"),
        "flops": g("flops_change"),
        "bytes": {lv: g(f"bytes_{lv}_change") for lv in LEVELS},
        "intensity": {lv: g(f"intensity_{lv}_change") for lv in LEVELS},
    }


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as dicts of plain Python values (NaN/NA -> None), without a per-cell Python pass."""
    clean = frame.astype(object).where(frame.notna(), None)
    records: list[dict[str, Any]] = clean.to_dict("records")
    return records


def pair_records(pairs: pd.DataFrame) -> list[dict[str, Any]]:
    """Contract records of matched pairs: key, both sides, relative changes, explanation."""
    out = []
    for row in _records(pairs):
        out.append({
            "family": row["family"], "series": row["series"], "ordinal": row["ordinal"],
            "match": row.get("match"),
            "grid": row["grid"] if row["grid"] is not None and row["grid"] >= 0 else None,
            "block": row["block"] if row["block"] is not None and row["block"] >= 0 else None,
            "nvtx": row["nvtx"] or None,
            "baseline": _side_record(row, "_base"), "candidate": _side_record(row, "_cand"),
            "change": _change_record(row),
            "label_changed": bool(row.get("label_changed") or False),
            "limiter_changed": bool(row.get("limiter_changed") or False),
            "explanation": row["explanation"],
        })
    return out


def family_records(families: pd.DataFrame) -> list[dict[str, Any]]:
    """Time-weighted per-family records (roofline arrows: ``baseline`` → ``candidate`` points)."""
    out = []
    for row in families.to_dict("records"):
        out.append({
            "family": row["family"], "launches": row["launches"], "status": row.get("status"),
            "baseline": _side_record(row, "_base"), "candidate": _side_record(row, "_cand"),
            "change": _change_record(row),
            "label_changed": bool(row.get("label_changed", False)),
            "limiter_changed": bool(row.get("limiter_changed", False)),
            "explanation": row["explanation"],
        })
    for rec in out:
        for side in SIDES:
            for k in ("input", "index", "id", "name", "device"):
                rec[side].pop(k, None)
    return out


def unmatched_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """New or vanished launches: identity, where they came from, duration and label."""
    cols = ["series", "family", "ordinal", "name", "input", "index", "grid", "block", "nvtx",
            "duration_s", "label", "limiter"]
    t = frame.reindex(columns=cols).copy()
    t["grid"] = t["grid"].where(t["grid"] >= 0)
    t["block"] = t["block"].where(t["block"] >= 0)
    t["nvtx"] = t["nvtx"].where(t["nvtx"] != "")
    records: list[dict[str, Any]] = jsonable(t.to_dict("records"))
    return records


def findings(result: DiffResult) -> list[dict[str, Any]]:
    """Regressions as contract findings (so the terminal summary lists them), costliest first."""
    base_total = result.totals["baseline"]["duration_s"] or 0.0
    severity = "high" if result.verdict["fail"] else "medium"
    out: list[dict[str, Any]] = []
    for rank, r in enumerate(result.verdict["regressions"], start=1):
        delta = r.get("delta_s") or 0.0
        out.append({
            "rank": rank, "rule": "diff-regression", "severity": severity,
            "title": f"{r.get('short_name') or r['series']}: median duration {pct(r['change'])}; "
                     f"{str(r['explanation']).split(': ', 1)[-1]}",
            "kernels": [], "time_share": delta / base_total if base_total else 0.0,
            "est_saving_s": delta if delta > 0 else None,
            "recommendation": f"{r['note']}; compare the two profiles of this kernel in Nsight Compute "
                              "(ncu-ui: baseline) to see which section moved",
        })
    return out


MAX_RECORDS = 10_000
"""Matched pairs (and new, and vanished launches) listed in the document, largest time first.

Families, series, totals and the verdict always cover every launch; ``listed`` in the document
says how many records each list holds out of how many, and a lint entry says when one is cut."""


def _largest(frame: pd.DataFrame, weight: pd.Series, limit: int) -> pd.DataFrame:
    """The ``limit`` rows with the largest ``weight`` (NaN last), in their original order."""
    if len(frame) <= limit:
        return frame
    w = pd.to_numeric(weight, errors="coerce").fillna(-1.0).to_numpy(dtype=float)
    keep = np.sort(np.argsort(-w, kind="stable")[:limit])
    return frame.iloc[keep]


def diff_payload(result: DiffResult, limit: int = MAX_RECORDS) -> dict[str, Any]:
    """The diff-specific keys of the document (everything but the common contract keys), JSON-ready."""
    pairs = result.pairs
    delta = (pd.to_numeric(pairs.get("duration_s_cand"), errors="coerce")
             - pd.to_numeric(pairs.get("duration_s_base"), errors="coerce")).abs() if len(pairs) \
        else pd.Series(dtype=float)
    shown = _largest(pairs, delta, limit)
    new = _largest(result.new, result.new.get("duration_s", pd.Series(dtype=float)), limit)
    vanished = _largest(result.vanished, result.vanished.get("duration_s", pd.Series(dtype=float)), limit)
    payload: dict[str, Any] = jsonable({
        "pairs": pair_records(shown),
        "families": family_records(result.families),
        "series": series_records(result.series),
        "unmatched": {"new": unmatched_records(new), "vanished": unmatched_records(vanished)},
        "listed": {"pairs": [len(shown), len(pairs)], "new": [len(new), len(result.new)],
                   "vanished": [len(vanished), len(result.vanished)]},
        "totals": result.totals,
        "verdict": result.verdict,
    })
    return payload


def listing_lint(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """A lint entry for each list the document cut (see :data:`MAX_RECORDS`)."""
    out = []
    for key, (shown, total) in payload["listed"].items():
        if shown < total:
            out.append({"code": "diff-list-truncated", "kernels": [],
                        "message": f"{key}: the {shown} largest by time of {total} are listed; families, "
                                   "series, totals and the verdict cover all of them"})
    return out
