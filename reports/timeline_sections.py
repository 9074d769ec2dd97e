"""Report sections for timelines (nsys, PyTorch profiler): per-device busy/idle strip, gap
histogram, the device and step tables, and the ncu-joined waterfall. Drawn only from the
document's ``timeline``/``steps``/``waterfall`` (rules: docs/formulas.md#timelines)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rooftop.analyzer.schema import Document, Step, TimelineEntry
from rooftop.reports.escape import esc
from rooftop.reports.formatting import fmt_pct, fmt_time
from rooftop.reports.md_widgets import MdSection, md_table
from rooftop.reports.svg_axes import TimeAxis
from rooftop.reports.svg_charts import Span, color, figure_html, hbars, span_rows, vbars
from rooftop.reports.widgets import Column, Section, table

STEP_ROWS = 200
MD_STEP_ROWS = 20
_BUCKETS = ("< 1 µs", "1-10 µs", "10-100 µs", "0.1-1 ms", "1-10 ms", "10-100 ms", "0.1-1 s", "> 1 s")


def _where(e: Mapping[str, Any]) -> str:
    """``file · GPU n`` of a timeline entry or a waterfall row (both have ``input`` and ``device``)."""
    name = str(e.get("input") or "").rsplit("/", 1)[-1]
    dev = e.get("device")
    return f"{name} · GPU {dev}" if dev is not None else name


def _row(e: TimelineEntry) -> dict[str, Any]:
    gaps, sk, top = e["gaps"], e["short_kernels"], e["top_kernels"]
    return {"where": _where(e), "gpu": e["gpu_name"], "label": e["label"], "limiter": e["limiter"],
            "kernels": e["kernels"], "span": e["span_s"], "idle": e["idle_fraction"],
            "gaps": gaps["count"] if gaps else None, "short": sk["share_of_kernel_busy"] if sk else None,
            "top": top[0]["name"] if top else None, "evidence": "; ".join(e["evidence"])}


def _rows(entries: Sequence[TimelineEntry]) -> list[dict[str, Any]]:
    return [_row(e) for e in entries]


def top_ops_text(s: Step, n: int = 3) -> str | None:
    """``aten::mm 0.34 ms, aten::copy_ 0.21 ms`` (a ProfilerStep's largest ops by attributed GPU time)."""
    ops = s.get("top_ops")
    return ", ".join(f"{o['name']} {fmt_time(o['kernel_time_s'])}" for o in ops[:n]) if ops else None


def _step_rows(steps: Sequence[Step], n_ops: int = 3) -> list[dict[str, Any]]:
    """The step table's rows; with one input its name is said once above the table, not per row."""
    one = len({s["input"] for s in steps}) == 1
    return [{**_row(s), "step": s["name"], "wall": s["wall_s"], "top_ops": top_ops_text(s, n_ops),
             "where": f"GPU {s['device']}" if one else _where(s)} for s in steps]


def _steps_note(steps: Sequence[Step]) -> str:
    inputs = sorted({str(s["input"]).rsplit("/", 1)[-1] for s in steps})
    return f"input: {inputs[0]}" if len(inputs) == 1 else ""


_COLUMNS = [Column("where", "input · device", css="file"), Column("gpu", "GPU"), Column("label", "label"),
            Column("limiter", "limiter"), Column("kernels", "kernels", numeric=True),
            Column("span", "span", fmt_time, numeric=True), Column("idle", "idle", fmt_pct, numeric=True),
            Column("gaps", "gaps", numeric=True),
            Column("short", "short-kernel share", fmt_pct, numeric=True),
            Column("top", "top kernel", css="name"), Column("evidence", "evidence", css="name")]


def _busy_color(frac: float) -> str:
    """#f1f3f5 (idle) to the compute-bound blue (busy) on a square-root scale, so that a bin with a
    little work is still seen on a mostly idle strip (1 % busy is 10 % of the way)."""
    lo, hi = (0xF1, 0xF3, 0xF5), (0x19, 0x71, 0xC2)
    f = min(max(frac, 0.0), 1.0) ** 0.5
    return "#" + "".join(f"{round(a + (b - a) * f):02x}" for a, b in zip(lo, hi, strict=True))


def _strip_chart(entries: Sequence[TimelineEntry]) -> str | None:
    """Per device, its span in the document's bins, each coloured by its busy fraction (static SVG)."""
    rows = [(e, st) for e in entries if (st := e.get("busy_strip"))]
    if not rows:
        return None
    drawn = []
    end = 0.0
    for e, st in rows:
        frac, bin_s = list(st["busy_fraction"]), float(st["bin_s"])
        end = max(end, bin_s * len(frac))
        spans: list[Span] = []
        for i, f in enumerate(frac):
            pct = round(100 * float(f))
            if spans and spans[-1].title.endswith(f"busy {pct}%"):
                last = spans.pop()
                spans.append(Span(last.t0, (i + 1) * bin_s, last.color,
                                  f"{fmt_time(last.t0)} – {fmt_time((i + 1) * bin_s)}: busy {pct}%"))
            else:
                spans.append(Span(i * bin_s, (i + 1) * bin_s, _busy_color(float(f)),
                                  f"{fmt_time(i * bin_s)} – {fmt_time((i + 1) * bin_s)}: busy {pct}%"))
        drawn.append((_where(e), spans))
    svg = span_rows("GPU busy / idle per device", drawn, TimeAxis(0.0, end or 1.0, epoch=False),
                    [("idle", _busy_color(0.0)), ("50 % busy", _busy_color(0.5)), ("busy", _busy_color(1.0))])
    return figure_html(svg, "Each device's span from its first to its last GPU activity in the document's equal "
                       "bins, coloured by the share of the bin the GPU was busy (kernels, copies, sets; square-root "
                       "scale, so a little work still shows); hover a stretch for its times and share.")


def _gap_chart(entries: Sequence[TimelineEntry]) -> str | None:
    rows = [(e, h) for e in entries if (h := e.get("gap_histogram")) and sum(h["count"])]
    if not rows:
        return None
    series = [(_where(e), color(n), [float(v) for v in h["idle_s"]],
               [f"{c} gaps, {fmt_time(s)} idle" for c, s in zip(h["count"], h["idle_s"], strict=True)])
              for n, (e, h) in enumerate(rows)]
    svg = vbars("Idle gaps between GPU activity", list(_BUCKETS), series, unit="s",
                y_title="idle seconds in gaps of this length")
    return figure_html(svg, "Idle seconds between GPU activity, by gap length (the document's gap histogram); "
                       "hover a bar for the number of gaps.")


def timeline_sections(doc: Document) -> list[Section] | None:
    """Busy strip, gap histogram and table per input and device; steps; the waterfall."""
    entries = doc.get("timeline") or []
    if not entries:
        return None
    charts = "".join(f for f in (_strip_chart(entries), _gap_chart(entries)) if f)
    body = ('<p class="note">Per input and device: where the span between the first and the last GPU '
            "activity went (kernels, copies, idle gaps), and the label the rules give it "
            "(docs/formulas.md#timelines). Summary-only inputs (nsys stats) have no time axis.</p>"
            + charts + f'<div class="tablewrap">{table(_rows(entries), _COLUMNS)}</div>')
    out = [Section("Timelines", body, anchor="timelines")]
    steps = doc.get("steps") or []
    if steps:
        one = len({x["input"] for x in steps}) == 1
        cols = [Column("step", "step / range", css="name"), Column("wall", "wall", fmt_time, numeric=True),
                Column("where", "device" if one else "input · device", css="" if one else "file"), *_COLUMNS[2:-2],
                *([Column("top_ops", "top ops (GPU time)", css="name")] if any(s.get("top_ops") for s in steps)
                  else [])]
        note = "; ".join(n for n in (_steps_note(steps), "" if len(steps) <= STEP_ROWS else
                                     f"first {STEP_ROWS} of {len(steps)}") if n)
        out.append(Section("Steps", table(_step_rows(steps[:STEP_ROWS]), cols), anchor="steps", note=note))
    wf = waterfall_section(doc)
    if wf is not None:
        out.append(wf)
    return out


def waterfall_section(doc: Document) -> Section | None:
    """Where each device's wall time goes, joined to ncu (``waterfall``)."""
    parts = doc.get("waterfall") or []
    if not parts:
        return None
    names = list(dict.fromkeys(str(p["part"]) for w in parts for p in w["parts"]))
    svg = hbars("Wall time: at the roofline, above it, idle", [_where(w) for w in parts],
                [(n, color(i)) for i, n in enumerate(names)],
                [{str(p["part"]): float(p["seconds"] or 0.0) for p in w["parts"]} for w in parts], unit="s")
    chart = figure_html(svg, "Each device's wall time split into the document's parts (one segment each, in "
                        "order); hover a segment for its seconds.")
    rows = [{"where": _where(w), "part": p["part"], "seconds": p["seconds"], "share": p.get("share"),
             "why": p.get("why")} for w in parts for p in w["parts"]]
    body = table(rows, [Column("where", "input · device", css="file"), Column("part", "part"),
                        Column("seconds", "seconds", fmt_time, numeric=True),
                        Column("share", "share of span", fmt_pct, numeric=True), Column("why", "rule", css="name")])
    return Section("Waterfall (timeline + ncu)", '<p class="note">' + esc(
        "Kernel time at its roofline is the floor for this algorithm; time above it is recoverable by "
        "fixing the kernel's limiter; idle gaps are recoverable by launching, syncing or feeding the GPU "
        "differently (docs/formulas.md#timelines).") + "</p>" + chart + body, anchor="waterfall")


def timeline_md_sections(doc: Document) -> list[MdSection] | None:
    """The timeline, step and waterfall tables for a ticket."""
    entries = doc.get("timeline") or []
    if not entries:
        return None
    cols: list[Any] = [("where", "input · device"), ("label", "label"), ("limiter", "limiter"),
                       ("kernels", "kernels"), ("span", "span", fmt_time), ("idle", "idle", fmt_pct),
                       ("gaps", "gaps"), ("short", "short-kernel share", fmt_pct), ("top", "top kernel")]
    out = [MdSection("Timelines", md_table(_rows(entries), cols, limit=120)
                     + "\n\nRules: docs/formulas.md#timelines.")]
    steps = doc.get("steps") or []
    if steps:
        more = f"\n\nFirst {MD_STEP_ROWS} of {len(steps)}." if len(steps) > MD_STEP_ROWS else ""
        head = f"{_steps_note(steps)}.\n\n" if _steps_note(steps) else ""
        where = ("where", "device" if head else "input · device")
        ops_col = [("top_ops", "top ops")] if any(s.get("top_ops") for s in steps) else []
        out.append(MdSection("Steps", head + md_table(_step_rows(steps[:MD_STEP_ROWS], 2),
                                                      [("step", "step / range"), ("wall", "wall", fmt_time),
                                                       where, *cols[1:], *ops_col], limit=120) + more))
    parts = doc.get("waterfall") or []
    if parts:
        rows = [{"where": _where(w), "part": p["part"], "seconds": p["seconds"], "share": p.get("share")}
                for w in parts for p in w["parts"]]
        out.append(MdSection("Waterfall (timeline + ncu)", md_table(
            rows, [("where", "input · device"), ("part", "part"), ("seconds", "seconds", fmt_time),
                   ("share", "share of span", fmt_pct)])))
    return out
