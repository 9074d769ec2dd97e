"""Sections of the ``rooftop analyze`` report (HTML and Markdown): summary, roofline, kernel table,
top kernels. Rendered only from the document dict."""

from __future__ import annotations

from typing import Any

from rooftop.reports.common_sections import devices_table
from rooftop.reports.formatting import fmt_num, fmt_pct, fmt_time, kernel_label_shares, num
from rooftop.reports.md_widgets import MdSection, md_table
from rooftop.reports.roofline import roofline_figure
from rooftop.reports.widgets import Column, Section, esc, kpi, share_bar, table

LABELS = ("compute-bound", "memory-bound", "overhead-bound", "unknown")


TABLE_ROWS = 500          # per-kernel table: top rows by time (full data in the JSON output)
TOP_KERNELS = 10


NAME_LIMIT = 120   # kernel names in the top-kernels table


def _kernels(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return list(doc.get("kernels") or [])


def summary_section(doc: dict[str, Any]) -> Section:
    """Device, ceilings and where they came from, totals, label shares."""
    kernels = _kernels(doc)
    shares, total = kernel_label_shares(kernels)
    families = {k.get("family") for k in kernels if k.get("family") is not None}
    windows = doc.get("windows") or []
    kpis = [kpi(str(len(kernels)), "kernel launches")]
    if kernels:
        kpis += [kpi(fmt_time(total), "total kernel time"), kpi(str(len(families)), "kernel families")]
    if windows:
        kpis.append(kpi(str(len(windows)), "DCGM windows"))
    kpis += [kpi(str(len(doc.get("findings") or [])), "findings"),
             kpi(str(len(doc.get("rejected") or [])), "rejected records")]
    body = [f'<div class="kpis">{"".join(kpis)}</div>']
    if kernels:
        body.append("<h3>Share of kernel time by label</h3>")
        body.append(share_bar(shares, LABELS))
    body.append("<h3>Devices and ceilings</h3>")
    body.append(devices_table(doc))
    return Section("Summary", "".join(body), anchor="summary")


def roofline_section(doc: dict[str, Any]) -> Section | None:
    kernels = _kernels(doc)
    if not kernels and not any(num(w.get("est_flops_s")) for w in doc.get("windows") or []):
        return None
    fig, note = roofline_figure(doc)
    body = ('<p class="note">Log-log hierarchical roofline. One marker per kernel family and memory '
            "level (DRAM ●, L2 ■, L1 ◆), sized by time, coloured by label; click a legend group to "
            "toggle a level. Horizontal lines: compute ceilings per precision; slopes: bandwidth "
            f"ceilings; ✕: ridge points. {esc(note)}</p>")
    return Section("Roofline", body, plots=[fig], anchor="roofline")


def kernel_table_section(doc: dict[str, Any]) -> Section | None:
    kernels = _kernels(doc)
    if not kernels:
        return None
    order = sorted(range(len(kernels)), key=lambda i: -(num(kernels[i].get("duration_s")) or 0.0))
    _, total = kernel_label_shares(kernels)
    rows = []
    for pos in order[:TABLE_ROWS]:
        k = kernels[pos]
        d = num(k.get("duration_s"))
        inten = k.get("intensity") or {}
        rows.append({
            "pos": pos, "name": k.get("name"), "family": k.get("family"), "label": k.get("label"),
            "limiter": k.get("limiter"), "duration_s": d,
            "share": (d / total) if (d is not None and total > 0) else None,
            "achieved": num(k.get("achieved_flops_s")), "attainable": num(k.get("attainable_flops_s")),
            "ai_dram": num(inten.get("dram")), "ai_l2": num(inten.get("l2")),
            "ai_l1": num(inten.get("l1")), "input": k.get("input"), "index": k.get("index"),
        })
    cols = [Column("pos", "#", numeric=True), Column("name", "kernel", css="name"),
            Column("family", "family", css="name"),
            Column("label", "label"), Column("limiter", "limiter"),
            Column("duration_s", "duration", fmt_time, numeric=True),
            Column("share", "share", fmt_pct, numeric=True),
            Column("achieved", "FLOP/s", fmt_num, numeric=True),
            Column("attainable", "attainable", fmt_num, numeric=True),
            Column("ai_dram", "AI DRAM", fmt_num, numeric=True),
            Column("ai_l2", "AI L2", fmt_num, numeric=True),
            Column("ai_l1", "AI L1", fmt_num, numeric=True),
            Column("input", "input"), Column("index", "launch", numeric=True)]
    html_table = table(rows, cols, css_class="kernels")
    note = (f"Top {TABLE_ROWS} of {len(kernels)} launches by duration; every launch is in the JSON "
            "output (--json)." if len(kernels) > TABLE_ROWS else
            f"All {len(kernels)} launches. Click a header to sort.")
    return Section("Kernels", f'<p class="note">{esc(note)}</p><div class="tablewrap">{html_table}</div>',
                   anchor="kernels")


def top_kernels_md_section(doc: dict[str, Any]) -> MdSection | None:
    kernels = doc.get("kernels") or []
    if not kernels:
        return None
    total = sum(num(k.get("duration_s")) or 0.0 for k in kernels)
    top = sorted(kernels, key=lambda k: -(num(k.get("duration_s")) or 0.0))[:TOP_KERNELS]
    rows = [{"name": k.get("name"), "label": k.get("label"), "limiter": k.get("limiter"),
             "d": k.get("duration_s"),
             "share": (num(k.get("duration_s")) or 0.0) / total if total > 0 else None,
             "flops": k.get("achieved_flops_s"), "ai": (k.get("intensity") or {}).get("dram")}
            for k in top]
    cols: list[Any] = [("name", "kernel"), ("label", "label"), ("limiter", "limiter"),
                       ("d", "duration", fmt_time), ("share", "share", fmt_pct),
                       ("flops", "FLOP/s", lambda v: fmt_num(v)), ("ai", "AI DRAM", lambda v: fmt_num(v))]
    more = f"\n\n_Top {TOP_KERNELS} of {len(kernels)} launches by duration._" if len(kernels) > TOP_KERNELS else ""
    return MdSection("Top kernels", md_table(rows, cols, limit=NAME_LIMIT) + more)
