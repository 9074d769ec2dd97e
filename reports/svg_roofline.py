"""A roofline panel as one self-contained static SVG (HTML page and the ``--md`` companion file).

Draws what ``doc["roofline"]["panels"][i]`` and ``doc["families"]`` hold and decides nothing: the
ceilings are the panel's (labelled at the line with name, value in SI units and source), the points
are the panel's placed families (one marker per memory level, sized by share of time, coloured by
label), the labelled families are the panel's ``labelled`` list (numbered on the chart and named in
the key under it); every marker has a ``<title>`` (hover). Levels are groups ``lvl-<level>`` so the
HTML page can toggle them with CSS. Static SVG instead of plotly: a screenshot shows everything,
it is a few kB, draws at once and works in a Markdown ticket (docs/formulas.md#report-view).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from rooftop.analyzer.schema import (
    FamilyRow,
    MemoryLevel,
    RooflineCeiling,
    RooflinePanel,
    WindowPanel,
    WindowPoint,
)
from rooftop.reports.escape import esc
from rooftop.reports.formatting import fmt_num, fmt_pct, num
from rooftop.reports.widgets import LABEL_COLORS

_Point = tuple[int, str, float, float]
_Window = tuple[float, float, WindowPoint]

W, H = 1040, 520
ML, MR, MT, MB = 92, 282, 18, 50  # compute ceilings are labelled in the right margin, clear of the points
LEVELS: tuple[tuple[MemoryLevel, str, str], ...] = (("dram", "DRAM", "circle"), ("l2", "L2", "square"),
                                                    ("l1", "L1", "diamond"))
BW_COLORS = {"dram": "#c2255c", "l2": "#e8590c", "l1": "#b08900"}
NAME_ON_CHART = 34        # characters of a family name written next to its marker
NAME_IN_KEY = 80          # characters of a family name in the key under the chart
MAX_POINTS = 3000         # markers drawn per panel (largest families by time); the rest are counted
CL_CHAR_PX = 7.0          # width of a character of a ceiling label (11.5 px, semibold), a generous estimate
FL_CHAR_PX = 6.6          # ... of a family label on the chart (11.5 px)


def _decades(lo: float, hi: float, min_span: int = 2) -> tuple[int, int]:
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    while b - a < min_span:
        a, b = a - 1, b + 1
    return a, b


class _Axes:
    """Log-log mapping from data to pixels."""

    def __init__(self, x: tuple[int, int], y: tuple[int, int], mr: int = MR) -> None:
        self.x0, self.x1 = x
        self.y0, self.y1 = y
        self.pw, self.ph = W - ML - mr, H - MT - MB

    def px(self, v: float) -> float:
        return ML + (math.log10(v) - self.x0) / (self.x1 - self.x0) * self.pw

    def py(self, v: float) -> float:
        return MT + self.ph - (math.log10(v) - self.y0) / (self.y1 - self.y0) * self.ph


def _x_tick(e: int) -> str:
    return fmt_num(10.0 ** e) if e >= 0 else f"{10.0 ** e:g}"


def _ranges(ceilings: Sequence[RooflineCeiling], pts: Sequence[tuple[float, float]]) -> tuple[tuple[int, int], tuple[int, int]]:
    comp = [c["value"] for c in ceilings if c["kind"] == "compute" and num(c["value"])]
    bw = [c["value"] for c in ceilings if c["kind"] == "bandwidth" and num(c["value"])]
    xs = [x for x, _ in pts] + [c / b for c in comp for b in bw]
    ys = [y for _, y in pts] + comp
    x = _decades(min(xs) / 2, max(xs) * 2) if xs else (-2, 3)
    y = _decades(min(ys) / 2, max(ys) * 2) if ys else (9, 15)
    return x, y


def _points(panel: RooflinePanel, families: Sequence[FamilyRow]) -> list[_Point]:
    """(family index, level, intensity, FLOP/s) for each placed family and level."""
    out: list[_Point] = []
    for i in panel["placed"][:MAX_POINTS]:
        f = families[i]
        y = num(f["achieved_flops_s"])
        for lvl, _, _ in LEVELS:
            x = num(_intensity(f, lvl))
            if x and x > 0 and y and y > 0:
                out.append((i, lvl, x, y))
    return out


def _marker(shape: str, x: float, y: float, r: float, color: str, title: str) -> str:
    common = f'fill="{color}" fill-opacity="0.78" stroke="#222" stroke-width="0.6"'
    if shape == "circle":
        body = f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" {common}>'
        end = "</circle>"
    elif shape == "square":
        body = f'<rect x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r:.1f}" height="{2 * r:.1f}" {common}>'
        end = "</rect>"
    else:
        d = r * 1.3
        body = (f'<path d="M{x:.1f} {y - d:.1f}L{x + d:.1f} {y:.1f}L{x:.1f} {y + d:.1f}L{x - d:.1f} {y:.1f}Z" '
                f"{common}>")
        end = "</path>"
    return f"{body}<title>{esc(title)}</title>{end}"


def _intensity(f: FamilyRow, lvl: MemoryLevel) -> float | None:
    return f["intensity_dram"] if lvl == "dram" else f["intensity_l2"] if lvl == "l2" else f["intensity_l1"]


def _ceiling_text(c: RooflineCeiling) -> str:
    spread = ""
    lo, hi = num(c["min"]), num(c["max"])
    if lo and hi and hi > lo * 1.01:
        spread = f" (±{100 * (hi - lo) / 2 / float(c['value']):.0f} %)"
    return f"{c['name']} {fmt_num(c['value'], c['unit'])}{spread} · {c['source']}"


def _ceiling_label(c: RooflineCeiling, x: float, y: float) -> tuple[str, int]:
    """The compute ceiling's label in the right margin: one line, or two (name and value; spread and
    source) where one line would run past the chart's edge (it was cut: "Tensor FP16/BF16 108 TFLOP/s
    (±1 %) · bu"). Returns the ``<text>`` and its number of lines."""
    text = _ceiling_text(c)
    if x + CL_CHAR_PX * len(text) <= W:
        return f'<text x="{x:.1f}" y="{y:.1f}" class="cl">{esc(text)}</text>', 1
    head = f"{c['name']} {fmt_num(c['value'], c['unit'])}"
    tail = text[len(head):].strip()
    return (f'<text x="{x:.1f}" y="{y:.1f}" class="cl">{esc(head)}'
            f'<tspan x="{x:.1f}" dy="13">{esc(tail)}</tspan></text>'), 2


def _ceilings_svg(ax: _Axes, ceilings: Sequence[RooflineCeiling]) -> list[str]:
    out: list[str] = []
    comp = [c for c in ceilings if c["kind"] == "compute" and num(c["value"])]
    bw = [c for c in ceilings if c["kind"] == "bandwidth" and num(c["value"])]
    top = max((c["value"] for c in comp), default=None)
    best_bw = max((b["value"] for b in bw), default=None)
    xl, xr = 10.0 ** ax.x0, 10.0 ** ax.x1
    used_y: list[float] = []
    for c in sorted(comp, key=lambda c: -c["value"]):
        y = ax.py(c["value"])
        xa = max(xl, c["value"] / best_bw) if best_bw else xl
        dash = ' stroke-dasharray="5 4"' if c["binding_kernels"] == 0 else ""
        title = f"{_ceiling_text(c)}: {c['provenance'] or ''}"
        lines = 1 if ax.px(xr) + 6 + CL_CHAR_PX * len(_ceiling_text(c)) <= W else 2
        ty = y - 4
        while any(abs(ty + 13 * k - u) < 12 for u in used_y for k in range(lines)):
            ty += 13
        used_y += [ty + 13 * k for k in range(lines)]
        label, _ = _ceiling_label(c, ax.px(xr) + 6, ty + 8)
        out.append(f'<g class="ceiling" data-kind="compute" data-key="{esc(c["key"])}" data-value="{c["value"]!r}">'
                   f'<line x1="{ax.px(xa):.1f}" y1="{y:.1f}" x2="{ax.px(xr):.1f}" y2="{y:.1f}" stroke="#222" '
                   f'stroke-width="1.6"{dash}><title>{esc(title)}</title></line>{label}</g>')
    for n, b in enumerate(sorted(bw, key=lambda b: b["value"])):
        xb = min(xr, top / b["value"]) if top else xr
        # visible part of y = b * x inside the plot: x from max(left edge, bottom edge) to xb
        xa = max(xl, 10.0 ** ax.y0 / b["value"])
        if xa >= xb:
            continue
        x1, y1, x2, y2 = ax.px(xa), ax.py(b["value"] * xa), ax.px(xb), ax.py(b["value"] * xb)
        ang = math.degrees(math.atan2(y2 - y1, x2 - x1))
        lx = x1 + 0.06 * (x2 - x1) + 14 * n
        ly = y1 + (lx - x1) * (y2 - y1) / (x2 - x1) - 5
        color = BW_COLORS.get(b["key"], "#555")
        dash = ' stroke-dasharray="5 4"' if b["binding_kernels"] == 0 else ""
        title = f"{_ceiling_text(b)}: {b['provenance'] or ''}"
        out.append(f'<g class="ceiling" data-kind="bandwidth" data-key="{esc(b["key"])}" data-value="{b["value"]!r}">'
                   f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{color}" stroke-width="1.6"{dash}>'
                   f'<title>{esc(title)}</title></line>'
                   f'<text x="{lx:.1f}" y="{ly:.1f}" transform="rotate({ang:.2f} {lx:.1f} {ly:.1f})" class="cl" '
                   f'fill="{color}">{esc(_ceiling_text(b))}</text></g>')
    return out


def _axes_svg(ax: _Axes, caption: str = "arithmetic intensity (FLOP/byte)",
              x_tick: Callable[[int], str] = _x_tick) -> list[str]:
    """The plot frame, the decade grid with its tick labels, and the x-axis caption (also the op roofline's)."""
    out = [f'<rect x="{ML}" y="{MT}" width="{ax.pw}" height="{ax.ph}" fill="#fbfbfd" stroke="#c9ced6"/>']
    for e in range(ax.x0, ax.x1 + 1):
        x = ax.px(10.0 ** e)
        out.append(f'<line x1="{x:.1f}" y1="{MT}" x2="{x:.1f}" y2="{MT + ax.ph}" stroke="#e6e8ee"/>'
                   f'<text x="{x:.1f}" y="{MT + ax.ph + 16}" text-anchor="middle" class="tk">{esc(x_tick(e))}</text>')
    for e in range(ax.y0, ax.y1 + 1):
        y = ax.py(10.0 ** e)
        out.append(f'<line x1="{ML}" y1="{y:.1f}" x2="{ML + ax.pw}" y2="{y:.1f}" stroke="#e6e8ee"/>'
                   f'<text x="{ML - 6}" y="{y + 4:.1f}" text-anchor="end" class="tk">{esc(fmt_num(10.0 ** e, "FLOP/s"))}</text>')
    out.append(f'<text x="{ML + ax.pw / 2:.0f}" y="{H - 12}" text-anchor="middle" class="ax">{caption}</text>')
    return out


def _short(name: Any, limit: int) -> str:
    s = str(name or "?")
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _hover(f: FamilyRow, lvl_name: str, x: float) -> str:
    return (f"{f['family']}\n{lvl_name}: {x:.3g} FLOP/byte · {fmt_num(f['achieved_flops_s'], 'FLOP/s')}\n"
            f"{fmt_pct(f['time_share'])} of kernel time · {f['launches']} launch(es)\n"
            f"{f['label']} / {f['limiter']}")




def roofline_svg(panel: RooflinePanel, families: Sequence[FamilyRow], *, title: str = "") -> str:
    """A kernel roofline panel as a standalone SVG document fragment (``<svg xmlns=...>...</svg>``):
    its ceilings and placed families (``families``: the document's family rows)."""
    names = {lvl: lname for lvl, lname, _ in LEVELS}
    no_roof = [names.get(lvl, lvl) for lvl in panel["no_roof"]]
    return _svg(panel["id"], panel["ceilings"], _points(panel, families), [], panel["labelled"], families,
                no_roof, title)


def window_roofline_svg(panel: WindowPanel, *, title: str = "") -> str:
    """A DCGM window roofline panel as a standalone SVG: its ceilings and estimated window points."""
    wpts: list[_Window] = [(x, y, w) for w in panel["windows"]
                           if (x := num(w["intensity"])) and (y := num(w["flops_s"])) and x > 0 and y > 0]
    return _svg(panel["id"], panel["ceilings"], [], wpts, [], [], [], title)


def _svg(pid: str, ceilings: Sequence[RooflineCeiling], pts: Sequence[_Point], wpts: Sequence[_Window],
         labelled: Sequence[int], families: Sequence[FamilyRow], no_roof: Sequence[str], title: str) -> str:
    ax = _Axes(*_ranges(ceilings, [(x, y) for _, _, x, y in pts] + [(x, y) for x, y, _ in wpts]))
    key_lines = len(labelled) + 2 + (1 if no_roof else 0)
    total_h = H + 18 * key_lines + 8
    cid = f"clip-{esc(pid)}"
    body: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {total_h}" width="{W}" height="{total_h}" '
        f'class="roofline" data-panel="{esc(pid)}" role="img" font-family="system-ui,-apple-system,Segoe UI,sans-serif">',
        f"<title>{esc(title or 'roofline')}</title>",
        "<style>.tk{font-size:11px;fill:#444}.ax{font-size:12px;fill:#222}.cl{font-size:11.5px;font-weight:600;"
        "paint-order:stroke;stroke:#fff;stroke-width:3px}.fl{font-size:11.5px;paint-order:stroke;stroke:#fff;"
        "stroke-width:3px;fill:#111}.ky{font-size:12px;fill:#222}</style>",
        f'<defs><clipPath id="{cid}"><rect x="{ML}" y="{MT}" width="{W - ML}" height="{ax.ph}"/></clipPath></defs>',
        *_axes_svg(ax),
        f'<text transform="translate(16 {MT + ax.ph / 2:.0f}) rotate(-90)" text-anchor="middle" class="ax">'
        "performance (FLOP/s)</text>",
        f'<g clip-path="url(#{cid})">', *_ceilings_svg(ax, ceilings),
    ]
    body += _markers_svg(ax, pts, families)
    body += _windows_svg(ax, wpts)
    body += _point_labels_svg(ax, pts, labelled, families)
    body.append("</g>")
    body += _key_svg(pts, wpts, labelled, families, no_roof)
    body.append("</svg>")
    return "".join(body)


def _markers_svg(ax: _Axes, pts: Sequence[_Point], families: Sequence[FamilyRow]) -> list[str]:
    """One group ``lvl-<level>`` of family markers per memory level, sized by share of time."""
    shares = [num(families[i]["time_share"]) or 0.0 for i, _, _, _ in pts]
    smax = max(shares, default=0.0) or 1.0
    body: list[str] = []
    for lvl, lname, shape in LEVELS:
        group = [f'<g class="lvl lvl-{lvl}" data-level="{lvl}">']
        for (i, lv, x, y), s in zip(pts, shares, strict=True):
            if lv != lvl:
                continue
            f = families[i]
            r = 3.5 + 11 * math.sqrt(s / smax)
            color = LABEL_COLORS.get(f["label"], "#555")
            group.append(_marker(shape, ax.px(x), ax.py(y), r, color, _hover(f, lname, x)))
        group.append("</g>")
        if len(group) > 2:
            body += group
    return body


def _windows_svg(ax: _Axes, wpts: Sequence[_Window]) -> list[str]:
    """The DCGM window triangles (group ``lvl-windows``), if any."""
    if not wpts:
        return []
    body = ['<g class="lvl lvl-windows" data-level="windows">']
    for x, y, w in wpts:
        px, py = ax.px(x), ax.py(y)
        color = LABEL_COLORS.get(str(w["label"]), "#555")
        title = (f"GPU {w['gpu']} · {w['label']} · {w['windows']} window(s)"
                 f"{' from ' + str(w['start']) if w['start'] else ''}\n{x:.3g} FLOP/byte (DRAM) · "
                 f"{fmt_num(y, 'FLOP/s')} · {fmt_num(w['dram_bytes_s'], 'B/s')} (estimates)")
        body.append(f'<path d="M{px:.1f} {py - 6:.1f}L{px + 5.5:.1f} {py + 4:.1f}L{px - 5.5:.1f} {py + 4:.1f}Z" '
                    f'fill="{color}" fill-opacity="0.6" stroke="#111" stroke-width="0.5"><title>{esc(title)}</title></path>')
    body.append("</g>")
    return body


def _point_labels_svg(ax: _Axes, pts: Sequence[_Point], labelled: Sequence[int],
                      families: Sequence[FamilyRow]) -> list[str]:
    """The numbered names of the labelled families, next to their first level's marker, none over another:
    each takes the first free place beside it (right, then left; the nearest line above or below first)
    inside the plot; where all would overlap a label already placed, the number alone (the key under the chart names
    it). Largest families are placed first (``labelled`` is in that order)."""
    body: list[str] = []
    placed: list[tuple[float, float, float, float]] = []
    first_level = {i: (lv, x, y) for i, lv, x, y in reversed(pts)}
    for n, i in enumerate(labelled, 1):
        if i not in first_level:
            continue
        _lv, x, y = first_level[i]
        px, py = ax.px(x), ax.py(y)
        full = f"{n} {_short(families[i]['family'], NAME_ON_CHART)}"
        text = full
        spot = _free_spot(ax, px, py, full, placed)
        if spot is None:
            text = str(n)
            spot = _free_spot(ax, px, py, text, placed, least=True) or (px + 9, py - 7, False)
        tx, ty, right = spot
        w = FL_CHAR_PX * len(text)
        placed.append((tx - w if right else tx, ty - 11, tx if right else tx + w, ty + 3))
        anchor = ' text-anchor="end"' if right else ""
        body.append(f'<text x="{tx:.1f}" y="{ty:.1f}"{anchor} class="fl point-label" '
                    f'data-family="{i}">{esc(text)}</text>')
    return body


_OFFSETS = (-7, 14, -18, 25, -29, 36, -40, 47)  # baselines above / below a marker, nearest first


def _free_spot(ax: _Axes, px: float, py: float, text: str, placed: Sequence[tuple[float, float, float, float]],
               *, least: bool = False) -> tuple[float, float, bool] | None:
    """The first place for ``text`` next to a marker at (px, py) inside the plot that overlaps no placed
    label box: (x, baseline y, right-aligned), right of the marker then left, nearest line first. With
    ``least``, where every place overlaps: the place overlapping least."""
    w = FL_CHAR_PX * len(text)
    best: tuple[float, tuple[float, float, bool]] | None = None
    for dy in _OFFSETS:
        for tx, right in ((px + 9, False), (px - 9, True)):
            ty = py + dy
            x0, x1 = (tx - w, tx) if right else (tx, tx + w)
            y0, y1 = ty - 11, ty + 3
            if x0 < ML or x1 > ML + ax.pw or y0 < MT or y1 > MT + ax.ph:
                continue
            over = sum(max(0.0, min(x1, b[2]) - max(x0, b[0])) * max(0.0, min(y1, b[3]) - max(y0, b[1]))
                       for b in placed)
            if over == 0:
                return tx, ty, right
            if least and (best is None or over < best[0]):
                best = (over, (tx, ty, right))
    return best[1] if best else None


def _key_svg(pts: Sequence[_Point], wpts: Sequence[_Window], labelled: Sequence[int],
             families: Sequence[FamilyRow], no_roof: Sequence[str]) -> list[str]:
    """The key under the chart: legend and colours, how to read it, missing roofs, the labelled families."""
    body: list[str] = []
    ky = H + 4
    legend = "  ".join(f"{sym} {name}" for (_, name, _), sym in zip(LEVELS, ("●", "■", "◆"), strict=True))
    labels = sorted({str(families[i]["label"]) for i, _, _, _ in pts} | {str(w["label"]) for _, _, w in wpts})
    if wpts:
        legend = "▲ DCGM window (estimated FLOP/s vs DRAM bytes/s)"
    body.append(f'<text x="{ML}" y="{ky}" class="ky">{esc(legend)} · colour: '
                + "".join(f'<tspan fill="{LABEL_COLORS.get(lab, "#555")}">■ {esc(lab)} </tspan>' for lab in labels)
                + "</text>")
    ky += 18
    explain = ("marker size: share of kernel time · dashed ceiling: no kernel in this chart is bound by it · "
               if pts else "")
    body.append(f'<text x="{ML}" y="{ky}" class="ky">{explain}hover a marker or a line for details</text>')
    if no_roof:
        ky += 18
        which = " and ".join(no_roof)
        body.append(f'<text x="{ML}" y="{ky}" class="ky no-roof">no {esc(which)} roof: neither the export nor the '
                    f"device table gives its bandwidth; those points show FLOP/s at their intensity only</text>")
    for n, i in enumerate(labelled, 1):
        f = families[i]
        ky += 18
        body.append(f'<text x="{ML}" y="{ky}" class="ky"><tspan font-weight="600">{n}</tspan> '
                    f"{esc(_short(f['family'], NAME_IN_KEY))} — {esc(f['label'])} ({esc(f['limiter'])}), "
                    f"{esc(fmt_pct(f['time_share']))} of kernel time</text>")
    return body
