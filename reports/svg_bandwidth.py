"""The bandwidth chart of a roofline panel: families with bytes and time but no FLOPs (copies,
transposes, reductions) have no place on the FLOP roofline, so each gets a row of bars, one per
memory level, its achieved B/s as a share of that level's ceiling (``panel["bandwidth"]``, decided by
analyzer/view.py; docs/formulas.md#report-view). Static SVG, every string escaped."""

from __future__ import annotations

from collections.abc import Sequence

from rooftop.analyzer.schema import FamilyRow, RooflinePanel
from rooftop.reports.escape import esc
from rooftop.reports.formatting import fmt_num, fmt_pct, fmt_time
from rooftop.reports.widgets import LABEL_COLORS

W = 1040
NAME_W, BAR_X, BAR_W = 360, 372, 420  # name column, bars from BAR_X, 100 % of a ceiling = BAR_W px
ROW_H, BAR_H, TOP = 14, 11, 30
_NAMES = {"dram": "DRAM", "l2": "L2", "l1": "L1"}


def _short(name: str, limit: int = 50) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def bandwidth_svg(panel: RooflinePanel, families: Sequence[FamilyRow], *, title: str = "") -> str:
    """The panel's bandwidth rows as an SVG (empty string when it has none)."""
    rows = panel.get("bandwidth") or []
    if not rows:
        return ""
    heights = [len(r["levels"]) * ROW_H + 12 for r in rows]
    total_h = TOP + sum(heights) + 24
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {total_h}" width="{W}" height="{total_h}" '
           f'class="bandwidth" role="img" font-family="system-ui,-apple-system,Segoe UI,sans-serif">',
           f"<title>{esc(title or 'achieved bandwidth')}</title>",
           "<style>.tk{font-size:11px;fill:#444}.nm{font-size:12px;fill:#111}.bl{font-size:11px;fill:#222}</style>"]
    for tick in (0, 25, 50, 75, 100):
        x = BAR_X + BAR_W * tick / 100
        out.append(f'<line x1="{x:.1f}" y1="{TOP - 6}" x2="{x:.1f}" y2="{total_h - 20}" stroke="#ddd"/>'
                   f'<text x="{x:.1f}" y="{TOP - 10}" text-anchor="middle" class="tk">{tick}%</text>')
    out.append(f'<text x="{BAR_X + BAR_W / 2:.0f}" y="{total_h - 4}" text-anchor="middle" class="tk">'
               "achieved bandwidth, % of the level's ceiling in this chart</text>")
    y = TOP
    for r, h in zip(rows, heights, strict=True):
        f = families[r["family"]]
        color = LABEL_COLORS.get(str(f["label"]), "#555")
        bound = fmt_time(r["bound_s"]) if r["bound_s"] is not None else "unknown"
        hover = (f"{f['family']} — {f['label']} ({f['limiter']}), {fmt_time(f['time_s'])}, "
                 f"{fmt_pct(f['time_share'])} of kernel time; the bytes need at least {bound} at the ceilings")
        out.append(f"<g><title>{esc(hover)}</title>"
                   f'<text x="4" y="{y + BAR_H}" class="nm">{esc(_short(str(f["family"])))}</text>'
                   f'<text x="4" y="{y + BAR_H + 14}" class="tk">{esc(fmt_time(f["time_s"]))} · '
                   f"{esc(fmt_pct(f['time_share']))} of kernel time · bytes need ≥ {esc(bound)}</text>")
        for j, lv in enumerate(r["levels"]):
            by = y + j * ROW_H
            pct = lv["pct"]
            width = BAR_W * min(max(pct or 0.0, 0.0), 100.0) / 100.0
            text = f"{_NAMES.get(lv['level'], lv['level'])} {fmt_num(lv['bytes_s'], 'B/s')}" + (
                f" = {pct:.1f}%" if pct is not None else " (no ceiling)")
            out.append(f'<rect x="{BAR_X}" y="{by}" width="{width:.1f}" height="{BAR_H}" fill="{color}" '
                       f'fill-opacity="0.75"/><text x="{BAR_X + width + 6:.1f}" y="{by + BAR_H - 1}" class="bl">'
                       f"{esc(text)}</text>")
        out.append("</g>")
        y += h
    out.append("</svg>")
    return "".join(out)
