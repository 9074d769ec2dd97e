"""Sections of the ``rooftop analyze`` report (HTML and Markdown): summary, roofline, kernel table,
top kernels. Rendered only from the document dict."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from rooftop.reports.common_sections import devices_table
from rooftop.reports.escape import esc
from rooftop.reports.escape import md as md_esc
from rooftop.reports.formatting import fmt_num, fmt_pct, fmt_time, kernel_label_shares, num
from rooftop.reports.md_widgets import MdSection, md_table
from rooftop.reports.svg_roofline import roofline_svg
from rooftop.reports.widgets import Column, Section, kpi, share_bar, table

LABELS = ("compute-bound", "memory-bound", "overhead-bound", "unknown")


TOP_KERNELS = 10


NAME_LIMIT = 120   # kernel names in the top-kernels table


def _kernels(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return list(doc.get("kernels") or [])


def summary_section(doc: dict[str, Any]) -> Section:
    """Totals and label shares (devices and ceilings are in the collapsed :func:`devices_section`)."""
    kernels = _kernels(doc)
    shares, total = kernel_label_shares(kernels)
    families = {k.get("family") for k in kernels if k.get("family") is not None}
    windows = doc.get("windows") or []
    traced = [t for t in doc.get("timeline") or [] if isinstance(t.get("kernels"), int)]
    kpis = []
    if kernels or not (windows or traced):  # ncu launches; a DCGM or trace page is not "0 launches"
        kpis.append(kpi(str(len(kernels)), "kernel launches"))
    if kernels:
        kpis += [kpi(fmt_time(total), "total kernel time"), kpi(str(len(families)), "kernel families")]
    if traced:
        kpis.append(kpi(str(sum(int(t["kernels"]) for t in traced)), "traced kernels"))
    if windows:
        kpis.append(kpi(str(len(windows)), "DCGM windows"))
    kpis += [kpi(str(len(doc.get("findings") or [])), "findings"),
             kpi(str(len(doc.get("rejected") or [])), "rejected records")]
    body = [f'<div class="kpis">{"".join(kpis)}</div>']
    if kernels:
        body.append("<h3>Share of kernel time by label</h3>")
        body.append(share_bar(shares, LABELS))
    return Section("Summary", "".join(body), anchor="summary")


def panel_title(panel: Mapping[str, Any]) -> str:
    """``device — ceilings: FP32, DRAM from export; FP16 from builtin`` (which entry each ceiling is)."""
    by: dict[str, list[str]] = {}
    for c in panel.get("ceilings") or []:
        by.setdefault(str(c.get("source")), []).append(str(c.get("name")))
    what = "; ".join(f"{', '.join(names)} from {src}" for src, names in by.items()) or "no ceilings known"
    return f"{panel.get('device')} — {panel.get('kernels')} launch(es) — ceilings: {what}"


def _level_toggles(pid: str) -> str:
    boxes = "".join(f'<input type="checkbox" class="t-{lvl}" id="{esc(pid)}-{lvl}" checked>'
                    f'<label for="{esc(pid)}-{lvl}">{name}</label>'
                    for lvl, name in (("dram", "DRAM ●"), ("l2", "L2 ■"), ("l1", "L1 ◆")))
    return f'<span class="note">levels:</span>{boxes}'


def _panel_html(p: Mapping[str, Any], families: Sequence[Mapping[str, Any]], *, windows: bool = False) -> str:
    pid = str(p.get("id"))
    title = panel_title(p) if not windows else (f"DCGM windows on {p.get('device')} — ceilings: "
                                                 + ", ".join(f"{c.get('name')} from {c.get('source')}"
                                                             for c in p.get("ceilings") or []))
    note = str(p.get("note") or "")
    more = len(p.get("families") or []) - len(p.get("placed") or [])
    if more > 0:
        note += f" {more} famil{'y' if more == 1 else 'ies'} of this chart cannot be placed (no FLOPs or bytes)."
    toggles = "" if windows else _level_toggles(pid)
    return (f'<div class="rf" id="rf-{esc(pid)}"><h3>{esc(title)}</h3>{toggles}'
            f'<div class="svgwrap">{roofline_svg(p, families, title=title)}</div>'
            f'{f"<p class=note>{esc(note.strip())}</p>" if note.strip() else ""}</div>')


def roofline_section(doc: dict[str, Any]) -> Section | None:
    """One static SVG per roofline panel of ``doc["roofline"]`` (decided by analyzer/view.py)."""
    view = doc.get("roofline")
    if not _kernels(doc) and not (isinstance(view, Mapping) and view.get("windows")):
        return None
    if not isinstance(view, Mapping):
        return Section("Roofline", '<p class="note">This document has no roofline view (written by an older '
                                   "rooftop): run rooftop analyze again on the inputs.</p>", anchor="roofline")
    families = list(doc.get("families") or [])
    parts = ['<p class="note">Log-log hierarchical roofline, one chart per device and ceiling set, drawn with the '
             "ceilings used for its kernels (labelled at the line: value and source; dashed: no kernel in the chart "
             "is bound by it). One marker per kernel family and memory level, sized by share of time, coloured by "
             "label; numbered families are named under the chart, every marker names its family on hover.</p>"]
    if view.get("why_empty"):
        parts = [f'<p class="note why-empty">{esc(view.get("why_empty"))}</p>']
    parts += [_panel_html(p, families) for p in view.get("panels") or [] if p.get("placed")]
    parts += [_panel_html(p, families, windows=True) for p in view.get("windows") or []]
    return Section("Roofline", "".join(parts), anchor="roofline")


def devices_section(doc: dict[str, Any]) -> Section | None:
    """Collapsed: every device entry, and per roofline panel the ceilings its kernels used."""
    view = doc.get("roofline")
    panels = list(view.get("panels") or []) if isinstance(view, Mapping) else []
    if not panels and not doc.get("devices"):
        return None
    body: list[str] = []
    rows = []
    for p in panels:
        for c in p.get("ceilings") or []:
            rows.append({"panel": f"{p.get('device')} ({p.get('kernels')} launch(es))", "ceiling": c.get("name"),
                         "value": fmt_num(c.get("value"), str(c.get("unit") or "")),
                         "spread": (f"{fmt_num(c.get('min'), str(c.get('unit') or ''))} – "
                                    f"{fmt_num(c.get('max'), str(c.get('unit') or ''))}"),
                         "entry": c.get("entry"), "bound": c.get("binding_kernels"), "provenance": c.get("provenance")})
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
    n = len(doc.get("devices") or [])
    summary = (f"{len(panels)} device and ceiling set(s) · {n} device entr{'y' if n == 1 else 'ies'} — which entry "
               "each kernel's ceilings came from")
    return Section("Devices and ceilings", f"<details><summary>{esc(summary)}</summary>{''.join(body)}</details>",
                   anchor="devices")


def roofline_md_section(doc: dict[str, Any], svg_names: Sequence[str] = ()) -> MdSection | None:
    """The roofline charts as linked SVG files (written next to the Markdown), or why there is none."""
    view = doc.get("roofline")
    if not isinstance(view, Mapping) or (not _kernels(doc) and not view.get("windows")):
        return None
    lines = []
    if view.get("why_empty"):
        lines.append(md_esc(view.get("why_empty")))
    panels = [p for p in view.get("panels") or [] if p.get("placed")] + list(view.get("windows") or [])
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


def top_kernels_md_section(doc: dict[str, Any]) -> MdSection | None:
    kernels = doc.get("kernels") or []
    if not kernels:
        return None
    total = sum(num(k.get("duration_s")) or 0.0 for k in kernels)
    top = sorted(kernels, key=lambda k: -(num(k.get("duration_s")) or 0.0))[:TOP_KERNELS]
    shown = distinct_names([str(k.get("name") or "") for k in top])
    rows = [{"name": nm, "label": k.get("label"), "limiter": k.get("limiter"),
             "d": k.get("duration_s"),
             "share": (num(k.get("duration_s")) or 0.0) / total if total > 0 else None,
             "flops": k.get("achieved_flops_s"), "ai": (k.get("intensity") or {}).get("dram")}
            for nm, k in zip(shown, top, strict=True)]
    cols: list[Any] = [("name", "kernel"), ("label", "label"), ("limiter", "limiter"),
                       ("d", "duration", fmt_time), ("share", "share", fmt_pct),
                       ("flops", "FLOP/s", lambda v: fmt_num(v, "FLOP/s")), ("ai", "FLOP/B DRAM", lambda v: fmt_num(v))]
    more = f"\n\n_Top {TOP_KERNELS} of {len(kernels)} launches by duration._" if len(kernels) > TOP_KERNELS else ""
    return MdSection("Top kernels", md_table(rows, cols, limit=NAME_LIMIT + 8) + more)
