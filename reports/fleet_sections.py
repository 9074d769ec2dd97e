"""Sections of the ``rooftop fleet`` report (HTML and Markdown), rendered only from the document (``Document``).

Reads the fleet keys of the document: ``fleet`` (period, engine, totals), ``groups`` (one per
``--by`` group: ``key``, ``gpus``, ``gpu_hours``, ``labels``, ``metrics``, ``est_flops_s``,
``previous``, ``moved``) and, when present, ``kernel_join`` (predicted vs observed DCGM signature).
Every input-derived string (host, pod, namespace names) is escaped: :func:`esc`/:func:`table` for
HTML, :func:`md_esc`/:func:`md_table` for Markdown; charts are static SVG.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rooftop.analyzer.schema import BOUND_LABELS, WINDOW_LABELS_SHOWN, Document
from rooftop.reports.common_sections import devices_table
from rooftop.reports.escape import esc
from rooftop.reports.escape import md as md_esc
from rooftop.reports.formatting import fmt_gpu_hours, fmt_num, fmt_pct, gpu_seconds_hint
from rooftop.reports.health_sections import fleet_health_html, fleet_health_md, health_kpi
from rooftop.reports.md_widgets import MdSection, md_table
from rooftop.reports.timelines import label_share_chart
from rooftop.reports.widgets import Column, Section, kpi, table

LABELS = WINDOW_LABELS_SHOWN
MD_LABELS = ("idle", *BOUND_LABELS)  # the Markdown group table's label columns
MAX_ROWS = 200  # groups per HTML table (all of them are in the JSON output)
MD_ROWS = 15
PLOT_ROWS = 40


def _num(v: Any) -> float | None:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        f = float(v)
        return f if math.isfinite(f) else None
    return None


def _key(key: Mapping[str, Any] | None) -> str:
    if not key:
        return "(all)"
    return ", ".join(f"{k}={'(none)' if v is None else v}" for k, v in key.items())


def _change(cur: Any, prev: Any) -> float | None:
    c, p = _num(cur), _num(prev)
    if c is None or p is None or p == 0:
        return None
    return c / p - 1.0


def _pct_change(v: Any) -> str:
    f = _num(v)
    return "—" if f is None else f"{100 * f:+.0f} %"


def _ratio(v: Any) -> str:
    f = _num(v)
    return "—" if f is None else f"{f:.2f}"


def group_rows(doc: Document) -> list[dict[str, Any]]:
    """Flat rows for the group tables (shared by HTML and Markdown)."""
    rows: list[dict[str, Any]] = []
    for g in doc.get("groups") or []:
        labels = g.get("labels") or {}
        metrics = g.get("metrics") or {}
        prev = g.get("previous") or {}
        row: dict[str, Any] = {
            "group": _key(g.get("key")), "gpus": g.get("gpus"), "gpu_hours": _num(g.get("gpu_hours")),
            "sm_active": _num(metrics.get("sm_active")), "tensor_active": _num(metrics.get("tensor_active")),
            "dram_active": _num(metrics.get("dram_active")), "est_flops_s": _num(g.get("est_flops_s")),
            "d_hours": _change(g.get("gpu_hours"), prev.get("gpu_hours")),
            "moved": "; ".join(str(m) for m in g.get("moved") or []),
        }
        for lab in LABELS:
            row[lab] = _num((labels.get(lab) or {}).get("share"))
        rows.append(row)
    return rows


def _fleet_shares(doc: Document) -> tuple[dict[str, float], float]:
    hours = {lab: 0.0 for lab in LABELS}
    total = 0.0
    for g in doc.get("groups") or []:
        total += _num(g.get("gpu_hours")) or 0.0
        for lab in LABELS:
            hours[lab] += _num(((g.get("labels") or {}).get(lab) or {}).get("gpu_hours")) or 0.0
    return ({lab: h / total for lab, h in hours.items()} if total else {}), total


def _share_bar(shares: Mapping[str, float]) -> str:
    parts = [f'<i class="lab-{esc(lab)}" style="width:{100 * shares.get(lab, 0.0):.3f}%" '
             f'title="{esc(lab)} {fmt_pct(shares.get(lab, 0.0))}"></i>' for lab in LABELS]
    legend = "".join(f'<i class="lab-{esc(lab)}"></i>{esc(lab)} {fmt_pct(shares.get(lab, 0.0))} '
                     for lab in LABELS if shares.get(lab, 0.0) > 0)
    return f'<div class="bar">{"".join(parts)}</div><div class="legend note">{legend}</div>'


GROUP_COLUMNS: list[Column] = [
    Column("group", "group"),
    Column("gpus", "GPUs", numeric=True),
    Column("gpu_hours", "GPU-hours", fmt_gpu_hours, numeric=True),
    *[Column(lab, lab, fmt_pct, numeric=True) for lab in LABELS],
    Column("sm_active", "SM active", _ratio, numeric=True),
    Column("tensor_active", "tensor active", _ratio, numeric=True),
    Column("dram_active", "DRAM util.", _ratio, numeric=True),
    Column("est_flops_s", "est. FLOP/s", lambda v: fmt_num(v, "FLOP/s"), numeric=True),
    Column("d_hours", "Δ GPU-h", _pct_change, numeric=True),
]  # what moved night over night has its own section (the sentences do not fit a table cell)


def _group_columns(rows: list[dict[str, Any]]) -> list[Column]:
    """The group table's columns without label columns no shown group has time in (the fleet bar
    above lists every label), so the table fits the page."""
    empty = {lab for lab in LABELS if not any((r.get(lab) or 0.0) > 0 for r in rows)}
    return [c for c in GROUP_COLUMNS if c.key not in empty]


def sections(doc: Document) -> list[Section]:
    """Fleet-specific HTML sections: period and fleet shares, groups, night-over-night, join."""
    out: list[Section] = []
    fl = doc.get("fleet") or {}
    period = fl.get("period") or {}
    prev = fl.get("previous_period") or {}
    shares, total = _fleet_shares(doc)
    by = ", ".join(str(b) for b in fl.get("by") or [])
    body = (
        f"<p>Period <b>{esc(period.get('since'))}</b> to <b>{esc(period.get('until'))}</b> "
        f"(previous: {esc(prev.get('since'))} to {esc(prev.get('until'))}); "
        f"{esc(fl.get('gpus'))} GPUs, {esc(fmt_gpu_hours(total))} GPU-hours{esc(gpu_seconds_hint(total))} in "
        f"{esc(fl.get('windows_total'))} windows of {esc(fl.get('window_s'))} s; "
        f"engine {esc(fl.get('engine'))}, {esc(fl.get('files_scanned'))} partition files.</p>"
        + (_share_bar(shares) if shares else "<p class=note>No samples in this period.</p>")
    )
    out.append(Section("Fleet", body, anchor="fleet"))
    morning = morning_section(doc)
    if morning is not None:
        out.append(morning)
    rows = group_rows(doc)
    if rows:
        shown = rows[:MAX_ROWS]
        note = f"{len(rows)} groups; the first {MAX_ROWS} by GPU-hours are shown." if len(rows) > MAX_ROWS else ""
        plot_rows = [{"group": r["group"], **{lab: r[lab] or 0.0 for lab in LABELS}} for r in rows[:PLOT_ROWS]]
        out.append(Section(f"Groups by {by or 'host'}",
                           label_share_chart(plot_rows, by or "host", LABELS)
                           + f'<div class="tablewrap">{table(shown, _group_columns(shown))}</div>',
                           anchor="groups", note=note))
        moved = [r for r in rows if r["moved"] and r["moved"] != "new this period"]
        if moved:
            out.append(Section("Night over night", table(moved[:MAX_ROWS], [
                Column("group", "group"), Column("gpu_hours", "GPU-hours", _hours_cell, numeric=True),
                Column("d_hours", "Δ GPU-h", _pct_change, numeric=True), Column("moved", "what moved")]),
                anchor="trend"))
    join = join_section(doc)
    if join:
        out.append(join)
    return out


def join_section(doc: Document) -> Section | None:
    """"Kernels vs DCGM": the profiled kernels' predicted DCGM signature against what DCGM saw."""
    join = doc.get("kernel_join")
    return Section("Kernels vs DCGM", _join_html(join), anchor="join") if join else None


def _join_rows(join: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [dict(r) for r in join.get("comparison") or []]


JOIN_COLUMNS: list[Column] = [
    Column("metric", "metric"), Column("predicted_busy", "predicted (kernels)", _ratio, numeric=True),
    Column("expected", "expected", _ratio, numeric=True), Column("observed", "DCGM", _ratio, numeric=True),
    Column("verdict", "verdict"), Column("meaning", "what it means"),
]


def _join_html(join: Mapping[str, Any]) -> str:
    pred = join.get("predicted") or {}
    head = (f"<p>{esc(pred.get('kernels'))} profiled kernels, {esc(fmt_num(pred.get('kernel_time_s'), 's'))}"
            " of kernel time, weighted by duration.</p>")
    notes = "".join(f"<li>{esc(a)}</li>" for a in pred.get("assumptions") or [])
    return head + table(_join_rows(join), JOIN_COLUMNS, sortable=False) + (f"<ul class=note>{notes}</ul>" if notes else "")


def _md_pct(v: Any) -> str:
    f = _num(v)
    return "—" if f is None else f"{100 * f:.0f}%"


def _hours_cell(v: Any) -> str:
    """A GPU-hours cell, in GPU-hours whatever its size (docs/contract.md: every GPU-hours number)."""
    return fmt_gpu_hours(_num(v))


def _owner_rows(fl: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for o in fl.get("owners") or []:
        prev = o.get("previous_gpu_hours")
        rows.append({"owner": f"{o.get('kind')}: {o.get('owner')}", "gpus": o.get("gpus"),
                     "gpu_hours": _num(o.get("gpu_hours")), "busy": _num(o.get("busy_hours")),
                     "idle": _num(o.get("idle_hours")), "unknown": _num(o.get("unknown_hours")),
                     "change": "new" if prev is None else _pct_change(_change(o.get("gpu_hours"), prev)),
                     "ofu": _ofu_cell(o)})
    return rows


def _ofu_cell(o: Mapping[str, Any]) -> str:
    """An owner's OFU estimate, with the GPU-hours it rests on where that is not all of them."""
    v, h, total = _num(o.get("ofu")), _num(o.get("ofu_hours")) or 0.0, _num(o.get("gpu_hours")) or 0.0
    if v is None:
        return "unknown"
    return f"{v:.2f}" if h >= 0.999 * total else f"{v:.2f} (over {_hours_cell(h)} GPU-h)"


OFU_NOTE = ("Efficiency (OFU): an MFU-like estimate from DCGM alone, tensor pipe activity x SM clock / max SM "
            "clock, weighted by GPU-hours (arXiv:2605.20799: r = 0.78 against application MFU over 608 jobs). "
            "It assumes the work runs on the tensor pipe (FP32/FP64 pipe work counts 0) at the stated peak per "
            "active cycle; window means of activity and clock are multiplied; unknown where the tensor field, "
            "the SM clock or the max clock is absent (docs/formulas.md#ofu).")


OWNER_COLUMNS = [Column("owner", "owner"), Column("gpus", "GPUs", numeric=True),
                 Column("gpu_hours", "GPU-hours", _hours_cell, numeric=True),
                 Column("busy", "busy", _hours_cell, numeric=True), Column("idle", "idle", _hours_cell, numeric=True),
                 Column("unknown", "unknown", _hours_cell, numeric=True),
                 Column("change", "vs previous period"), Column("ofu", "efficiency (OFU)")]
IDLE_COLUMNS = [Column("gpu", "GPU"), Column("host", "host"), Column("owner", "held by"),
                Column("idle_hours", "idle GPU-hours", _hours_cell, numeric=True),
                Column("gpu_hours", "of GPU-hours", _hours_cell, numeric=True)]
COVERAGE_COLUMNS = [Column("host", "host"), Column("gpus", "GPUs", numeric=True),
                    Column("covered_hours", "GPU-hours with data", _hours_cell, numeric=True),
                    Column("coverage", "of GPUs x period", fmt_pct, numeric=True)]


PAIR = 'style="display:flex;flex-wrap:wrap;gap:0 24px"'  # two blocks side by side from 1144 px
HALF = 'style="flex:1 1 560px;min-width:0"'


def morning_section(doc: Document) -> Section | None:
    """The first screen of a fleet report: GPU-hours by owner (busy / idle / unknown, against the
    previous period), GPUs held by a workload while idle, GPUs with health events, and each host's
    data coverage."""
    fl = doc.get("fleet") or {}
    owners = _owner_rows(fl)
    if not owners:
        return None
    idle = list(fl.get("allocated_idle") or [])
    cover = [c for c in fl.get("coverage") or [] if (_num(c.get("coverage")) or 0.0) < 0.999]
    body = ["<h3>GPU-hours by owner</h3>",
            '<p class="note">Owner: the job label, else namespace/pod, else namespace; "host" where the data '
            "names no workload. Busy = compute-, memory-, overhead-bound and mixed.</p>",
            f'<div class="tablewrap">{table(owners, OWNER_COLUMNS)}</div>',
            f'<p class="note">{esc(OFU_NOTE)}</p>',
            f"<div {PAIR}><div {HALF}>",  # allocated-but-idle and health events side by side (first screen)
            "<h3>Allocated but idle</h3>",
            (f'<div class="tablewrap">{table(idle, IDLE_COLUMNS)}</div>' if idle else
             '<p class="note">No GPU a workload label holds was idle >= 90 % of its covered time.</p>'),
            f"</div><div {HALF}>{fleet_health_html(doc)}</div></div>",
            "<h3>Data gaps per host</h3>",
            (f'<div class="tablewrap">{table(cover, COVERAGE_COLUMNS)}</div>' if cover else
             '<p class="note">Every host\'s GPUs have data for the whole period.</p>')]
    return Section("Who used the GPUs", "".join(body), anchor="owners")


def morning_md_section(doc: Document) -> MdSection | None:
    """The owner table, allocated-but-idle GPUs and data gaps for Markdown."""
    fl = doc.get("fleet") or {}
    owners = _owner_rows(fl)
    if not owners:
        return None
    h = lambda v: _hours_cell(v)  # noqa: E731 - a column formatter
    parts = [md_table(owners[:MD_ROWS], [("owner", "owner"), ("gpus", "GPUs"), ("gpu_hours", "GPU-h", h),
                                          ("busy", "busy", h), ("idle", "idle", h), ("unknown", "unknown", h),
                                          ("change", "vs previous"), ("ofu", "OFU")]), md_esc(OFU_NOTE)]
    idle = list(fl.get("allocated_idle") or [])
    if idle:
        parts.append("Allocated but idle:\n\n" + md_table(idle[:MD_ROWS], [
            ("gpu", "GPU"), ("host", "host"), ("owner", "held by"), ("idle_hours", "idle GPU-h", h)]))
    parts.append(fleet_health_md(doc))
    cover = [c for c in fl.get("coverage") or [] if (_num(c.get("coverage")) or 0.0) < 0.999]
    if cover:
        parts.append("Data gaps per host:\n\n" + md_table(cover[:MD_ROWS], [
            ("host", "host"), ("gpus", "GPUs"), ("covered_hours", "GPU-h with data", h),
            ("coverage", "of GPUs x period", _md_pct)]))
    return MdSection("Who used the GPUs", "\n\n".join(parts))


def overview_section(doc: Document) -> Section:
    """The fleet page's header: GPUs, GPU-hours, idle GPU-hours, findings; the devices and their
    ceilings go to the end (:func:`devices_section`)."""
    fl = doc.get("fleet") or {}
    shares, total = _fleet_shares(doc)
    idle_h = total * shares.get("idle", 0.0) if shares else 0.0
    held = len(fl.get("allocated_idle") or [])
    body = (f'<div class="kpis">{kpi(str(fl.get("gpus")), "GPUs")}'
            f'{kpi(_hours_cell(total), "GPU-hours" + gpu_seconds_hint(total))}'
            f'{kpi(_hours_cell(idle_h), "idle GPU-hours" + gpu_seconds_hint(idle_h))}'
            f'{kpi(str(held), "GPUs allocated but idle")}'
            f'{kpi(health_kpi(doc), "GPUs with health events")}'
            f'{kpi(str(len(doc["findings"])), "findings")}{kpi(str(len(doc["rejected"])), "rejected records")}</div>')
    return Section("Overview", body, anchor="overview")


def devices_section(doc: Document) -> Section | None:
    """Devices and ceilings of the GPUs the fleet's windows named (reference, at the end)."""
    if not doc["devices"]:
        return None
    return Section("Devices and ceilings", devices_table(doc), anchor="devices")


def markdown_sections(doc: Document) -> list[MdSection]:
    """Fleet-specific Markdown sections: period, top groups, what moved, kernel join."""
    out: list[MdSection] = []
    fl = doc.get("fleet") or {}
    period = fl.get("period") or {}
    shares, total = _fleet_shares(doc)
    lines = [f"Period {md_esc(period.get('since'))} to {md_esc(period.get('until'))}: "
             f"{md_esc(fl.get('gpus'))} GPUs, {fmt_gpu_hours(total)} GPU-hours{gpu_seconds_hint(total)}, engine {md_esc(fl.get('engine'))}."]
    if shares:
        lines.append("Fleet GPU-time: " + ", ".join(f"{lab} {_md_pct(shares.get(lab))}" for lab in LABELS))
    out.append(MdSection("Fleet", "\n\n".join(lines)))
    morning_md = morning_md_section(doc)
    if morning_md is not None:
        out.append(morning_md)
    rows = group_rows(doc)
    if rows:
        cols: list[Any] = [("group", "group"), ("gpus", "GPUs"),
                           ("gpu_hours", "GPU-h", _hours_cell),
                           *[(lab, lab, _md_pct) for lab in MD_LABELS],
                           ("sm_active", "SM act.", _ratio), ("tensor_active", "tensor", _ratio),
                           ("dram_active", "DRAM", _ratio), ("d_hours", "Δ GPU-h", _pct_change)]
        body = md_table(rows[:MD_ROWS], cols)
        if len(rows) > MD_ROWS:
            body += f"\n\n{len(rows) - MD_ROWS} more groups in the HTML/JSON report."
        out.append(MdSection(f"Groups by {md_esc(', '.join(str(b) for b in fl.get('by') or []))}", body))
        moved = [r for r in rows if r["moved"] and r["moved"] != "new this period"]
        if moved:
            out.append(MdSection("Night over night", md_table(moved[:MD_ROWS], [("group", "group"),
                                                                               ("moved", "what moved")])))
    join = join_md_section(doc)
    if join:
        out.append(join)
    return out


def join_md_section(doc: Document) -> MdSection | None:
    """The "Kernels vs DCGM" table for Markdown."""
    join = doc.get("kernel_join")
    if not join:
        return None
    return MdSection("Kernels vs DCGM", md_table(_join_rows(join), [
        ("metric", "metric"), ("predicted_busy", "predicted", _ratio), ("expected", "expected", _ratio),
        ("observed", "DCGM", _ratio), ("verdict", "verdict"), ("meaning", "what it means")]))


__all__: Sequence[str] = ["devices_section", "group_rows", "join_md_section", "join_section", "markdown_sections",
                          "morning_md_section", "morning_section", "overview_section", "sections"]
