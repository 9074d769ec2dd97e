"""Report sections for the ops of a PyTorch trace (docs/formulas.md#ops): coverage per device, the op
roofline per device, the sortable op table with a category filter, the ncu cross-check; Markdown: the
coverage and the top ops. Drawn only from the document's ``ops``, ``ops_coverage`` and ``ops_ncu``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rooftop.analyzer.schema import Document
from rooftop.analyzer.schema.ops import OpEntry, OpsCoverage
from rooftop.reports.escape import esc
from rooftop.reports.formatting import fmt_num, fmt_pct, fmt_time
from rooftop.reports.md_widgets import MdSection, md_table
from rooftop.reports.svg_charts import color, figure_html, hbars
from rooftop.reports.svg_ops import describe, key_html, ops_roofline_svg
from rooftop.reports.widgets import Column, Section, table

TABLE_ROWS = 300
MD_ROWS = 10


def _where(e: OpEntry | OpsCoverage) -> str:
    return f"{str(e['input']).rsplit('/', 1)[-1]} · GPU {e['device']}"


def _interval(lo: Any, hi: Any, unit: str = "") -> str:
    """``881 G–1.22 P`` (the unit is in the column header)."""
    if lo is None:
        return "—"
    return fmt_num(lo, unit) if hi is None or hi == lo else f"{fmt_num(lo, unit)}–{fmt_num(hi, unit)}"


def _coverage_rows(cov: Sequence[OpsCoverage]) -> list[dict[str, Any]]:
    return [{"where": _where(c), "gpu": c["gpu_name"], "roof": c["roof_device"], "gpu_time": c["gpu_time_s"],
             "attributed": c["attributed"], "of_all": c["attributed_of_all"], "modelled": c["modelled"],
             "unattributed": "; ".join(f"{u['reason']} {fmt_time(u['time_s'])}" for u in c["unattributed"]) or "—",
             "unmodelled": "; ".join(f"{u['name']} {fmt_time(u['time_s'])} ({u['reason']})"
                                     for u in c["unmodelled"][:3]) or "—"} for c in cov]


_COVERAGE = [Column("where", "input · device", css="file"), Column("gpu", "GPU"), Column("roof", "roofs of"),
             Column("gpu_time", "GPU time", fmt_time, numeric=True),
             Column("attributed", "attributed (of launched)", fmt_pct, numeric=True),
             Column("of_all", "attributed (of all)", fmt_pct, numeric=True),
             Column("modelled", "modelled (of attributed)", fmt_pct, numeric=True),
             Column("unattributed", "not attributed", css="name"), Column("unmodelled", "not modelled", css="name")]


CATEGORY_ORDER = ("gemm", "conv", "attention", "softmax", "norm", "reduce", "elementwise", "embedding", "copy",
                  "communication", "other", "unattributed")


def split_text(c: OpsCoverage, limit: int | None = None) -> str:
    """``gemm 41.2% · attention 12.0% · … · unattributed 3.1%`` (largest first; the document's order)."""
    rows = c["categories"]
    shown = rows if limit is None else [r for r in rows if r["category"] != "unattributed"][:limit]
    text = " · ".join(f"{r['category']} {fmt_pct(r['share'])}" for r in shown)
    rest = len(rows) - len(shown) - (0 if limit is None else sum(r["category"] == "unattributed" for r in rows))
    un = next((r for r in rows if r["category"] == "unattributed"), None)
    if limit is not None and rest > 0:
        text += f" · {rest} more"
    if limit is not None and un is not None:
        text += f" · unattributed {fmt_pct(un['share'])}"
    return text


def _status(c: OpsCoverage) -> str:
    if c["categories_status"] == "known":
        return "known"
    return (f"unknown: {fmt_pct(c['attributed_of_all'])} of GPU time attributed (under 95 %; "
            + "; ".join(f"{u['reason']} {fmt_time(u['time_s'])}" for u in c["unattributed"]) + ")")


def category_section(cov: Sequence[OpsCoverage]) -> Section | None:
    """GPU time by op category per device: one stacked bar each and the split in words
    (docs/formulas.md#op-categories)."""
    cov = [c for c in cov if c["categories"]]
    if not cov:
        return None
    parts = [(cat, "#adb5bd" if cat == "unattributed" else color(i)) for i, cat in enumerate(CATEGORY_ORDER)]
    svg = hbars("GPU time by op category", [_where(c) for c in cov], parts,
                [{str(r["category"]): float(r["time_s"] or 0.0) for r in c["categories"]} for c in cov], unit="s")
    chart = figure_html(svg, "Each device's GPU time (kernels, copies, sets) by the category of the op that "
                             "launched it; grey: no op launched it (hover for the seconds).")
    rows = [{"where": _where(c), "status": _status(c), "split": split_text(c)} for c in cov]
    body = table(rows, [Column("where", "input · device", css="file"), Column("status", "split", css="name"),
                        Column("split", "share of GPU time by category", css="name")])
    return Section("GPU time by op category", '<p class="note">' + esc(
        "Kernel time attributed to the op that launched it, summed by the op's category; the split is 'unknown' "
        "where under 95 % of the GPU time was attributed (CUDA-graph replay, work launched before the capture): "
        "the shares are then lower bounds (docs/formulas.md#op-categories).") + "</p>" + chart + body,
        anchor="op-categories")


def _op_row(o: OpEntry) -> dict[str, Any]:
    ib = o["achieved_bytes_per_s"] or [None, None]
    inten = o["intensity"] or [None, None]
    return {"op": describe(o), "category": o["category"], "calls": o["calls"], "kernels": o["kernels"],
            "time": o["kernel_time_s"], "share": o["time_share"], "flops": o["flops"],
            "bytes": _interval(o["bytes_min"], o["bytes_max"]),
            "intensity": _interval(inten[0], inten[1]) if o["flops"] else "—",
            "achieved": o["achieved_flops_per_s"], "bw": _interval(ib[0], ib[1]),
            "label": o["label"], "limiter": o["limiter"], "pct": o["pct_of_roof"],
            "why": o["unmodelled"] or "; ".join(o["evidence"][:2]), "where": _where(o)}


_OPS = [Column("op", "op (name, shape, dtype)", css="name"), Column("category", "category"),
        Column("calls", "calls", numeric=True), Column("time", "GPU time", fmt_time, numeric=True),
        Column("share", "share", fmt_pct, numeric=True), Column("flops", "FLOPs", fmt_num, numeric=True),
        Column("bytes", "bytes, compulsory–no reuse"), Column("intensity", "FLOP/B"),
        Column("achieved", "FLOP/s", lambda v: fmt_num(v, "FLOP/s"), numeric=True),
        Column("bw", "B/s"), Column("label", "label"), Column("limiter", "limiter"),
        Column("pct", "% of roof", fmt_pct, numeric=True), Column("why", "evidence / why unmodelled", css="name"),
        Column("where", "input · device", css="file")]


def _filters(rows: Sequence[dict[str, Any]]) -> str:
    cats = sorted({str(r["category"]) for r in rows})
    opts = "".join(f'<option value="{esc(c)}">{esc(c)}</option>' for c in cats)
    return ('<div class="tfilter"><input type="search" class="tsearch" placeholder="search op, shape, label…" '
            'aria-label="search the op table"> <select class="tlabel" data-col="category" '
            f'aria-label="category filter"><option value="">all categories</option>{opts}</select> '
            '<span class="note tcount"></span></div>')


def ops_sections(doc: Document) -> list[Section] | None:
    """Coverage, one op roofline per device, the op table; the ncu cross-check when there is one."""
    cov = doc.get("ops_coverage") or []
    if not cov:
        return None
    ops = doc.get("ops") or []
    body = ['<p class="note">Every GPU kernel attributed to the PyTorch op that launched it, FLOPs and bytes from '
            "the op's recorded shapes, a verdict per op signature (docs/formulas.md#ops). Bytes are an interval: "
            "compulsory (each tensor once) to no reuse; a label only where the whole interval is on one side of "
            "the ridge.</p>", f'<div class="tablewrap">{table(_coverage_rows(cov), _COVERAGE)}</div>']
    for c in cov:
        mine = [o for o in ops if o["input"] == c["input"] and o["device"] == c["device"]]
        svg = ops_roofline_svg(mine, f"op roofline {_where(c)}")
        if svg:
            body.append(f"<h3>{esc(_where(c))}</h3>" + figure_html(
                svg, "Each op signature with FLOPs: a segment at its achieved FLOP/s across its intensity interval "
                     "(no reuse to compulsory bytes), the dot at the compulsory end, coloured by label; the roofs "
                     "are the ones it was judged against. Hover for the numbers.") + key_html(mine))
    cats = category_section(cov)
    out = [*([cats] if cats else []), Section("Ops on the roofline (PyTorch trace)", "".join(body), anchor="ops")]
    if ops:
        ranked = sorted(ops, key=lambda o: -(o["kernel_time_s"] or 0.0))
        rows = [_op_row(o) for o in ranked[:TABLE_ROWS]]
        note = (f"The {TABLE_ROWS} longest of {len(ops)} op signatures; all are in the JSON (--json)."
                if len(ops) > TABLE_ROWS else f"All {len(ops)} op signatures. Click a header to sort.")
        out.append(Section("Op table", f'<p class="note">{esc(note)}</p>{_filters(rows)}'
                                       f'<div class="tablewrap">{table(rows, _OPS, css_class="ops")}</div>',
                           anchor="op-table"))
    ncu = ncu_section(doc)
    if ncu is not None:
        out.append(ncu)
    return out


def ncu_section(doc: Document) -> Section | None:
    """The op model against the ncu counters, per category (``ops_ncu``)."""
    pairs = doc.get("ops_ncu") or []
    rows = [{"input": str(p["input"]).rsplit("/", 1)[-1], **c} for p in pairs for c in p["categories"]]
    if not rows:
        return None
    cols = [Column("input", "trace", css="file"), Column("category", "category"), Column("calls", "calls", numeric=True),
            Column("model_flops", "model FLOPs", fmt_num, numeric=True),
            Column("measured_flops", "ncu FLOPs", fmt_num, numeric=True),
            Column("flops_error", "FLOP error", fmt_pct, numeric=True),
            Column("model_bytes_min", "model bytes (compulsory)", lambda v: fmt_num(v, "B"), numeric=True),
            Column("model_bytes_max", "model bytes (no reuse)", lambda v: fmt_num(v, "B"), numeric=True),
            Column("measured_dram_bytes", "ncu DRAM bytes", lambda v: fmt_num(v, "B"), numeric=True),
            Column("dram_in_interval", "calls inside the interval", fmt_pct, numeric=True)]
    matched = ", ".join(f"{p['kernels_matched']} kernels matched, {p['kernels_unmatched']} not" for p in pairs)
    return Section("Ops against ncu", f'<p class="note">{esc(matched)} (docs/formulas.md#op-ncu).</p>'
                                      + table(rows, cols), anchor="ops-ncu")


def ops_md_sections(doc: Document) -> list[MdSection] | None:
    """Coverage per device and the top op signatures by GPU time."""
    cov = doc.get("ops_coverage") or []
    if not cov:
        return None
    lines = md_table(_coverage_rows(cov), [("where", "input · device"), ("attributed", "attributed", fmt_pct),
                                           ("of_all", "of all GPU time", fmt_pct), ("modelled", "modelled", fmt_pct),
                                           ("unattributed", "not attributed"), ("unmodelled", "not modelled")])
    ops = sorted(doc.get("ops") or [], key=lambda o: -(o["kernel_time_s"] or 0.0))[:MD_ROWS]
    out = [MdSection("Op coverage", lines)]
    split = [{"where": _where(c), "status": c["categories_status"], "split": split_text(c)} for c in cov
             if c["categories"]]
    if split:
        out.append(MdSection("GPU time by op category", md_table(split, [
            ("where", "input · device"), ("status", "split"), ("split", "share of GPU time by category")])
            + "\n\n'unknown': under 95 % of the GPU time attributed, the shares are lower bounds "
              "(docs/formulas.md#op-categories)."))
    if ops:
        out.append(MdSection("Top ops", md_table([_op_row(o) for o in ops], [
            ("op", "op"), ("category", "category"), ("calls", "calls"), ("time", "GPU time", fmt_time),
            ("share", "share", fmt_pct), ("intensity", "FLOP/B"), ("label", "label"), ("limiter", "limiter"),
            ("pct", "% of roof", fmt_pct)])))
    return out
