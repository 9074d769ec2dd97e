"""Sections of the ``rooftop trend`` report (HTML and Markdown), drawn only from the document's
``trend`` key (docs/contract.md, docs/formulas.md#trend): the summary, a small-multiples SVG per
top family (its median launch time per run, the noise band each run was judged against, the runs
where a change started), and the change and family tables. Every input-derived string is escaped
(:func:`esc` / :func:`md_esc`); the SVGs are static (``<title>`` hover)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rooftop.analyzer.schema import Document
from rooftop.reports.escape import esc
from rooftop.reports.formatting import fmt_time
from rooftop.reports.md_widgets import MdSection, md_table
from rooftop.reports.reason import clip_reason
from rooftop.reports.widgets import Column, Section, table

MULTIPLES = 12          # families drawn, largest total time first
MAX_ROWS = 200          # HTML table rows (the JSON has every family)
MD_ROWS = 20
W, H = 300, 130         # one small multiple
ML, MR, MT, MB = 46, 8, 22, 22
CHANGE = {"slower": "#c92a2a", "faster": "#2b8a3e"}


def _num(v: Any) -> float | None:
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v)):
        return float(v)
    return None


def _pct(v: Any) -> str:
    f = _num(v)
    return "—" if f is None else f"{100 * f:+.1f} %"


def _trend(doc: Document) -> Mapping[str, Any]:
    t = doc.get("trend")
    return t if isinstance(t, Mapping) else {}


def _values(fam: Mapping[str, Any]) -> list[float | None]:
    return [None if not isinstance(r, Mapping) else _num(r.get("median_s")) for r in fam.get("runs") or []]


def multiple_svg(fam: Mapping[str, Any], n_runs: int) -> str:
    """One family: its run medians (dots joined), the band each run was judged against (grey
    bars), and a coloured ring on each run that started a change."""
    vals = _values(fam)
    bands = [b if isinstance(b, Mapping) else None for b in fam.get("bands") or []]
    ys = [v for v in vals if v is not None]
    ys += [_num(b.get(k)) or 0.0 for b in bands if b for k in ("low", "high")]
    lo, hi = (min(ys), max(ys)) if ys else (0.0, 1.0)
    pad = (hi - lo) * 0.1 or abs(hi) * 0.05 or 1e-9
    lo, hi = max(0.0, lo - pad), hi + pad
    pw, ph = W - ML - MR, H - MT - MB

    def px(i: int) -> float:
        return ML + (pw * i / (n_runs - 1) if n_runs > 1 else pw / 2)

    def py(v: float) -> float:
        return MT + ph * (1 - (v - lo) / (hi - lo))

    out = [f'<rect x="{ML}" y="{MT}" width="{pw}" height="{ph}" fill="none" stroke="#dee2e6"/>',
           f'<text x="{ML - 4}" y="{MT + 4}" text-anchor="end" class="tk">{esc(fmt_time(hi))}</text>',
           f'<text x="{ML - 4}" y="{MT + ph}" text-anchor="end" class="tk">{esc(fmt_time(lo))}</text>',
           f'<text x="{ML}" y="{H - 6}" class="tk">run 1</text>',
           f'<text x="{ML + pw}" y="{H - 6}" text-anchor="end" class="tk">run {n_runs}</text>']
    for i, b in enumerate(bands):
        blo, bhi = (_num(b.get("low")), _num(b.get("high"))) if b else (None, None)
        if blo is not None and bhi is not None:
            y0, y1 = py(min(bhi, hi)), py(max(blo, lo))
            out.append(f'<rect x="{px(i) - 5:.1f}" y="{y0:.1f}" width="10" height="{max(y1 - y0, 1):.1f}" '
                       f'fill="#adb5bd" fill-opacity="0.35"><title>run {i + 1}: noise band '
                       f'{esc(fmt_time(blo))} – {esc(fmt_time(bhi))}</title></rect>')
    pts = [(px(i), py(v)) for i, v in enumerate(vals) if v is not None]
    if len(pts) > 1:
        out.append('<polyline fill="none" stroke="#1971c2" stroke-width="1.5" points="'
                   + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
    for i, v in enumerate(vals):
        if v is not None:
            out.append(f'<circle cx="{px(i):.1f}" cy="{py(v):.1f}" r="2.8" fill="#1971c2">'
                       f"<title>run {i + 1}: median {esc(fmt_time(v))}</title></circle>")
    for c in fam.get("changes") or []:
        i = c.get("run")
        v = vals[i] if isinstance(i, int) and 0 <= i < len(vals) else None
        if v is None or not isinstance(i, int):
            continue
        col = CHANGE.get(str(c.get("direction")), "#495057")
        dash = "" if c.get("confirmed") else ' stroke-dasharray="3 2"'
        out.append(f'<circle cx="{px(i):.1f}" cy="{py(v):.1f}" r="6.5" fill="none" stroke="{col}" '
                   f'stroke-width="2"{dash}><title>run {i + 1}: {esc(c.get("direction"))} {esc(_pct(c.get("change")))}'
                   f'{"" if c.get("confirmed") else " (unconfirmed: the last run)"}</title></circle>')
    noise = _num(fam.get("noise_pct"))
    title = str(fam.get("label") or fam.get("key") or "?")
    short = title if len(title) <= 44 else title[:43] + "…"
    head = f"{short} · noise {noise:.2g} %" if noise is not None else short
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
            f'class="multiple" role="img" aria-label="{esc(title)}" font-family="system-ui,-apple-system,Segoe UI,'
            'sans-serif"><style>.tk{font-size:10px;fill:#555}.ti{font-size:11px;font-weight:600;fill:#222}</style>'
            f'<text x="{ML}" y="14" class="ti">{esc(head)}<title>{esc(title)}</title></text>'
            + "".join(out) + "</svg>")


def _change_rows(t: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"family": c.get("family"), "run": (c.get("run") or 0) + 1, "direction": c.get("direction"),
             "change": c.get("change"), "confirmed": "yes" if c.get("confirmed") else "no (last run)"}
            for c in t.get("changes") or [] if isinstance(c, Mapping)]


def _family_rows(t: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for f in t.get("families") or []:
        vals = [v for v in _values(f) if v is not None]
        rows.append({"family": f.get("label"), "runs": len(vals), "first": vals[0] if vals else None,
                     "last": vals[-1] if vals else None,
                     "change": (vals[-1] / vals[0] - 1) if len(vals) > 1 and vals[0] else None,
                     "noise": _num(f.get("noise_pct")), "changes": len(f.get("changes") or []),
                     "total": f.get("total_s")})
    return rows


def _noise(v: Any) -> str:
    f = _num(v)
    return "—" if f is None else f"{f:.2g} %"


CHANGE_COLUMNS = [Column("family", "family", css="name"), Column("run", "from run", numeric=True),
                  Column("direction", "direction"), Column("change", "change", _pct, numeric=True),
                  Column("confirmed", "confirmed by the next run")]
FAMILY_COLUMNS = [Column("family", "family", css="name"), Column("runs", "runs", numeric=True),
                  Column("first", "first run median", fmt_time, numeric=True),
                  Column("last", "last run median", fmt_time, numeric=True),
                  Column("change", "first → last", _pct, numeric=True),
                  Column("noise", "between-run noise", _noise, numeric=True),
                  Column("changes", "changes", numeric=True), Column("total", "time, all runs", fmt_time, numeric=True)]


def sections(doc: Document) -> list[Section]:
    """Summary, small multiples, changes and families."""
    t = _trend(doc)
    runs = [r for r in t.get("runs") or [] if isinstance(r, Mapping)]
    run_list = "".join(f"<li>run {int(r.get('index') or 0) + 1}: <span class=kname>{esc(r.get('path'))}</span> "
                       f"({esc(r.get('source'))}, {esc(r.get('launches'))} launches)</li>" for r in runs)
    out = [Section("Trend", f'<p>{esc(t.get("summary"))}</p><ol class="note">{run_list}</ol>'
                   f'<p class="note">Each family\'s run value is its median launch time; a run is judged against '
                   f"the runs since the family's last change: their median ± max({esc(t.get('min_effect_pct'))} %, "
                   f"{esc(t.get('k_sigma'))} × 1.4826 × MAD). docs/formulas.md#trend.</p>", anchor="trend")]
    fams = [f for f in t.get("families") or [] if isinstance(f, Mapping)]
    if fams:
        svgs = "".join(f'<div class="svgwrap">{multiple_svg(f, len(runs))}</div>' for f in fams[:MULTIPLES])
        note = (f"The {min(len(fams), MULTIPLES)} families with the most time over all runs. Dots: median launch "
                "time per run; grey bars: the noise band the run was judged against; rings: the run where a change "
                "started (red slower, green faster; dashed: the last run, unconfirmed).")
        out.append(Section("Families across runs", f'<p class="note">{esc(note)}</p>'
                           f'<div class="multiples" style="display:flex;flex-wrap:wrap;gap:8px">{svgs}</div>',
                           anchor="multiples"))
    changes = _change_rows(t)
    out.append(Section("Changes", table(changes[:MAX_ROWS], CHANGE_COLUMNS) if changes
                       else '<p class="note">No family left its noise band.</p>', anchor="changes"))
    rows = _family_rows(t)
    if rows:
        listed = t.get("listed")
        more = (f'<p class="note">{esc(listed[0])} of {esc(listed[1])} families listed; the JSON output holds '
                "them.</p>") if isinstance(listed, list) and len(listed) == 2 and listed[0] < listed[1] else ""
        out.append(Section("Families", table(rows[:MAX_ROWS], FAMILY_COLUMNS) + more, anchor="families"))
    return out


def markdown_sections(doc: Document) -> list[MdSection]:
    """Summary, changes and the largest families."""
    t = _trend(doc)
    out = [MdSection("Trend", clip_reason(str(t.get("summary") or ""), limit=3000))]
    changes = _change_rows(t)
    if changes:
        cols: Sequence[Any] = [("family", "family"), ("run", "from run"), ("direction", "direction"),
                               ("change", "change", _pct), ("confirmed", "confirmed")]
        out.append(MdSection("Changes", md_table(changes[:MD_ROWS], list(cols), limit=100)))
    rows = _family_rows(t)
    if rows:
        fcols: Sequence[Any] = [("family", "family"), ("runs", "runs"), ("first", "first", fmt_time),
                                ("last", "last", fmt_time), ("change", "first → last", _pct),
                                ("noise", "noise", _noise), ("changes", "changes")]
        out.append(MdSection("Families", md_table(rows[:MD_ROWS], list(fcols), limit=100)))
    return out
