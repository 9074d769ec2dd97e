"""Sections of the ``rooftop diff`` report (HTML and Markdown), rendered only from the document (``Document``).

Reads the diff keys of the document: ``verdict``, ``totals``, ``families``, ``series``,
``unmatched``, ``pairs``, ``sides`` and ``devices``. A diff of two timelines adds the sections of
:mod:`reports.timeline_diff_sections`; a diff of two DCGM captures or fleet periods is drawn by
:mod:`reports.window_diff_sections` alone. Every input-derived string (kernel, family
and file names, NVTX paths) is escaped: :func:`esc`/:func:`table` for HTML, :func:`md_esc`/
:func:`md_table` for Markdown; the roofline is static SVG (``<title>`` hover).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rooftop.analyzer.schema import SIDES, Document, Verdict
from rooftop.reports import timeline_diff_sections as tld
from rooftop.reports import window_diff_sections as wds
from rooftop.reports.ci import verdict_of, verdict_word
from rooftop.reports.escape import esc
from rooftop.reports.escape import md as md_esc
from rooftop.reports.formatting import fmt_num, fmt_time
from rooftop.reports.md_widgets import MdSection, md_table
from rooftop.reports.reason import clip_reason
from rooftop.reports.roofline import roofs_of
from rooftop.reports.svg_roofline import ML, MT, H, W, _Axes, _axes_svg, _ceilings_svg, _ranges
from rooftop.reports.widgets import Column, Section, table

MAX_ARROWS = 60        # families drawn on the roofline (largest by time)
MAX_ROWS = 200         # rows per HTML table (everything is in the JSON output)
MD_ROWS = 15           # rows per Markdown table
LEVEL_NAMES = {"dram": "DRAM", "l2": "L2", "l1": "L1"}
STATUS_COLORS = {"regressed": "#c92a2a", "improved": "#2b8a3e", "not significant": "#868e96",
                 "within threshold": "#1971c2", "unmatched": "#adb5bd", "no duration": "#adb5bd"}


# ----------------------------------------------------------------------------- small helpers


def _num(v: Any) -> float | None:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        f = float(v)
        return f if math.isfinite(f) else None
    return None


def chg(v: Any) -> str:
    """A relative change (fraction) as ``+30.2 %``; ``—`` when undefined."""
    f = _num(v)
    return "—" if f is None else f"{100 * f:+.1f} %"


def _pval(v: Any) -> str:
    f = _num(v)
    return "—" if f is None else f"{f:.2g}"


def _get(obj: Any, *path: str) -> Any:
    for p in path:
        obj = obj.get(p) if isinstance(obj, Mapping) else None
    return obj


def _config(r: Mapping[str, Any]) -> str:
    parts = [f"grid {r.get('grid') if r.get('grid') is not None else '?'}",
             f"block {r.get('block') if r.get('block') is not None else '?'}"]
    if r.get("nvtx"):
        parts.append(f"nvtx {r.get('nvtx')}")
    return ", ".join(parts)


def _thr(verdict: Verdict) -> str:
    f = _num(verdict.get("classify_pct"))
    return "?" if f is None else f"{f:g}"


def _series_rows(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "config": _config(r), "n": f"{r.get('n_base')} → {r.get('n_cand')}",
             "name": tld.unprefixed(r.get("short_name") or r.get("series"), r.get("device"))} for r in records]


# ----------------------------------------------------------------------------- roofline with arrows


def _level(rec: Mapping[str, Any]) -> str | None:
    """The first level (DRAM, L2, L1) where both sides have a finite positive intensity."""
    for lvl in LEVEL_NAMES:
        b = _num(_get(rec, "baseline", "intensity", lvl))
        c = _num(_get(rec, "candidate", "intensity", lvl))
        if b and c and b > 0 and c > 0:
            return lvl
    return None


def _point(rec: Mapping[str, Any], side: str, lvl: str) -> tuple[float, float] | None:
    x = _num(_get(rec, side, "intensity", lvl))
    y = _num(_get(rec, side, "achieved_flops_s"))
    return (x, y) if x and y and x > 0 and y > 0 else None


_STYLE = ("<style>.tk{font-size:11px;fill:#444}.ax{font-size:12px;fill:#222}.cl{font-size:11.5px;font-weight:600;"
          "paint-order:stroke;stroke:#fff;stroke-width:3px}.ky{font-size:12px;fill:#222}</style>")


@dataclass(frozen=True)
class Arrow:
    """One family's move: baseline (intensity, FLOP/s) to candidate, at ``level``."""

    family: str
    status: str
    level: str
    base: tuple[float, float]
    cand: tuple[float, float]
    explanation: str


def roofline_arrows(doc: Document) -> tuple[list[Arrow], str]:
    """The families placed on both sides (largest by time first), and a note on what was left out."""
    placed = []
    for rec in doc.get("families") or []:
        lvl = _level(rec)
        if lvl is None:
            continue
        pb, pc = _point(rec, "baseline", lvl), _point(rec, "candidate", lvl)
        if pb and pc:
            t = (_num(_get(rec, "baseline", "duration_s")) or 0.0) + (_num(_get(rec, "candidate", "duration_s")) or 0.0)
            placed.append((t, Arrow(str(rec.get("family")), str(rec.get("status") or "within threshold"), lvl, pb, pc,
                                    str(rec.get("explanation") or ""))))
    if not placed:
        return [], "No family has FLOPs and bytes on both sides, so no point can be placed."
    placed.sort(key=lambda p: -p[0])
    note = f"Showing the {MAX_ARROWS} largest of {len(placed)} families by time." if len(placed) > MAX_ARROWS else ""
    return [a for _, a in placed[:MAX_ARROWS]], note


def _arrow_svg(ax: _Axes, a: Arrow) -> str:
    col = STATUS_COLORS.get(a.status, "#495057")
    (x0, y0), (x1, y1) = (ax.px(a.base[0]), ax.py(a.base[1])), (ax.px(a.cand[0]), ax.py(a.cand[1]))
    lvl = LEVEL_NAMES[a.level]
    tip_b = f"{a.family} (baseline): {lvl} {a.base[0]:.3g} FLOP/byte · {fmt_num(a.base[1], 'FLOP/s')}"
    tip_c = (f"{a.family} (candidate, {a.status}): {lvl} {a.cand[0]:.3g} FLOP/byte · "
             f"{fmt_num(a.cand[1], 'FLOP/s')}. {a.explanation}")
    out = [f'<g class="arrow" data-status="{esc(a.status)}" data-base="{a.base[0]!r} {a.base[1]!r}" '
           f'data-cand="{a.cand[0]!r} {a.cand[1]!r}">']
    length = math.hypot(x1 - x0, y1 - y0)
    if length > 1.0:
        ux, uy = (x1 - x0) / length, (y1 - y0) / length
        bx, by = x1 - 9 * ux, y1 - 9 * uy
        out.append(f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{bx:.1f}" y2="{by:.1f}" stroke="{col}" stroke-width="1.6"/>'
                   f'<path d="M{x1:.1f} {y1:.1f}L{bx - 4 * uy:.1f} {by + 4 * ux:.1f}L{bx + 4 * uy:.1f} {by - 4 * ux:.1f}Z" '
                   f'fill="{col}"/>')
    out.append(f'<circle cx="{x0:.1f}" cy="{y0:.1f}" r="4.5" fill="#fff" stroke="{col}" stroke-width="1.6">'
               f"<title>{esc(tip_b)}</title></circle>"
               f'<circle cx="{x1:.1f}" cy="{y1:.1f}" r="4.5" fill="{col}"><title>{esc(tip_c)}</title></circle></g>')
    return "".join(out)


def roofline_arrows_svg(doc: Document) -> tuple[str | None, str]:
    """Static SVG roofline with one arrow per family from its baseline point to its candidate point,
    under the first device's ceilings as the document gives them."""
    arrows, note = roofline_arrows(doc)
    if not arrows:
        return None, note
    notes = [note] if note else []
    devices = doc["devices"]
    ceilings = roofs_of(devices[0]) if devices else []
    if not ceilings:
        notes.append("No device ceilings: measured points only.")
    pts = [p for a in arrows for p in (a.base, a.cand)]
    ax = _Axes(*_ranges(ceilings, pts))
    body = [*_axes_svg(ax), f'<text transform="translate(16 {MT + ax.ph / 2:.0f}) rotate(-90)" text-anchor="middle" '
            'class="ax">performance (FLOP/s)</text>', *_ceilings_svg(ax, ceilings), *(_arrow_svg(ax, a) for a in arrows)]
    keys = "".join(f'<tspan fill="{c}">● {esc(s)}</tspan>  ' for s, c in STATUS_COLORS.items()
                   if any(a.status == s for a in arrows))
    body.append(f'<text x="{ML}" y="{H + 16}" class="ky">○ baseline → ● candidate · colour: verdict  {keys}</text>')
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H + 26}" width="{W}" height="{H + 26}" '
           'class="roofline diff" role="img" font-family="system-ui,-apple-system,Segoe UI,sans-serif">'
           + _STYLE + "".join(body) + "</svg>")
    return svg, " ".join(notes)


# ----------------------------------------------------------------------------- HTML sections


def _kpi(value: str, caption: str) -> str:
    return f'<div class="kpi"><b>{esc(value)}</b><span>{esc(caption)}</span></div>'


def verdict_section(doc: Document) -> Section:
    """The verdict, the totals before and after, and the two sides."""
    v = verdict_of(doc)
    t = doc.get("totals") or {}
    word = verdict_word(doc)
    sev = {"FAIL": "high", "PASS": "low", "REPORT": "info", "NO VERDICT": "medium"}[word]
    sides = doc.get("sides") or {}
    kpis = [
        _kpi(f"{fmt_time(_get(t, 'baseline', 'duration_s'))} → {fmt_time(_get(t, 'candidate', 'duration_s'))}",
             f"total kernel time ({chg(_get(t, 'change', 'duration'))})"),
        _kpi(f"{_get(t, 'matched', 'launches') or 0}", f"matched launches ({chg(_get(t, 'matched', 'change'))})"),
        _kpi(str(_get(t, "new", "launches") or 0), f"new launches ({fmt_time(_get(t, 'new', 'duration_s'))})"),
        _kpi(str(_get(t, "vanished", "launches") or 0),
             f"vanished launches ({fmt_time(_get(t, 'vanished', 'duration_s'))})"),
        _kpi(str(len(v["regressions"])), "regressions"),
        _kpi(str(len(v["improvements"])), "improvements"),
    ]
    side_lines = "".join(
        f"<li>{esc(s)}: <span class=kname>{esc(_get(sides, s, 'path'))}</span> "
        f"({esc(_get(sides, s, 'source'))}, {esc(_get(sides, s, 'kernels'))} launches)</li>"
        for s in SIDES if s in sides)
    body = (f'<p><span class="sev sev-{sev}">{esc(word)}</span> {esc(v["reason"])}</p>'
            f'<div class="kpis">{"".join(kpis)}</div><ul class="note">{side_lines}</ul>'
            f'<p class="note">A series is one kernel family with one launch configuration and NVTX path; '
            f'its launches are repeats. Test: {esc(v.get("test"))}.</p>')
    return Section("Verdict", body, anchor="verdict")


def roofline_section(doc: Document) -> Section | None:
    svg, note = roofline_arrows_svg(doc)
    if svg is None:
        return Section("Roofline: baseline → candidate", f'<p class="note">{esc(note)}</p>', anchor="roofline")
    body = ('<p class="note">One arrow per kernel family, from its time-weighted baseline point (open '
            "circle) to its candidate point (filled), at the DRAM level (L2 or L1 where DRAM bytes are "
            "missing). Left = less intensity (more bytes per FLOP); down = fewer FLOP/s. Colour: "
            f"verdict of the family. {esc(note)}</p>")
    return Section("Roofline: baseline → candidate", body + f'<div class="svgwrap">{svg}</div>', anchor="roofline")


SERIES_COLUMNS = [
    Column("family", "family"), Column("config", "launch config"), Column("change", "median Δ", chg, numeric=True),
    Column("median_base_s", "baseline median", fmt_time, numeric=True),
    Column("median_cand_s", "candidate median", fmt_time, numeric=True),
    Column("delta_s", "Δ total time", fmt_time, numeric=True), Column("n", "launches"),
    Column("p_adjusted", "p (Holm)", _pval, numeric=True), Column("note", "method"),
    Column("explanation", "why"),
]


TIMELINE_SERIES_COLUMNS = [
    Column("device", "GPU"), Column("name", "series", css="name"), Column("change", "median Δ", chg, numeric=True),
    Column("median_base_s", "baseline median", fmt_time, numeric=True),
    Column("median_cand_s", "candidate median", fmt_time, numeric=True),
    Column("delta_s", "Δ total time", fmt_time, numeric=True), Column("n", "repeats"),
    Column("p_adjusted", "p (Holm)", _pval, numeric=True), Column("decided_by", "decided by"),
    Column("note", "method"),
]


def changes_section(doc: Document) -> list[Section]:
    """The regressions and improvements beyond the threshold, one table each."""
    v = verdict_of(doc)
    columns = TIMELINE_SERIES_COLUMNS if doc.get("timeline_diff") else SERIES_COLUMNS
    out = []
    for key, title, recs in (("regressions", "Regressions", v["regressions"]),
                             ("improvements", "Improvements", v["improvements"])):
        rows = _series_rows(recs)
        if not rows:
            body = f'<p class="note">No {esc(key)} beyond {esc(_thr(v))} %.</p>'
        else:
            more = (f'<p class="note">{len(rows) - MAX_ROWS} more in the JSON output.</p>'
                    if len(rows) > MAX_ROWS else "")
            body = table(rows[:MAX_ROWS], columns) + more
        out.append(Section(title, body, anchor=key))
    return out


def families_section(doc: Document) -> Section | None:
    fams = list(doc.get("families") or [])
    if not fams:
        return None
    rows = []
    for f in fams:
        tb = _num(_get(f, "baseline", "duration_s")) or 0.0
        tc = _num(_get(f, "candidate", "duration_s")) or 0.0
        rows.append({
            "family": f.get("family"), "status": f.get("status"), "launches": f.get("launches"),
            "tb": tb, "tc": tc, "d": tc - tb, "dur": _get(f, "change", "duration"),
            "fl": _get(f, "change", "achieved_flops_s"), "dram": _get(f, "change", "bytes", "dram"),
            "labels": f"{_get(f, 'baseline', 'label') or '?'} → {_get(f, 'candidate', 'label') or '?'}",
            "why": f.get("explanation"),
        })
    rows.sort(key=lambda r: -abs(r["d"]))
    cols = [Column("family", "family"), Column("status", "status"), Column("launches", "matched", numeric=True),
            Column("tb", "baseline time", fmt_time, numeric=True), Column("tc", "candidate time", fmt_time, numeric=True),
            Column("dur", "time Δ", chg, numeric=True), Column("fl", "FLOP/s Δ", chg, numeric=True),
            Column("dram", "DRAM bytes Δ", chg, numeric=True), Column("labels", "label"), Column("why", "why")]
    more = f'<p class="note">{len(rows) - MAX_ROWS} more in the JSON output.</p>' if len(rows) > MAX_ROWS else ""
    return Section("Families (matched launches, time-weighted)", table(rows[:MAX_ROWS], cols) + more,
                   anchor="families")


UNMATCHED_COLUMNS = [Column("family", "family"), Column("name", "kernel"), Column("config", "launch config"),
                     Column("ordinal", "k-th launch", numeric=True),
                     Column("duration_s", "duration", fmt_time, numeric=True), Column("label", "label"),
                     Column("input", "input")]


def unmatched_section(doc: Document) -> Section:
    un = doc.get("unmatched") or {}
    parts = ['<p class="note">Launches with no partner on the other side (same family, launch '
             "configuration, NVTX path and k-th launch). A renamed kernel shows as one vanished and one new. "
             "Not gated.</p>"]
    for key in ("new", "vanished"):
        rows = [{**r, "config": _config(r)} for r in un.get(key) or []]
        listed = _get(doc, "listed", key)
        total = listed[1] if isinstance(listed, list) and len(listed) == 2 else len(rows)
        parts.append(f"<h3>{esc(key)} ({total})</h3>")
        if rows:
            parts.append(table(rows[:MAX_ROWS], UNMATCHED_COLUMNS))
            if len(rows) > MAX_ROWS:
                parts.append(f'<p class="note">{len(rows) - MAX_ROWS} more in the JSON output.</p>')
    return Section("New and vanished kernels", "".join(parts), anchor="unmatched")


def pairs_section(doc: Document) -> Section | None:
    pairs = list(doc.get("pairs") or [])
    if not pairs:
        return None
    rows = []
    for p in pairs:
        tb = _num(_get(p, "baseline", "duration_s"))
        tc = _num(_get(p, "candidate", "duration_s"))
        rows.append({"name": _get(p, "candidate", "name"), "series": p.get("series"), "ordinal": p.get("ordinal"),
                     "tb": tb, "tc": tc, "d": (tc - tb) if tb is not None and tc is not None else None,
                     "dur": _get(p, "change", "duration"), "why": p.get("explanation")})
    rows.sort(key=lambda r: -abs(r["d"] or 0.0))
    cols = [Column("name", "kernel"), Column("series", "series"), Column("ordinal", "k-th", numeric=True),
            Column("tb", "baseline", fmt_time, numeric=True), Column("tc", "candidate", fmt_time, numeric=True),
            Column("dur", "Δ", chg, numeric=True), Column("why", "why")]
    total = _get(doc, "listed", "pairs")
    total_n = total[1] if isinstance(total, list) and len(total) == 2 else len(rows)
    return Section("Matched launches (largest time changes)", table(rows[:MAX_ROWS], cols), anchor="pairs",
                   note=f"The {min(len(rows), MAX_ROWS)} largest time changes of {total_n} matched launches "
                        f"({len(rows)} in the JSON output).")


def sections(doc: Document) -> list[Section]:
    """The diff page's own sections, in order."""
    if "windows_diff" in doc:
        return wds.sections(doc)
    out: list[Section] = [verdict_section(doc)]
    if doc.get("timeline_diff"):
        parts = tld.sections(doc)
        return [out[0], parts[0], *changes_section(doc), *parts[1:]]
    roof = roofline_section(doc)
    if roof:
        out.append(roof)
    out += changes_section(doc)
    fam = families_section(doc)
    if fam:
        out.append(fam)
    out.append(unmatched_section(doc))
    pairs = pairs_section(doc)
    if pairs:
        out.append(pairs)
    return out


# ----------------------------------------------------------------------------- Markdown


def markdown_sections(doc: Document) -> list[MdSection]:
    """Verdict, totals, regressions, improvements, families and unmatched kernels for a ticket."""
    if "windows_diff" in doc:
        return wds.md_sections(doc)
    v = verdict_of(doc)
    t = doc.get("totals") or {}
    lines = [f"**{verdict_word(doc)}**: {clip_reason(v['reason'])}", "",
             f"- Total kernel time: {fmt_time(_get(t, 'baseline', 'duration_s'))} → "
             f"{fmt_time(_get(t, 'candidate', 'duration_s'))} ({chg(_get(t, 'change', 'duration'))})",
             f"- Matched launches: {_get(t, 'matched', 'launches') or 0} "
             f"({chg(_get(t, 'matched', 'change'))} time); new: {_get(t, 'new', 'launches') or 0}, "
             f"vanished: {_get(t, 'vanished', 'launches') or 0}",
             f"- Test: {md_esc(v.get('test'))}"]
    out = [MdSection("Verdict", "\n".join(lines))]
    cols: list[Any] = [("series", "series"), ("change", "median Δ", chg), ("delta_s", "Δ time", fmt_time),
                       ("n", "launches"), ("p_adjusted", "p (Holm)", _pval), ("note", "method"),
                       ("explanation", "why")]
    timeline = tld.md_sections(doc)
    if timeline:
        out.append(timeline[0])
        cols = [("device", "GPU"), ("name", "series"), *cols[1:]]
    for title, recs in (("Regressions", v["regressions"]), ("Improvements", v["improvements"])):
        rows = _series_rows(recs)
        if rows:
            more = f"\n\n_{len(rows) - MD_ROWS} more in the JSON output._" if len(rows) > MD_ROWS else ""
            out.append(MdSection(title, md_table(rows[:MD_ROWS], cols) + more))
        else:
            out.append(MdSection(title, f"None beyond {md_esc(_thr(v))} %."))
    if timeline:
        return out + timeline[1:]
    un = doc.get("unmatched") or {}
    un_lines = []
    for key in ("new", "vanished"):
        recs = un.get(key) or []
        names = sorted({str(r.get("family")) for r in recs})
        shown = ", ".join(md_esc(n, limit=80) for n in names[:10])
        un_lines.append(f"- {key}: {len(recs)} launch(es)" + (f" of {len(names)} families: {shown}" if recs else "")
                        + (" …" if len(names) > 10 else ""))
    out.append(MdSection("New and vanished kernels", "\n".join(un_lines)))
    return out
