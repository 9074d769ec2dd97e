"""The op roofline of one device as a static SVG (docs/formulas.md#op-verdicts): draws the document's ``ops``
entries and decides nothing. Roofs are the ones the entries were judged against (their ``roof``: compute
peaks as horizontal lines, DRAM / L2 bandwidths as diagonals); each op signature with FLOPs is a horizontal
segment at its achieved FLOP/s spanning its intensity interval [FLOPs / bytes_max, FLOPs / bytes_min], with a
marker at the compulsory end, coloured by label; the five largest by time are numbered and named in the key.
"""

from __future__ import annotations

from collections.abc import Sequence

from rooftop.analyzer.schema.ops import OpEntry
from rooftop.reports.escape import esc
from rooftop.reports.formatting import fmt_num, fmt_pct
from rooftop.reports.svg_roofline import ML, MT, H, W, _Axes, _axes_svg, _decades
from rooftop.reports.widgets import LABEL_COLORS

MR = 250  # right margin: the roof labels (the frame, grid and other margins are the kernel roofline's)
BW_COLORS = {"dram": "#c2255c", "l2": "#e8590c"}
LABELLED = 5
NAME_IN_KEY = 90
ROOF_NAMES = {"tensor": "FP16 tensor", "bf16": "BF16 tensor", "fp8": "FP8 tensor", "tf32": "TF32 tensor",
              "int8": "INT8 tensor", "fp64_tensor": "FP64 tensor", "fp32": "FP32", "fp64": "FP64", "fp16": "FP16",
              "dram": "DRAM", "l2": "L2"}


def _f(v: float | None) -> float:
    """A document number (``Num``) the caller has checked is there."""
    return float(v) if v is not None else 0.0


def _span(o: OpEntry) -> tuple[float, float]:
    lo, hi = o["intensity"] or [None, None]
    return _f(lo), _f(hi)


def placed(ops: Sequence[OpEntry]) -> list[OpEntry]:
    """The op signatures a log-log roofline can show: FLOPs, an intensity interval and a rate."""
    return [o for o in ops if o["flops"] and o["intensity"] and o["achieved_flops_per_s"]
            and all(v and v > 0 for v in o["intensity"])]


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(o: OpEntry) -> str:
    dtype = next((t for t in (o["input_types"] or []) if t not in ("", "Scalar", "ScalarList", "TensorList")), "")
    return " ".join(x for x in (o["name"], o["shape"] or "", str(dtype).replace("c10::", "")) if x)


def ops_roofline_svg(ops: Sequence[OpEntry], title: str = "") -> str | None:
    """The roofline of ``ops`` (one device's entries), or None when none can be placed."""
    pts = placed(ops)
    if not pts:
        return None
    peaks = sorted({(str(o["roof"].get("compute")), _f(o["roof"].get("peak_flops"))) for o in pts
                    if o["roof"].get("peak_flops")}, key=lambda kv: -kv[1])
    bws = sorted({(str(o["roof"].get("level")), _f(o["roof"].get("bandwidth"))) for o in pts
                  if o["roof"].get("bandwidth")}, key=lambda kv: -kv[1])
    xs = [v for o in pts for v in _span(o)] + [p / b for _, p in peaks for _, b in bws]
    ys = [_f(o["achieved_flops_per_s"]) for o in pts] + [p for _, p in peaks]
    ax = _Axes(_decades(min(xs), max(xs)), _decades(min(ys), max(ys)), mr=MR)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
           f'role="img" aria-label="{esc(title or "op roofline")}">',
           "<style>.tk{font:11px sans-serif;fill:#555}.ax{font:12px sans-serif;fill:#333}"
           ".rl{font:11px sans-serif}.nm{font:bold 11px sans-serif}</style>"]
    out += _axes_svg(ax, "arithmetic intensity (FLOP/byte): each op a segment from its no-reuse to its "
                         "compulsory bytes", x_tick=lambda e: f"{10.0 ** e:g}")
    out += _roofs(ax, peaks, bws)
    ranked = sorted(pts, key=lambda o: -_f(o["kernel_time_s"]))
    for o in reversed(ranked):  # the largest drawn last, on top
        lo, hi = _span(o)
        y = ax.py(_f(o["achieved_flops_per_s"]))
        color = LABEL_COLORS.get(o["label"], "#868e96")
        tip = esc(f"{describe(o)}\n{o['label']} / {o['limiter']}"
                  + (f" at {fmt_pct(o['pct_of_roof'])} of its roof" if o["pct_of_roof"] is not None else "")
                  + f"\n{fmt_num(o['achieved_flops_per_s'], 'FLOP/s')} · {lo:.3g}–{hi:.3g} FLOP/B"
                  f"\n{o['calls']} call(s), {fmt_pct(o['time_share'])} of the GPU time")
        out.append(f'<g><title>{tip}</title><line x1="{ax.px(lo):.1f}" y1="{y:.1f}" x2="{ax.px(hi):.1f}" '
                   f'y2="{y:.1f}" stroke="{color}" stroke-width="2" opacity="0.7"/>'
                   f'<circle cx="{ax.px(hi):.1f}" cy="{y:.1f}" r="5" fill="{color}" stroke="#fff"/></g>')
    for n, o in enumerate(ranked[:LABELLED], start=1):
        hi = _span(o)[1]
        out.append(f'<text x="{ax.px(hi) + 7:.1f}" y="{ax.py(_f(o["achieved_flops_per_s"])) - 6:.1f}" '
                   f'class="nm">{n}</text>')
    out.append("</svg>")
    return "".join(out)


def key_html(ops: Sequence[OpEntry]) -> str:
    """The numbered op signatures under the chart."""
    ranked = sorted(placed(ops), key=lambda o: -_f(o["kernel_time_s"]))[:LABELLED]
    items = "".join(f"<li>{esc(_short(describe(o), NAME_IN_KEY))}: {esc(o['label'])} ({esc(o['limiter'])})</li>"
                    for o in ranked)
    return f'<ol class="note">{items}</ol>' if items else ""


def _roofs(ax: _Axes, peaks: Sequence[tuple[str, float]], bws: Sequence[tuple[str, float]]) -> list[str]:
    out = []
    xmin, xmax = 10.0 ** ax.x0, 10.0 ** ax.x1
    top = 10.0 ** ax.y1
    for i, (level, bw) in enumerate(bws):
        x_start, x_end = max(xmin, 10.0 ** ax.y0 / bw), min(xmax, top / bw)
        color = BW_COLORS.get(level, "#495057")
        if x_end > x_start:
            out.append(f'<line x1="{ax.px(x_start):.1f}" y1="{ax.py(x_start * bw):.1f}" x2="{ax.px(x_end):.1f}" '
                       f'y2="{ax.py(x_end * bw):.1f}" stroke="{color}" stroke-width="1.5"/>')
        out.append(f'<text x="{W - MR + 8}" y="{MT + 14 + 16 * i}" class="rl" fill="{color}">'
                   f'{esc(ROOF_NAMES.get(level, level))} {esc(fmt_num(bw, "B/s"))}</text>')
    for j, (key, peak) in enumerate(peaks):
        y = ax.py(peak)
        out.append(f'<line x1="{ML}" y1="{y:.1f}" x2="{ML + ax.pw}" y2="{y:.1f}" stroke="#1971c2" '
                   f'stroke-dasharray="6 3" stroke-width="1.5"/>')
        out.append(f'<text x="{W - MR + 8}" y="{MT + 14 + 16 * (len(bws) + j)}" class="rl" fill="#1971c2">'
                   f'{esc(ROOF_NAMES.get(key, key))} {esc(fmt_num(peak, "FLOP/s"))}</text>')
    return out
