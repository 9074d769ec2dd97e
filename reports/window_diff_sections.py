"""Sections of ``rooftop diff`` of two DCGM captures or fleet periods (HTML and Markdown), drawn
only from the document's ``windows_diff``, ``window_series``, ``sides`` and ``verdict``
(docs/formulas.md#windows-diff): the verdict with GPU-hours and owners, the share of GPU time per
label on each side, and per owner (a GPU, or the fleet's group) the efficiency before and after
with the test and what decided it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rooftop.analyzer.schema import SIDES, Document
from rooftop.analyzer.schema.vocab import WINDOW_LABELS_SHOWN
from rooftop.reports.ci import verdict_of, verdict_word
from rooftop.reports.escape import esc
from rooftop.reports.escape import md as md_esc
from rooftop.reports.formatting import fmt_pct, num
from rooftop.reports.md_widgets import MdSection, md_table
from rooftop.reports.reason import clip_reason
from rooftop.reports.timeline_diff_sections import change, p_value
from rooftop.reports.widgets import Column, Section, kpi, share_bar, table

OWNER_ROWS = 200
MD_OWNER_ROWS = 15
METRICS = {"sm_active": "SM activity", "gr_active": "GR-engine activity", "gpu_util": "GPU utilisation"}


def _get(obj: Any, *path: str) -> Any:
    for p in path:
        obj = obj.get(p) if isinstance(obj, Mapping) else None
    return obj


def _hours(v: Any) -> str:
    f = num(v)
    return "—" if f is None else f"{f:.3g} GPU-h"


def _frac(v: Any) -> str:
    f = num(v)
    return "—" if f is None else f"{f:.2f}"


def _points(v: Any) -> str:
    f = num(v)
    return "—" if f is None else f"{f:+.1f} points"


def label_rows(doc: Document) -> list[dict[str, Any]]:
    """Per label: GPU-hours and share of each side, and the change in points."""
    labels = _get(doc, "windows_diff", "labels") or {}
    order = [lb for lb in WINDOW_LABELS_SHOWN if lb in labels] + sorted(set(labels) - set(WINDOW_LABELS_SHOWN))
    return [{"label": lb, "hours_base": _get(labels, lb, "gpu_hours", "baseline"),
             "hours_cand": _get(labels, lb, "gpu_hours", "candidate"),
             "share_base": _get(labels, lb, "share", "baseline"), "share_cand": _get(labels, lb, "share", "candidate"),
             "points": _get(labels, lb, "share", "points")} for lb in order]


def owner_rows(doc: Document) -> list[dict[str, Any]]:
    """Per owner, the largest drop in efficiency first (owners without a change last)."""
    rows = []
    for s in doc.get("window_series") or []:
        rows.append({**s, "metric": METRICS.get(str(s.get("metric")), s.get("metric")),
                     "windows": f"{s.get('n_base')} → {s.get('n_cand')}",
                     "hours": f"{_hours(s.get('hours_base'))} → {_hours(s.get('hours_cand'))}",
                     "idle": f"{fmt_pct(s.get('idle_share_base'))} → {fmt_pct(s.get('idle_share_cand'))}",
                     "efficiency": f"{_frac(s.get('mean_base'))} → {_frac(s.get('mean_cand'))}"})
    rows.sort(key=lambda r: (num(r.get("change")) is None, num(r.get("change")) or 0.0))
    return rows


def _idle_share(doc: Document, side: str) -> Any:
    return _get(doc, "windows_diff", "labels", "idle", "share", side)


def _threshold(doc: Document) -> str:
    f = num(verdict_of(doc).get("classify_pct"))
    return "?" if f is None else f"{f:g} %"


OWNER_COLUMNS = [Column("short_name", "owner", css="name"), Column("metric", "efficiency metric"),
                 Column("efficiency", "efficiency before → after"), Column("change", "change", change, numeric=True),
                 Column("p_adjusted", "p (Holm)", p_value, numeric=True), Column("status", "verdict"),
                 Column("decided_by", "decided by"), Column("windows", "windows"), Column("hours", "GPU-hours"),
                 Column("idle", "idle share")]
LABEL_COLUMNS = [Column("label", "label"), Column("hours_base", "GPU-hours before", _hours, numeric=True),
                 Column("hours_cand", "GPU-hours after", _hours, numeric=True),
                 Column("share_base", "share before", fmt_pct, numeric=True),
                 Column("share_cand", "share after", fmt_pct, numeric=True),
                 Column("points", "change", _points, numeric=True)]


def _side_line(doc: Document, side: str) -> str:
    s = _get(doc, "sides", side) or {}
    period = s.get("period") if isinstance(s.get("period"), Mapping) else None
    when = f", {period.get('since')} – {period.get('until')}" if period else ""
    return (f"{side}: {s.get('path')} ({s.get('source')}, {s.get('windows')} windows{when})"
            if s else f"{side}: —")


def verdict_section(doc: Document) -> Section:
    """The verdict, GPU-hours, idle share and owners judged."""
    v = verdict_of(doc)
    word = verdict_word(doc)
    sev = {"FAIL": "high", "PASS": "low", "REPORT": "info", "NO VERDICT": "medium"}[word]
    gh = _get(doc, "windows_diff", "gpu_hours") or {}
    owners = doc.get("window_series") or []
    compared = sum(1 for s in owners if s.get("n_base") and s.get("n_cand"))
    kpis = [kpi(f"{_hours(gh.get('baseline'))} → {_hours(gh.get('candidate'))}", "GPU time covered (reported)"),
            kpi(f"{fmt_pct(_idle_share(doc, 'baseline'))} → {fmt_pct(_idle_share(doc, 'candidate'))}",
                "GPU time idle (reported)"),
            kpi(str(compared), f"owners compared of {len(owners)}"),
            kpi(str(len(v["regressions"])), f"less efficient beyond {_threshold(doc)}"),
            kpi(str(len(v["improvements"])), f"more efficient beyond {_threshold(doc)}")]
    sides = "".join(f"<li>{esc(_side_line(doc, s))}</li>" for s in SIDES)
    body = (f'<p><span class="sev sev-{sev}">{esc(word)}</span> {esc(v["reason"])}</p>'
            f'<div class="kpis">{"".join(kpis)}</div><ul class="note">{sides}</ul>'
            f'<p class="note">An owner is a GPU (or the fleet\'s --by group, or a window\'s namespace, job or pod); '
            f'its efficiency is the time-weighted SM activity of its windows (else GR-engine activity, else GPU '
            f'utilisation: the first both sides carry). Test: {esc(v.get("test"))}.</p>')
    return Section("Verdict", body, anchor="verdict")


def sections(doc: Document) -> list[Section]:
    """The page of a windows diff, in order."""
    out = [verdict_section(doc)]
    rows = owner_rows(doc)
    body = (table(rows[:OWNER_ROWS], OWNER_COLUMNS) if rows else
            '<p class="note">No owner has windows with SM activity, GR-engine activity or GPU utilisation on '
            'both sides.</p>')
    more = f" {len(rows) - OWNER_ROWS} more in the JSON output." if len(rows) > OWNER_ROWS else ""
    out.append(Section("Owners: efficiency before → after", body, anchor="owners",
                       note=(f"Largest drop first. An owner is less efficient when its efficiency fell by more than "
                             f"{_threshold(doc)} and, with enough windows, Mann–Whitney U over its windows "
                             "(Holm-adjusted) calls it more than noise; GPU-hours and idle share are reported, not "
                             f"gated (docs/formulas.md#windows-diff).{more}")))
    labels = label_rows(doc)
    if not labels:
        out.append(Section("GPU time by label", '<p class="note">No window on either side.</p>', anchor="labels"))
        return out
    bars = "".join(
        f'<p class="note">{esc(side)}</p>' + share_bar(
            {r["label"]: num(r[key]) or 0.0 for r in labels},
            [r["label"] for r in labels])
        for side, key in (("baseline", "share_base"), ("candidate", "share_cand")))
    out.append(Section("GPU time by label", bars + table(labels, LABEL_COLUMNS), anchor="labels",
                       note="The share of each side's GPU-hours per window label (docs/formulas.md#windows). "
                            "A share moves with what ran: reported, not gated."))
    return out


_OWNER_MD: list[Any] = [("short_name", "owner"), ("efficiency", "efficiency"), ("metric", "metric"),
                        ("change", "change", change),
                        ("p_adjusted", "p (Holm)", p_value), ("status", "verdict"), ("decided_by", "decided by"),
                        ("windows", "windows"), ("idle", "idle share")]
_LABEL_MD: list[Any] = [("label", "label"), ("share_base", "share before", fmt_pct),
                        ("share_cand", "share after", fmt_pct), ("points", "change", _points),
                        ("hours_base", "GPU-hours before", _hours), ("hours_cand", "GPU-hours after", _hours)]


def md_sections(doc: Document) -> list[MdSection]:
    """The same for a ticket."""
    v = verdict_of(doc)
    gh = _get(doc, "windows_diff", "gpu_hours") or {}
    idle = (f"; idle {fmt_pct(_idle_share(doc, 'baseline'))} → {fmt_pct(_idle_share(doc, 'candidate'))}"
            if label_rows(doc) else "")
    lines = [f"**{verdict_word(doc)}**: {clip_reason(v['reason'])}", "",
             f"- GPU time covered: {_hours(gh.get('baseline'))} → {_hours(gh.get('candidate'))}{idle} "
             "(reported, not gated)",
             *(f"- {md_esc(_side_line(doc, s))}" for s in SIDES),
             f"- Test: {md_esc(v.get('test'))}"]
    out = [MdSection("Verdict", "\n".join(lines))]
    rows = owner_rows(doc)
    more = f"\n\n_{len(rows) - MD_OWNER_ROWS} more in the JSON output._" if len(rows) > MD_OWNER_ROWS else ""
    out.append(MdSection("Owners: efficiency before → after",
                         (md_table(rows[:MD_OWNER_ROWS], _OWNER_MD, limit=100) if rows
                          else "No owner has windows with SM activity, GR-engine activity or GPU utilisation on both sides.") + more))
    labels = label_rows(doc)
    out.append(MdSection("GPU time by label", (md_table(labels, _LABEL_MD) if labels else "No window on either side.")
                         + "\n\nReported, not gated (docs/formulas.md#windows-diff)."))
    return out
