"""Static SVG charts for the DCGM, nvidia-smi, timeline, fleet and diff pages (no plotly.js).

Each function draws what it is handed from the document and decides nothing. A time-series chart
is one metric family with one series per device; above one sample per bucket (2 px) a series is
drawn as the min-max envelope (shaded) and the mean (line) of exactly the samples in each bucket,
and the caption says so. Hover is SVG ``<title>`` (series, bars, hover columns). Every string from
the input goes through :func:`esc`. Static SVG: a screenshot shows everything, the page stays small
and draws at once (docs/formulas.md#report-view).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rooftop.reports.escape import esc
from rooftop.reports.svg_axes import (
    Envelope,
    TimeAxis,
    envelope,
    fmt_tick,
    fmt_value,
    linear_ticks,
    value_range,
)

W = 1040
ML, MR, MT, MB = 96, 16, 10, 40
ML_MAX = 300              # the widest left margin row names may take (the plot keeps >= 2/3 of W)
TK_CHAR_PX = 6.6          # width of one character of the 11 px tick font, an upper estimate (digits ~6.1)
OVERLAP_DASH = 6          # px of each series' turn in the striped line of exactly overlapping series
BUCKET_PX = 2             # one envelope bucket per 2 px of plot width
HOVER_COLUMNS = 60        # <title> hover columns per time chart
PALETTE = ("#1971c2", "#e8590c", "#2b8a3e", "#c2255c", "#7048e8", "#0c8599", "#e67700", "#5c940d",
           "#862e9c", "#495057", "#d6336c", "#1098ad", "#a61e4d", "#364fc7", "#087f5b", "#f08c00")
STYLE = ("<style>.tk{font-size:11px;fill:#444}.ax{font-size:12px;fill:#222}.ti{font-size:13px;font-weight:600;"
         "fill:#222}.lg{font-size:11.5px;fill:#222}.hv{fill:#000;fill-opacity:0}.hv:hover{fill-opacity:0.06}</style>")


def color(n: int) -> str:
    return PALETTE[n % len(PALETTE)]


def text_px(text: str) -> float:
    """Estimated width (px) of ``text`` in the tick font (an upper estimate; no font metrics offline)."""
    return TK_CHAR_PX * len(text)


def label_margin(names: Sequence[str]) -> float:
    """The left margin that shows the longest of ``names`` whole, right-aligned 6 px left of the plot
    (at least :data:`ML`, the axis titles' room; at most :data:`ML_MAX`, beyond that names are
    shortened in the middle by :func:`fit_label`)."""
    need = max((text_px(n) for n in names), default=0.0) + 12
    return float(min(max(ML, math.ceil(need)), ML_MAX))


def fit_label(name: str, room_px: float) -> str:
    """``name`` if it fits in ``room_px``, else its head and tail around "…" (a GPU key's host and its
    GPU / MIG index both stay; the full name goes in the element's <title>)."""
    if text_px(name) <= room_px:
        return name
    n = max(int(room_px // TK_CHAR_PX) - 1, 2)
    tail = n // 2
    return name[:n - tail] + "…" + name[len(name) - tail:]


@dataclass(frozen=True)
class Line:
    """One series: times (epoch or relative seconds) and values (NaN = no sample)."""

    name: str
    t: np.ndarray
    y: np.ndarray
    color: str
    dash: bool = False
    end: np.ndarray | None = None  # per-sample end times (a window's end); None: held to the next sample


def _svg(h: float, cls: str, body: Sequence[str], label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {h:.0f}" width="{W}" height="{h:.0f}" '
            f'class="{cls}" role="img" aria-label="{esc(label)}" '
            f'font-family="system-ui,-apple-system,Segoe UI,sans-serif">{STYLE}{"".join(body)}</svg>')


def figure_html(svg: str, caption: str) -> str:
    """The chart in the page: scrollable wrapper plus a caption under it."""
    return f'<figure class="chart"><div class="svgwrap">{svg}</div><figcaption class="note">{esc(caption)}</figcaption></figure>'


def _legend(items: Sequence[tuple[str, str, bool]], y: float, ml: float = ML) -> tuple[list[str], float]:
    """Swatches with names, wrapped over lines; returns the SVG and the height used."""
    out, x, row = [], float(ml), 0
    for name, col, dash in items:
        text = name if len(name) <= LEGEND_CHARS else name[:LEGEND_CHARS - 1] + "…"
        w = 26 + 6.6 * len(text)
        if x + w > W - MR and x > ml:
            x, row = float(ml), row + 1
        yy = y + 16 * row
        d = ' stroke-dasharray="4 3"' if dash else ""
        out.append(f'<g class="legend-item"><line x1="{x:.0f}" y1="{yy - 4:.0f}" x2="{x + 18:.0f}" y2="{yy - 4:.0f}" '
                   f'stroke="{col}" stroke-width="3"{d}/><text x="{x + 22:.0f}" y="{yy:.0f}" class="lg">{esc(text)}'
                   f"<title>{esc(name)}</title></text></g>")
        x += w + 10
    return out, 16.0 * (row + 1) + 4


def _y_axis(lo: float, hi: float, unit: str, top: float, ph: float, title: str,
            ml: float = ML) -> tuple[list[str], Callable[[float], float]]:
    def py(v: float) -> float:
        return top + ph - (v - lo) / ((hi - lo) or 1.0) * ph
    out = []
    for v in linear_ticks(lo, hi, 4):
        y = py(v)
        out.append(f'<line x1="{ml:g}" y1="{y:.1f}" x2="{W - MR}" y2="{y:.1f}" stroke="#e9ecef"/>'
                   f'<text x="{ml - 6:g}" y="{y + 4:.1f}" text-anchor="end" class="tk">{esc(fmt_tick(v, unit))}</text>')
    out.append(f'<text x="14" y="{top + ph / 2:.0f}" class="ax" text-anchor="middle" '
               f'transform="rotate(-90 14 {top + ph / 2:.0f})">{esc(title)}</text>')
    return out, py


def _anchor(x: float) -> str:
    """Tick labels at the right edge end there instead of running off the chart."""
    return "end" if x > W - MR - 30 else "middle"


def _x_axis(ax: TimeAxis, px: Callable[[float], float], top: float, ph: float, ml: float = ML) -> list[str]:
    out = []
    for t, lab in ax.ticks():
        x = px(t)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}" stroke="#f1f3f5"/>'
                   f'<text x="{x:.1f}" y="{top + ph + 15:.0f}" text-anchor="{_anchor(x)}" class="tk">{esc(lab)}</text>')
    out.append(f'<text x="{ml + (W - ml - MR) / 2:.0f}" y="{top + ph + 32:.0f}" text-anchor="middle" class="ax">'
               f"{esc(ax.title())}</text>")
    return out


def _runs(idx: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) runs of consecutive bucket indices."""
    if not len(idx):
        return []
    cut = np.flatnonzero(np.diff(idx) != 1) + 1
    bounds = np.r_[0, cut, len(idx)]
    return [(int(bounds[i]), int(bounds[i + 1])) for i in range(len(bounds) - 1)]


Segment = tuple[float, float, float]  # a drawn step: start, stop (data time) and value
Shared = Mapping[Segment, tuple[int, ...]]  # a step drawn by several series: their indices, in draw order


def _step_segments(t: np.ndarray, y: np.ndarray, end: np.ndarray | None,
                   px: Callable[[float], float]) -> tuple[list[Segment], list[tuple[float, float]]]:
    """Each sample over its own [t, end) (a window's start and end) or, without ends, held to the
    next sample; a sample that covers less than half a pixel is a dot ``(t, value)``."""
    segs: list[Segment] = []
    dots: list[tuple[float, float]] = []
    for i in range(len(t)):
        ti = float(t[i])
        nxt = float(t[i + 1]) if i + 1 < len(t) else None
        stop = float(end[i]) if end is not None and np.isfinite(end[i]) else (nxt if nxt is not None else ti)
        if nxt is not None:
            stop = min(stop, nxt)
        if px(stop) - px(ti) < 0.5:
            dots.append((ti, float(y[i])))
        else:
            segs.append((ti, stop, float(y[i])))
    return segs, dots


def _steps(segs: Sequence[Segment], px: Callable[[float], float], py: Callable[[float], float],
           shared: Shared | None = None) -> tuple[str, dict[tuple[int, ...], str]]:
    """The step path of the segments (a stretch without samples stays empty), and, apart, the
    horizontal strokes of the segments several series draw (``shared``), by the series that share
    them: each group is drawn striped (:func:`_series_svg`). Joins between steps stay solid."""
    d: list[str] = []
    groups: dict[tuple[int, ...], list[str]] = {}
    pen = False  # the path's pen is at the end of the previous segment
    prev: tuple[float, float] | None = None  # (stop, y px) of the previous segment
    for ti, stop, yi in segs:
        x0, x1, yy = px(ti), px(stop), py(yi)
        joined = prev is not None and prev[0] >= ti - 1e-9
        join = (("" if pen else f"M{x0:.1f} {prev[1]:.1f}") + f"V{yy:.1f}") if joined and prev is not None else ""
        owners = shared.get((ti, stop, yi)) if shared else None
        if owners is not None and len(owners) > 1:
            d.append(join)
            groups.setdefault(owners, []).append(f"M{x0:.1f} {yy:.1f}H{x1:.1f}")
            pen = False
        else:
            d.append(f"{join}H{x1:.1f}" if join else f"M{x0:.1f} {yy:.1f}H{x1:.1f}")
            pen = True
        prev = (stop, yy)
    return "".join(d), {k: "".join(v) for k, v in groups.items()}


def _is_steps(ln: Line, ax: TimeAxis, buckets: int) -> bool:
    """At most one sample per bucket: the series is drawn as its samples' steps, not an envelope."""
    n = int((np.isfinite(ln.t) & np.isfinite(ln.y)).sum())
    return len(envelope(ln.t, ln.y, ax.lo, ax.hi, buckets).index) == n


def _finite(ln: Line) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    ok = np.isfinite(ln.t) & np.isfinite(ln.y)
    return ln.t[ok], ln.y[ok], (ln.end[ok] if ln.end is not None else None)


def _series_svg(ln: Line, ax: TimeAxis, px: Callable[[float], float], py: Callable[[float], float], buckets: int,
                bw: float, unit: str, ml: float = ML, shared: Shared | None = None, me: int = 0) -> tuple[str, bool]:
    """One series: a step line through the samples, or envelope + mean when denser than the buckets.
    ``shared``: steps several series draw exactly alike; this series (index ``me``) draws its turn of
    each, :data:`OVERLAP_DASH` px of every ``k x OVERLAP_DASH`` shifted by its place among the ``k``,
    so every colour shows where the lines coincide (docs/formulas.md#report-view)."""
    t, y, end = _finite(ln)
    dash = ' stroke-dasharray="5 3"' if ln.dash else ""
    if not len(t):
        return "", False
    stats = (f"{ln.name}: {len(t)} samples, min {fmt_value(float(y.min()), unit)}, "
             f"mean {fmt_value(float(y.mean()), unit)}, max {fmt_value(float(y.max()), unit)}")
    env = envelope(ln.t, ln.y, ax.lo, ax.hi, buckets)
    if len(env.index) == len(t):  # at most one sample per bucket: the samples themselves
        segs, dot_pts = _step_segments(t, y, end, px)
        d, groups = _steps(segs, px, py, shared)
        dots = "".join(f"M{px(ti):.1f} {py(yi):.1f}h0.01" for ti, yi in dot_pts)
        svg = f'<path d="{d}" fill="none" stroke="{ln.color}" stroke-width="1.4"{dash}/>' if d else ""
        for owners, gd in groups.items():
            k, m = len(owners), owners.index(me)
            svg += (f'<path d="{gd}" fill="none" stroke="{ln.color}" stroke-width="1.4" class="overlap" '
                    f'stroke-dasharray="{OVERLAP_DASH} {(k - 1) * OVERLAP_DASH}" '
                    f'stroke-dashoffset="{((k - m) % k) * OVERLAP_DASH}"/>')
        if dots:
            svg += f'<path d="{dots}" fill="none" stroke="{ln.color}" stroke-width="6" stroke-linecap="round"/>'
        return f'<g class="series">{svg}<title>{esc(stats)}</title></g>', False
    parts = []
    for a, b in _runs(env.index):
        # each bucket is a flat step over its own pixels (the samples in it), as compact path commands
        x0 = ml + int(env.index[a]) * bw
        hi = [round(py(float(v))) for v in env.hi[a:b]]
        lo = [round(py(float(v))) for v in env.lo[a:b]]
        mean = [round(py(float(v))) for v in env.mean[a:b]]
        step = f"{bw:.3g}"
        up = f"M{x0:.1f} {hi[0]}" + "".join(f"V{v}h{step}" for v in hi)
        down = "".join(f"V{v}h-{step}" for v in lo[::-1])
        parts.append(f'<path d="{up}{down}Z" fill="{ln.color}" fill-opacity="0.18" stroke="none"/>')
        parts.append(f'<path d="M{x0:.1f} {mean[0]}' + "".join(f"V{v}h{step}" for v in mean)
                     + f'" fill="none" stroke="{ln.color}" stroke-width="1.3"{dash}/>')
    return f'<g class="series">{"".join(parts)}<title>{esc(stats)}</title></g>', True


def _hover_columns(lines: Sequence[Line], ax: TimeAxis, unit: str, top: float, ph: float,
                   ml: float = ML) -> list[str]:
    """Transparent columns whose <title> lists each series' mean (min-max, samples) in that stretch."""
    pw = W - ml - MR
    cols = HOVER_COLUMNS
    envs: list[Envelope] = [envelope(ln.t, ln.y, ax.lo, ax.hi, cols) for ln in lines]
    out = []
    cw = pw / cols
    for c in range(cols):
        rows = []
        for ln, e in zip(lines, envs, strict=True):
            k = np.searchsorted(e.index, c)
            if k < len(e.index) and e.index[k] == c:
                lo, mean, hi, n = float(e.lo[k]), float(e.mean[k]), float(e.hi[k]), int(e.count[k])
                rows.append(f"{ln.name}: {fmt_value(mean, unit)}" + (
                    f" (mean; {fmt_value(lo, unit)} – {fmt_value(hi, unit)}, n={n})" if n > 1 else ""))
        if not rows:
            continue
        t0 = ax.lo + (ax.hi - ax.lo) * c / cols
        t1 = ax.lo + (ax.hi - ax.lo) * (c + 1) / cols
        head = f"{ax.stamp(t0)} – {ax.stamp(t1)}"
        out.append(f'<rect class="hv" x="{ml + c * cw:.1f}" y="{top}" width="{cw:.1f}" height="{ph}">'
                   f'<title>{esc(head + chr(10) + chr(10).join(rows))}</title></rect>')
    return out


def time_chart(title: str, lines: Sequence[Line], ax: TimeAxis, *, unit: str, y_title: str,
               y_range: tuple[float, float] | None = None, height: int = 190, ml: float = ML) -> tuple[str, bool]:
    """One metric family over time, one series per device (each sample over its own [t, end), or to
    the next sample). Steps several series draw exactly alike are striped, each series in turn, and
    the legend says which series a line overlaps (:func:`shared_steps`).
    ``ml``: the left margin (the label rows above use the same, so times line up). Returns the SVG and
    whether any series was reduced to its per-bucket envelope (the caption must say so)."""
    ph = height - MT - MB - 16
    top = MT + 16
    pw = W - ml - MR
    buckets = max(1, int(pw // BUCKET_PX))
    vals = [float(v) for ln in lines for v in ln.y[np.isfinite(ln.y)]]
    lo, hi = y_range if y_range else value_range(vals)
    body = [f'<text x="{ml:g}" y="{MT + 4}" class="ti">{esc(title)}</text>']
    ygrid, py = _y_axis(lo, hi, unit, top, ph, y_title, ml)
    body += ygrid

    def px(t: float) -> float:
        return ml + min(max((t - ax.lo) / ((ax.hi - ax.lo) or 1.0), 0.0), 1.0) * pw
    body += _x_axis(ax, px, top, ph, ml)
    body.append(f'<rect x="{ml:g}" y="{top}" width="{pw:g}" height="{ph}" fill="none" stroke="#adb5bd"/>')
    shared = shared_steps(lines, ax, px, buckets)
    reduced = False
    for i, ln in enumerate(lines):
        svg, red = _series_svg(ln, ax, px, py, buckets, pw / buckets, unit, ml, shared, i)
        body.append(svg)
        reduced |= red
    body += _hover_columns(lines, ax, unit, top, ph, ml)
    leg, lh = _legend([(_noted(ln.name, *notes), ln.color, ln.dash)
                       for ln, notes in zip(lines, overlap_notes(lines, shared), strict=True)], top + ph + 52, ml)
    body += leg
    return _svg(top + ph + 44 + lh, "timechart", body, title), reduced


def shared_steps(lines: Sequence[Line], ax: TimeAxis, px: Callable[[float], float], buckets: int) -> dict[Segment, tuple[int, ...]]:
    """Steps (start, stop, value) that two or more step-drawn series draw exactly alike, with the
    indices of those series in draw order: without stripes the last one drawn would hide the others."""
    owners: dict[Segment, list[int]] = {}
    for i, ln in enumerate(lines):
        if not _is_steps(ln, ax, buckets):
            continue
        t, y, end = _finite(ln)
        for seg in dict.fromkeys(_step_segments(t, y, end, px)[0]):
            owners.setdefault(seg, []).append(i)
    return {seg: tuple(ix) for seg, ix in owners.items() if len(ix) > 1}


LEGEND_CHARS = 60  # a legend entry's longest text (the full name is its <title>)


def _noted(name: str, note: str, short_note: str) -> str:
    """A legend name with its overlap note (the short one where the long one does not fit), the name
    shortened in the middle only if even that does not fit, so the note always shows."""
    if len(name) + len(note) <= LEGEND_CHARS:
        return name + note
    if len(name) + len(short_note) <= LEGEND_CHARS:
        return name + short_note
    return fit_label(name, TK_CHAR_PX * (LEGEND_CHARS - len(short_note) + 1)) + short_note


def overlap_notes(lines: Sequence[Line], shared: Shared) -> list[tuple[str, str]]:
    """Per series its legend notes, long and short: `` (overlaps GPU 0 +2)`` and `` (overlaps 3
    others)``, naming the series it shares drawn steps with ("" for a series that shares none)."""
    with_: list[dict[int, None]] = [{} for _ in lines]
    for ix in shared.values():
        for i in ix:
            with_[i].update(dict.fromkeys(j for j in ix if j != i))
    notes = []
    for others in with_:
        names = [lines[j].name for j in sorted(others)]
        if not names:
            notes.append(("", ""))
            continue
        more = f" +{len(names) - 1}" if len(names) > 1 else ""
        notes.append((f" (overlaps {names[0]}{more})",
                      f" (overlaps {len(names)} other{'s' if len(names) > 1 else ''})"))
    return notes


# ----------------------------------------------------------------------------- rows of coloured spans


@dataclass(frozen=True)
class Span:
    """A coloured stretch of one row: [t0, t1), its colour and hover text."""

    t0: float
    t1: float
    color: str
    title: str


def span_rows(title: str, rows: Sequence[tuple[str, Sequence[Span]]], ax: TimeAxis,
              legend: Sequence[tuple[str, str]], ml: float | None = None) -> str:
    """One row per device of coloured spans (window labels, busy fraction) on a time axis. Row names
    sit right-aligned in the left margin ``ml`` (default: :func:`label_margin` of the names), whole
    where they fit, else shortened in the middle (:func:`fit_label`) with the full name as <title>."""
    row_h, gap = 18, 6
    top = MT + 16
    ph = len(rows) * (row_h + gap)
    ml = label_margin([name for name, _ in rows]) if ml is None else ml
    pw = W - ml - MR
    body = [f'<text x="{ml:g}" y="{MT + 4}" class="ti">{esc(title)}</text>']

    def px(t: float) -> float:
        return ml + (t - ax.lo) / ((ax.hi - ax.lo) or 1.0) * pw
    for n, (name, spans) in enumerate(rows):
        y = top + n * (row_h + gap)
        short = fit_label(name, ml - 12)
        body.append(f'<text x="{ml - 6:g}" y="{y + 13}" text-anchor="end" class="tk">{esc(short)}'
                    f"<title>{esc(name)}</title></text>")
        body.append('<g class="row">' + "".join(
            f'<rect x="{px(s.t0):.1f}" y="{y}" width="{max(px(s.t1) - px(s.t0), 3.0):.1f}" height="{row_h}" '
            f'fill="{s.color}"><title>{esc(s.title)}</title></rect>' for s in spans) + "</g>")
    for t, lab in ax.ticks():
        x = px(t)
        body.append(f'<line x1="{x:.1f}" y1="{top + ph}" x2="{x:.1f}" y2="{top + ph + 4}" stroke="#444"/>'
                    f'<text x="{x:.1f}" y="{top + ph + 16:.0f}" text-anchor="{_anchor(x)}" class="tk">{esc(lab)}</text>')
    body.append(f'<text x="{ml + pw / 2:.0f}" y="{top + ph + 32:.0f}" text-anchor="middle" class="ax">'
                f"{esc(ax.title())}</text>")
    leg, lh = _legend([(n, c, False) for n, c in legend], top + ph + 52, ml)
    body += leg
    return _svg(top + ph + 44 + lh, "spanrows", body, title)


# ----------------------------------------------------------------------------- bars


def hbars(title: str, groups: Sequence[str], parts: Sequence[tuple[str, str]],
          values: Sequence[Mapping[str, float]], *, unit: str, x_max: float | None = None) -> str:
    """Horizontal stacked bars: one bar per group, one segment per part (``(name, colour)``)."""
    bar_h, gap, lw = 16, 5, 230
    top = MT + 40
    ph = len(groups) * (bar_h + gap)
    pw = W - ML - MR - lw
    x0 = ML + lw
    totals = [sum(max(float(v.get(p, 0.0) or 0.0), 0.0) for p, _ in parts) for v in values]
    hi = x_max if x_max is not None else value_range(totals)[1]
    body = [f'<text x="{ML}" y="{MT + 4}" class="ti">{esc(title)}</text>']
    leg, _ = _legend([(p, c, False) for p, c in parts if any((v.get(p) or 0) > 0 for v in values)], MT + 26)
    body += leg
    for v in linear_ticks(0.0, hi, 5):
        x = x0 + v / (hi or 1.0) * pw
        body.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}" stroke="#e9ecef"/>'
                    f'<text x="{x:.1f}" y="{top + ph + 14:.0f}" text-anchor="middle" class="tk">'
                    f"{esc(fmt_tick(v, unit))}</text>")
    for n, (g, vals) in enumerate(zip(groups, values, strict=True)):
        y = top + n * (bar_h + gap)
        short = g if len(g) <= 34 else g[:33] + "…"
        body.append(f'<text x="{x0 - 6}" y="{y + 12}" text-anchor="end" class="tk">{esc(short)}<title>{esc(g)}</title></text>')
        x = float(x0)
        for p, col in parts:
            v = float(vals.get(p, 0.0) or 0.0)
            if v <= 0:
                continue
            w = v / (hi or 1.0) * pw
            body.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{col}">'
                        f"<title>{esc(f'{g}: {p} {fmt_value(v, unit)}')}</title></rect>")
            x += w
    return _svg(top + ph + 24, "hbars", body, title)


def vbars(title: str, categories: Sequence[str], series: Sequence[tuple[str, str, Sequence[float], Sequence[str]]],
          *, unit: str, y_title: str, height: int = 300) -> str:
    """Grouped vertical bars: per category one bar per series ``(name, colour, values, hover texts)``."""
    top = MT + 16
    ph = height - top - MB - 10
    pw = W - ML - MR
    vals = [float(v) for _, _, vs, _ in series for v in vs if math.isfinite(float(v))]
    lo, hi = value_range(vals)
    body = [f'<text x="{ML}" y="{MT + 4}" class="ti">{esc(title)}</text>']
    grid, py = _y_axis(lo, hi, unit, top, ph, y_title)
    body += grid
    cw = pw / max(len(categories), 1)
    bw = cw * 0.8 / max(len(series), 1)
    for c, cat in enumerate(categories):
        body.append(f'<text x="{ML + (c + 0.5) * cw:.1f}" y="{top + ph + 15:.0f}" text-anchor="middle" class="tk">'
                    f"{esc(cat)}</text>")
        for s, (name, col, vs, tips) in enumerate(series):
            v = float(vs[c])
            if not math.isfinite(v) or v <= 0:
                continue
            y = py(v)
            body.append(f'<rect x="{ML + c * cw + cw * 0.1 + s * bw:.1f}" y="{y:.1f}" width="{bw:.1f}" '
                        f'height="{top + ph - y:.1f}" fill="{col}"><title>{esc(f"{name} · {cat}: {tips[c]}")}</title></rect>')
    body.append(f'<line x1="{ML}" y1="{top + ph}" x2="{W - MR}" y2="{top + ph}" stroke="#444"/>')
    leg, lh = _legend([(n, c, False) for n, c, _, _ in series], top + ph + 36)
    body += leg
    return _svg(top + ph + 28 + lh, "vbars", body, title)
