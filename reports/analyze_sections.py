"""Sections of the ``rooftop analyze`` report (HTML and Markdown): summary, roofline, kernel table,
top kernels. Rendered only from the document (``Document``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast
from urllib.parse import quote

from rooftop.analyzer.schema import (
    KERNEL_LABELS,
    Document,
    FamilyRow,
    Kernel,
    RooflinePanel,
    WindowPanel,
)
from rooftop.reports.common_sections import devices_table
from rooftop.reports.escape import esc
from rooftop.reports.escape import md as md_esc
from rooftop.reports.formatting import (
    DASH,
    fmt_num,
    fmt_pct,
    fmt_time,
    kernel_label_shares,
    kernel_time,
    launches_each,
    num,
)
from rooftop.reports.md_widgets import MdSection, md_table
from rooftop.reports.svg_bandwidth import bandwidth_svg
from rooftop.reports.svg_roofline import roofline_svg, window_roofline_svg
from rooftop.reports.widgets import Column, Section, kpi, share_bar, table

TOP_KERNELS = 10


NAME_LIMIT = 120   # kernel names in the top-kernels table


def family_rows(doc: Document) -> list[FamilyRow]:
    """The analyze document's family rows (``doc["families"]``; a diff document's families are its
    own rows, drawn by ``diff_sections``, and it has no roofline view to draw them in)."""
    if doc["kind"] == "diff":
        return []
    return cast("list[FamilyRow]", doc.get("families") or [])


def summary_section(doc: Document) -> Section:
    """Totals and label shares (devices and ceilings are in the collapsed :func:`devices_section`)."""
    kernels = doc["kernels"]
    shares, total = kernel_label_shares(kernels)
    families = {k["family"] for k in kernels}
    windows = doc["windows"]
    traced = [t for t in doc.get("timeline") or [] if isinstance(t["kernels"], int)]
    kpis = []
    if kernels or not (windows or traced):  # ncu launches; a DCGM or trace page is not "0 launches"
        kpis.append(kpi(f"{sum(launches_each(kernels).tolist()):.0f}", "kernel launches"))
    if kernels:
        known = any(num(k["duration_s"]) is not None for k in kernels)
        kpis += [kpi(fmt_time(total) if known else "unknown", "total kernel time"),
                 kpi(str(len(families)), "kernel families")]
    if traced:
        kpis.append(kpi(str(sum(t["kernels"] or 0 for t in traced)), "traced kernels"))
    if windows:
        kpis.append(kpi(str(len(windows)), "DCGM windows"))
    kpis += [kpi(str(len(doc["findings"])), "findings"),
             kpi(str(len(doc["rejected"])), "rejected records")]
    body = [f'<div class="kpis">{"".join(kpis)}</div>']
    if kernels and total > 0:
        body.append("<h3>Share of kernel time by label</h3>")
        body.append(share_bar(shares, KERNEL_LABELS))
    elif kernels:
        body.append('<p class="note">No launch has a duration in the export: GPU time and its shares are unknown.</p>')
    return Section("Summary", "".join(body), anchor="summary")


def panel_title(panel: RooflinePanel | WindowPanel) -> str:
    """``device — ceilings: FP32, DRAM from export; FP16 from builtin`` (which entry each ceiling is)."""
    by: dict[str, list[str]] = {}
    for c in panel["ceilings"]:
        by.setdefault(str(c["source"]), []).append(c["name"])
    what = "; ".join(f"{', '.join(names)} from {src}" for src, names in by.items()) or "no ceilings known"
    return f"{panel['device']} — {panel.get('kernels')} launch(es) — ceilings: {what}"


def _level_toggles(pid: str) -> str:
    boxes = "".join(f'<input type="checkbox" class="t-{lvl}" id="{esc(pid)}-{lvl}" checked>'
                    f'<label for="{esc(pid)}-{lvl}">{name}</label>'
                    for lvl, name in (("dram", "DRAM ●"), ("l2", "L2 ■"), ("l1", "L1 ◆")))
    return f'<span class="note">levels:</span>{boxes}'


def _panel_html(p: RooflinePanel, families: Sequence[FamilyRow]) -> str:
    """A kernel roofline panel: title, level toggles, the chart, what could not be placed."""
    pid = p["id"]
    title = panel_title(p)
    note = ""
    more = len(p["families"]) - len(p["placed"])
    if more > 0:
        note += f" {more} famil{'y' if more == 1 else 'ies'} of this chart cannot be placed (no FLOPs or bytes)."
    html = _chart_html(pid, title, _level_toggles(pid), roofline_svg(p, families, title=title), note) \
        if p["placed"] else ""
    bw = bandwidth_svg(p, families, title=f"{title} — kernels without FLOPs")
    if bw:
        html += (f'<div class="rf"><h3>{esc(p["device"])} — kernels without FLOPs measured: achieved bandwidth</h3>'
                 '<p class="note">No FLOPs measured (none executed, or the FLOP counters not collected), so no place on the FLOP roofline: each family\'s achieved bytes/s per '
                 "level (Σ bytes / Σ time) as a share of that level's ceiling, and the time its bytes need at least "
                 "at the ceilings (max over levels of bytes / bandwidth; docs/formulas.md#report-view).</p>"
                 f'<div class="svgwrap">{bw}</div></div>')
    return html


def _window_panel_html(p: WindowPanel) -> str:
    """A DCGM window roofline panel: title, the chart, its note."""
    title = (f"DCGM windows on {p['device']} — ceilings: "
             + ", ".join(f"{c['name']} from {c['source']}" for c in p["ceilings"]))
    return _chart_html(p["id"], title, "", window_roofline_svg(p, title=title), p["note"])


def _chart_html(pid: str, title: str, toggles: str, svg: str, note: str) -> str:
    return (f'<div class="rf" id="rf-{esc(pid)}"><h3>{esc(title)}</h3>{toggles}'
            f'<div class="svgwrap">{svg}</div>'
            f'{f"<p class=note>{esc(note.strip())}</p>" if note.strip() else ""}</div>')


def roofline_section(doc: Document) -> Section | None:
    """One static SVG per roofline panel of ``doc["roofline"]`` (decided by analyzer/view.py)."""
    view = doc.get("roofline")
    if not doc["kernels"] and not (view is not None and view["windows"]):
        return None
    if view is None:
        return Section("Roofline", '<p class="note">This document has no roofline view (written by an older '
                                   "rooftop): run rooftop analyze again on the inputs.</p>", anchor="roofline")
    families = family_rows(doc)
    parts = ['<p class="note">Log-log hierarchical roofline, one chart per device and ceiling set, drawn with the '
             "ceilings used for its kernels (labelled at the line: value and source; dashed: no kernel in the chart "
             "is bound by it). One marker per kernel family and memory level, sized by share of time, coloured by "
             "label; numbered families are named under the chart, every marker names its family on hover.</p>"]
    if view["why_empty"]:
        parts = [f'<p class="note why-empty">{esc(view["why_empty"])}</p>']
    parts += [_panel_html(p, families) for p in view["panels"] if p["placed"] or p.get("bandwidth")]
    parts += [_window_panel_html(p) for p in view["windows"]]
    return Section("Roofline", "".join(parts), anchor="roofline")


def devices_section(doc: Document) -> Section | None:
    """Collapsed: every device entry, and per roofline panel the ceilings its kernels used."""
    view = doc.get("roofline")
    panels = view["panels"] if view is not None else []
    if not panels and not doc["devices"]:
        return None
    body: list[str] = []
    rows = []
    for p in panels:
        for c in p["ceilings"]:
            rows.append({"panel": f"{p['device']} ({p['kernels']} launch(es))", "ceiling": c["name"],
                         "value": fmt_num(c["value"], c["unit"]),
                         "spread": f"{fmt_num(c['min'], c['unit'])} – {fmt_num(c['max'], c['unit'])}",
                         "entry": c["entry"], "bound": c["binding_kernels"], "provenance": c["provenance"]})
    if rows:
        body.append("<h3>Ceilings used, per roofline chart</h3>")
        body.append(table(rows, [Column("panel", "chart (device, launches)"), Column("ceiling", "ceiling"),
                                 Column("value", "value (time-weighted median)"), Column("spread", "range over launches"),
                                 Column("entry", "device entry"), Column("bound", "launches bound by it", numeric=True),
                                 Column("provenance", "how it was obtained", css="prov")], sortable=False))
    elif panels:
        body.append('<p class="note">No ceiling is known for these kernels (no export peaks and no built-in device '
                    "matched): pass --device.</p>")
    body.append("<h3>Device entries</h3>" + devices_table(doc))
    n = len(doc["devices"])
    summary = (f"{len(panels)} device and ceiling set(s) · {n} device entr{'y' if n == 1 else 'ies'} — which entry "
               "each kernel's ceilings came from")
    return Section("Devices and ceilings", f"<details><summary>{esc(summary)}</summary>{''.join(body)}</details>",
                   anchor="devices")


def roofline_md_section(doc: Document, svg_names: Sequence[str] = ()) -> MdSection | None:
    """The roofline charts as linked SVG files (written next to the Markdown), or why there is none."""
    view = doc.get("roofline")
    if view is None or (not doc["kernels"] and not view["windows"]):
        return None
    lines = []
    if view["why_empty"]:
        lines.append(md_esc(view["why_empty"]))
    panels: list[RooflinePanel | WindowPanel] = [p for p in view["panels"] if p["placed"]]
    panels += view["windows"]
    for p, name in zip(panels, svg_names, strict=False):
        title = md_esc(panel_title(p), limit=300)
        lines.append(f"![roofline: {title}]({quote(name)})")
    if panels and not svg_names:
        lines.append("Roofline charts: written next to the Markdown file when it is written with --md FILE.")
    return MdSection("Roofline", "\n\n".join(lines)) if lines else None


def distinct_names(names: Sequence[str], limit: int = NAME_LIMIT) -> list[str]:
    """Names shortened to ``limit`` characters keeping both ends (``head…tail``: CUTLASS names differ
    at the end), so rows stay told apart; names still equal get `` #n`` (their row)."""
    def short(s: str) -> str:
        if len(s) <= limit:
            return s
        head = (limit - 1) * 3 // 5
        return s[:head] + "…" + s[len(s) - (limit - 1 - head):]

    out = [short(str(n)) for n in names]
    counts: dict[str, int] = {}
    for s in out:
        counts[s] = counts.get(s, 0) + 1
    return [f"{s} #{i + 1}" if counts[s] > 1 else s for i, s in enumerate(out)]


def _launch_shape(k: Kernel) -> str:
    """``1024 × 256`` (blocks × threads per block; ``?`` where the export lacks one): tells apart rows
    of one kernel launched in different configurations."""
    g, b = num(k["grid"]), num(k["block"])
    return DASH if g is None and b is None else f"{'?' if g is None else f'{g:.0f}'} × {'?' if b is None else f'{b:.0f}'}"


def top_kernels_md_section(doc: Document) -> MdSection | None:
    """The longest launches: name, label, limiter, duration, share, FLOP/s, DRAM intensity."""
    kernels = doc["kernels"]
    if not kernels:
        return None
    _, total = kernel_label_shares(kernels)
    top: list[Kernel] = sorted(kernels, key=lambda k: -(num(k["duration_s"]) or 0.0))[:TOP_KERNELS]
    shown = distinct_names([k["name"] for k in top])
    rows = [{"name": nm, "grid": _launch_shape(k), "label": k["label"], "limiter": k["limiter"],
             "d": k["duration_s"],
             "share": (kernel_time(k) or 0.0) / total if total > 0 and kernel_time(k) is not None else None,
             "flops": k["achieved_flops_s"], "ai": k["intensity"]["dram"]}
            for nm, k in zip(shown, top, strict=True)]
    cols: list[Any] = [("name", "kernel"), ("grid", "grid × block"), ("label", "label"), ("limiter", "limiter"),
                       ("d", "duration", fmt_time), ("share", "share", fmt_pct),
                       ("flops", "FLOP/s", lambda v: fmt_num(v, "FLOP/s")), ("ai", "FLOP/B DRAM", lambda v: fmt_num(v))]
    more = f"\n\n_Top {TOP_KERNELS} of {len(kernels)} launches by duration._" if len(kernels) > TOP_KERNELS else ""
    return MdSection("Top kernels", md_table(rows, cols, limit=NAME_LIMIT + 8) + more)
