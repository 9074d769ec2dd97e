"""The self-contained HTML report, rendered only from the contract document dict.

One file: CSS, data and plotly.js inlined (plotly.js exactly once, from the installed ``plotly``
package), a restrictive CSP, no network request, opens offline. Input-derived strings are escaped
everywhere (``reports.escape``); data never becomes an inline event handler.

Section API (how ``reports.fleet_sections`` / ``reports.diff_sections`` plug in)
-------------------------------------------------------------------------------
A page is a list of :class:`Section` objects, built from the document by *section builders*::

    Section(title: str, html_body: str, plots: list[dict] = [], anchor: str | None = None, note: str = "")

- ``html_body`` is an HTML fragment that the builder has ALREADY ESCAPED: wrap every input-derived
  string in :func:`esc` (or build tables with :func:`table`, which escapes cells).
- ``plots`` are plotly figure dicts ``{"data": [...], "layout": {...}}`` (build them with
  :func:`figure`); each is drawn after ``html_body`` in its own ``<div>``. Figures are embedded as
  escaped JSON and drawn by one script: never put functions or HTML handlers in them.
- No ``<script>`` and no ``on*=`` attributes in ``html_body`` (the page has a single script).

A builder is ``Callable[[dict], Section | list[Section] | None]`` (``None``: nothing to show).
``SECTIONS_BY_KIND[doc["kind"]]`` lists the builders for each document kind, in page order.
Kind-specific modules are imported lazily by name with :func:`lazy`: the ``fleet`` page calls
``reports.fleet_sections.sections(doc) -> list[Section]`` and the ``diff`` page calls
``reports.diff_sections.sections(doc) -> list[Section]``. The generic sections (overview,
findings, lint, inputs and rejected records, provenance) are added by this module around them,
so those modules only add what is specific to their kind.

Public helpers: :func:`esc` (HTML escape), :func:`table` (escaped, optionally sortable table),
:func:`figure` (plotly figure dict with the house layout), :func:`fmt_num`, :func:`fmt_pct`,
:func:`fmt_time`, :func:`render_html` (the whole page).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rooftop.reports.escape import esc, script_json
from rooftop.reports.formatting import fmt_num, fmt_pct, fmt_time, kernel_label_shares, num

__all__ = [
    "SECTIONS_BY_KIND",
    "Column",
    "Section",
    "esc",
    "figure",
    "fmt_num",
    "fmt_pct",
    "fmt_time",
    "lazy",
    "render_html",
    "table",
]

CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"


@dataclass(frozen=True)
class Section:
    """One titled block of the page. ``html_body`` is pre-escaped HTML; ``plots`` figure dicts."""

    title: str
    html_body: str
    plots: list[dict[str, Any]] = field(default_factory=list)
    anchor: str | None = None
    note: str = ""


SectionBuilder = Callable[[dict[str, Any]], "Section | list[Section] | None"]


# ----------------------------------------------------------------------------- formatting helpers

# ----------------------------------------------------------------------------- tables and figures


@dataclass(frozen=True)
class Column:
    """A table column: ``key`` into each row, header text, optional cell formatter, and an
    optional CSS class for its cells (``"name"``: monospace, wraps long kernel names)."""

    key: str
    header: str
    fmt: Callable[[Any], str] | None = None
    numeric: bool = False
    css: str = ""




def _as_column(spec: str | tuple[str, str] | Column) -> Column:
    if isinstance(spec, Column):
        return spec
    if isinstance(spec, tuple):
        return Column(spec[0], spec[1])
    return Column(spec, spec)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str | tuple[str, str] | Column],
          *, sortable: bool = True, css_class: str = "") -> str:
    """An HTML table; every header and cell is escaped. Numeric cells carry ``data-v`` (the raw
    number) so the page script sorts them numerically; click a header to sort when ``sortable``."""
    cols = [_as_column(c) for c in columns]
    classes = " ".join(c for c in ("sortable" if sortable else "", css_class) if c)
    out = [f'<table class="{esc(classes)}"><thead><tr>']
    out += [f'<th{" class=num" if c.numeric else ""}>{esc(c.header)}</th>' for c in cols]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>")
        for c in cols:
            value = row.get(c.key)
            text = c.fmt(value) if c.fmt else ("—" if value is None else str(value))
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out.append(f'<td class="num" data-v="{float(value)!r}">{esc(text)}</td>')
            elif c.css:
                out.append(f'<td class="{esc(c.css)}"><div>{esc(text)}</div></td>')
            else:
                out.append(f"<td>{esc(text)}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


_BASE_LAYOUT: dict[str, Any] = {
    "template": None,
    "font": {"family": "system-ui, -apple-system, Segoe UI, sans-serif", "size": 12},
    "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
    "paper_bgcolor": "#ffffff",
    "plot_bgcolor": "#fbfbfd",
    "hovermode": "closest",
    "legend": {"orientation": "v"},
}


def figure(data: list[dict[str, Any]], layout: Mapping[str, Any] | None = None, *,
           title: str | None = None, height: int = 420) -> dict[str, Any]:
    """A plotly figure dict with the house layout. ``data`` are plotly trace dicts (plain lists;
    numpy arrays are converted when embedded). Text in traces is shown as text, never as HTML
    markup: the page escapes it (see ``_plot_safe``)."""
    lay: dict[str, Any] = {**_BASE_LAYOUT, "height": height}
    if title:
        lay["title"] = {"text": title}
    if layout:
        lay.update(layout)
    return {"data": list(data), "layout": lay}


def lazy(spec: str) -> SectionBuilder:
    """A builder that imports ``"module:function"`` only when the page is rendered."""
    module_name, _, func_name = spec.partition(":")

    def build(doc: dict[str, Any]) -> Section | list[Section] | None:
        module = importlib.import_module(module_name)
        result: Section | list[Section] | None = getattr(module, func_name or "sections")(doc)
        return result

    build.__name__ = f"lazy({spec})"
    return build


def build_sections(doc: dict[str, Any]) -> list[Section]:
    """Run the builders registered for ``doc["kind"]`` (unknown kinds get the analyze page)."""
    builders = SECTIONS_BY_KIND.get(str(doc.get("kind") or "analyze")) or SECTIONS_BY_KIND["analyze"]
    out: list[Section] = []
    for builder in builders:
        try:
            result = builder(doc)
        except Exception as exc:  # one broken section must not cost the whole report
            if os.environ.get("ROOFTOP_DEBUG"):
                raise
            name = getattr(builder, "__name__", "section")
            result = Section(f"{name}: not rendered", f'<p class="note">This section failed: '
                                                      f"{esc(type(exc).__name__)}: {esc(exc)}. Please "
                                                      "report it (ROOFTOP_DEBUG=1 shows the traceback).</p>")
        if result is None:
            continue
        out.extend(result if isinstance(result, list) else [result])
    return out


def render_html(doc: dict[str, Any]) -> str:
    """The whole page as one string."""
    return render_page(doc, build_sections(doc))


# ============================================================================= generic sections

LABELS = ("compute-bound", "memory-bound", "overhead-bound", "unknown")
WINDOW_LABELS = ("compute-bound", "memory-bound", "overhead-bound", "mixed", "idle")
TABLE_ROWS = 500          # per-kernel table: top rows by time (full data in the JSON output)
LIST_ROWS = 300           # rejected records, lint rows shown in the page


def _kernels(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return list(doc.get("kernels") or [])


def _share_bar(shares: Mapping[str, float], labels: Sequence[str]) -> str:
    """A stacked bar and legend for label shares (fractions of a total)."""
    parts = [f'<i class="lab-{esc(lab)}" style="width:{100 * shares.get(lab, 0.0):.3f}%" '
             f'title="{esc(lab)} {fmt_pct(shares.get(lab, 0.0))}"></i>' for lab in labels]
    legend = "".join(f'<i class="lab-{esc(lab)}"></i>{esc(lab)} {fmt_pct(shares.get(lab, 0.0))}'
                     for lab in labels if shares.get(lab, 0.0) > 0)
    return f'<div class="bar">{"".join(parts)}</div><div class="legend note">{legend}</div>'


def _kpi(value: str, caption: str) -> str:
    return f'<div class="kpi"><b>{esc(value)}</b><span>{esc(caption)}</span></div>'


def _devices_table(doc: dict[str, Any]) -> str:
    from rooftop.reports.plots import ceilings_of

    rows = []
    for dev in doc.get("devices") or []:
        compute, bandwidth = ceilings_of(dev)
        for c in compute:
            rows.append({"device": dev.get("name"), "ceiling": c.name, "value": c.value,
                         "unit": "FLOP/s", "source": c.source or dev.get("source")})
        for b in bandwidth:
            rows.append({"device": dev.get("name"), "ceiling": b.name, "value": b.value,
                         "unit": "B/s", "source": b.source or dev.get("source")})
    if not rows:
        return '<p class="note">No device ceilings: the roofline shows measured points only.</p>'
    cols = [Column("device", "device"), Column("ceiling", "ceiling"),
            Column("value", "peak", lambda v: fmt_num(v), numeric=True), Column("unit", "unit"),
            Column("source", "source")]
    return table(rows, cols, sortable=False)


def summary_section(doc: dict[str, Any]) -> Section:
    """Device, ceilings and where they came from, totals, label shares."""
    kernels = _kernels(doc)
    shares, total = kernel_label_shares(kernels)
    families = {k.get("family") for k in kernels if k.get("family") is not None}
    windows = doc.get("windows") or []
    kpis = [_kpi(str(len(kernels)), "kernel launches")]
    if kernels:
        kpis += [_kpi(fmt_time(total), "total kernel time"), _kpi(str(len(families)), "kernel families")]
    if windows:
        kpis.append(_kpi(str(len(windows)), "DCGM windows"))
    kpis += [_kpi(str(len(doc.get("findings") or [])), "findings"),
             _kpi(str(len(doc.get("rejected") or [])), "rejected records")]
    body = [f'<div class="kpis">{"".join(kpis)}</div>']
    if kernels:
        body.append("<h3>Share of kernel time by label</h3>")
        body.append(_share_bar(shares, LABELS))
    body.append("<h3>Devices and ceilings</h3>")
    body.append(_devices_table(doc))
    return Section("Summary", "".join(body), anchor="summary")


def overview_section(doc: dict[str, Any]) -> Section:
    """Generic header block for fleet/diff pages: counts and devices."""
    body = [f'<div class="kpis">{_kpi(str(len(doc.get("inputs") or [])), "inputs")}'
            f'{_kpi(str(len(doc.get("rejected") or [])), "rejected records")}'
            f'{_kpi(str(len(doc.get("findings") or [])), "findings")}</div>']
    if doc.get("devices"):
        body += ["<h3>Devices and ceilings</h3>", _devices_table(doc)]
    return Section("Overview", "".join(body), anchor="overview")


def roofline_section(doc: dict[str, Any]) -> Section | None:
    from rooftop.reports.plots import roofline_figure

    kernels = _kernels(doc)
    if not kernels and not any(num(w.get("est_flops_s")) for w in doc.get("windows") or []):
        return None
    fig, note = roofline_figure(doc)
    body = ('<p class="note">Log-log hierarchical roofline. One marker per kernel family and memory '
            "level (DRAM ●, L2 ■, L1 ◆), sized by time, coloured by label; click a legend group to "
            "toggle a level. Horizontal lines: compute ceilings per precision; slopes: bandwidth "
            f"ceilings; ✕: ridge points. {esc(note)}</p>")
    return Section("Roofline", body, plots=[fig], anchor="roofline")


def _finding_html(f: Mapping[str, Any], kernels: Sequence[Mapping[str, Any]]) -> str:
    sev = str(f.get("severity") or "info")
    ks = f.get("kernels") or []
    meta = [f"rule {esc(f.get('rule'))}", f"{fmt_pct(f.get('time_share'))} of GPU time"]
    if f.get("est_saving_s") is not None:
        meta.append(f"est. saving {esc(fmt_time(f.get('est_saving_s')))}")
    if ks:
        meta.append(f"{len(ks)} launch{'es' if len(ks) != 1 else ''}")
    if f.get("label"):
        lim = f.get("limiter")
        meta.append(esc(f.get("label")) + (f" / {esc(lim)}" if lim else ""))
    names = ""
    if ks:
        first = ks[0]
        if isinstance(first, int) and 0 <= first < len(kernels):
            name = str(kernels[first].get("name") or "")
            name = name if len(name) <= 400 else name[:399] + "…"
            names = f'<div class="meta">e.g. <span class="kname">{esc(name)}</span></div>'
    ev = f.get("evidence") or []
    ev_html = ("<ul>" + "".join(f"<li>{esc(e)}</li>" for e in ev[:8]) + "</ul>") if ev else ""
    return (f'<li class="finding"><div class="t"><span class="sev sev-{esc(sev)}">{esc(sev)}</span>'
            f'{esc(f.get("title"))}</div><div class="meta">{" · ".join(meta)}</div>{names}'
            f'<div class="rec">{esc(f.get("recommendation"))}</div>{ev_html}</li>')


def findings_section(doc: dict[str, Any]) -> Section:
    findings = doc.get("findings") or []
    if not findings:
        return Section("Findings", '<p class="note">No findings.</p>', anchor="findings")
    kernels = _kernels(doc)
    items = "".join(_finding_html(f, kernels) for f in findings)
    return Section("Findings", f'<ol class="findings">{items}</ol>', anchor="findings",
                   note="Ranked by estimated recoverable time, then share of GPU time.")


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


def lint_section(doc: dict[str, Any]) -> Section | None:
    lint = doc.get("lint") or []
    if not lint:
        return Section("Data quality", '<p class="note">No data-quality warnings.</p>', anchor="lint")
    rows = [{"code": x.get("code"), "message": x.get("message"),
             "n": len(x.get("kernels") or [])} for x in lint[:LIST_ROWS]]
    cols = [Column("code", "code"), Column("message", "message"), Column("n", "kernels", numeric=True)]
    more = f'<p class="note">{len(lint) - LIST_ROWS} more in the JSON output.</p>' if len(lint) > LIST_ROWS else ""
    return Section("Data quality", table(rows, cols) + more, anchor="lint")


def inputs_section(doc: dict[str, Any]) -> Section:
    inputs = doc.get("inputs") or []
    cols = [Column("path", "path"), Column("format", "format"), Column("records", "records", numeric=True),
            Column("missing", "missing", numeric=True), Column("rejected", "rejected", numeric=True)]
    body = [table(inputs, cols, sortable=False)]
    rejected = doc.get("rejected") or []
    if rejected:
        body.append(f"<h3>Rejected records ({len(rejected)})</h3>")
        rcols = [Column("path", "path"), Column("line", "line", numeric=True), Column("reason", "reason")]
        body.append(f'<div class="tablewrap">{table(rejected[:LIST_ROWS], rcols)}</div>')
        if len(rejected) > LIST_ROWS:
            body.append(f'<p class="note">First {LIST_ROWS} shown; all are in the JSON output.</p>')
    else:
        body.append('<p class="note">No rejected records.</p>')
    return Section("Inputs", "".join(body), anchor="inputs")


def provenance_section(doc: dict[str, Any]) -> Section:
    tool = doc.get("tool") or {}
    run = doc.get("run") or {}
    rows = [{"k": "rooftop version", "v": tool.get("version")},
            {"k": "schema version", "v": doc.get("schema_version")},
            {"k": "created", "v": run.get("created")}]
    body = [table(rows, [Column("k", "item"), Column("v", "value")], sortable=False)]
    body.append(f'<h3>Command</h3><p><code>{esc(run.get("command") or "")}</code></p>')
    sums = run.get("input_sha256") or {}
    if sums:
        srows = [{"path": p, "sha256": h} for p, h in sums.items()]
        body.append("<h3>Input checksums (SHA-256)</h3>")
        body.append(table(srows, [Column("path", "path"), Column("sha256", "sha256")], sortable=False))
    return Section("Provenance", "".join(body), anchor="provenance")


def _dcgm_sections(doc: dict[str, Any]) -> list[Section] | None:
    from rooftop.reports.plots import label_share_figure, timeline_figures, windows_share_rows

    windows = doc.get("windows") or []
    if not windows:
        return None
    out: list[Section] = []
    figs, note = timeline_figures(doc)
    out.append(Section("GPU timelines", f'<p class="note">{esc(note)}</p>', plots=figs,
                       anchor="timelines"))
    body = []
    plots = []
    for key, rows in windows_share_rows(windows).items():
        if len(rows) < 1:
            continue
        body.append(f"<h3>Label share of GPU time by {esc(key)}</h3>")
        cols = [Column("group", key)] + [Column(lab, lab, fmt_pct, numeric=True) for lab in WINDOW_LABELS]
        cols.append(Column("hours", "GPU-hours", lambda v: fmt_num(v), numeric=True))
        body.append(f'<div class="tablewrap">{table(rows[:LIST_ROWS], cols)}</div>')
        if key in ("gpu", "host") and 1 < len(rows) <= 200:
            plots.append(label_share_figure(rows, key, WINDOW_LABELS))
    out.append(Section("GPU label shares", "".join(body), plots=plots, anchor="shares"))
    wf = [f for f in doc.get("findings") or [] if f.get("source") == "dcgm"]
    if wf:
        kernels = _kernels(doc)
        items = "".join(_finding_html(f, kernels) for f in wf)
        out.append(Section("Window findings", f'<ol class="findings">{items}</ol>', anchor="wfindings"))
    return out


DCGM_SECTIONS: list[SectionBuilder] = [_dcgm_sections]


SECTIONS_BY_KIND: dict[str, list[SectionBuilder]] = {
    "analyze": [summary_section, roofline_section, findings_section, kernel_table_section,
                *DCGM_SECTIONS, lazy("rooftop.reports.fleet_sections:join_section"), lint_section,
                inputs_section, provenance_section],
    "fleet": [overview_section, lazy("rooftop.reports.fleet_sections:sections"), findings_section,
              lint_section, inputs_section, provenance_section],
    "diff": [overview_section, lazy("rooftop.reports.diff_sections:sections"), lint_section,
             inputs_section, provenance_section],
}


# ============================================================================= page


def _template(name: str) -> str:
    from importlib import resources

    return resources.files("reports").joinpath("templates", name).read_text(encoding="utf-8")


def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    js: str = get_plotlyjs()
    if "</script" in js.lower():  # never expected; would end the element early
        js = js.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT")
    return js


TITLES = {"analyze": "rooftop report", "fleet": "rooftop fleet report", "diff": "rooftop diff report"}


def render_page(doc: dict[str, Any], sections: Sequence[Section]) -> str:
    """Assemble the page around ``sections``: header, table of contents, figures, scripts."""
    kind = str(doc.get("kind") or "analyze")
    title = TITLES.get(kind, "rooftop report")
    run = doc.get("run") or {}
    figures: dict[str, Any] = {}
    parts: list[str] = []
    toc: list[str] = []
    for n, sec in enumerate(sections):
        anchor = sec.anchor or f"s{n}"
        toc.append(f'<a href="#{esc(anchor)}">{esc(sec.title)}</a>')
        plots_html = []
        for m, fig in enumerate(sec.plots):
            pid = f"plot-{n}-{m}"
            figures[pid] = fig
            plots_html.append(f'<div class="plot" id="{pid}"></div>')
        note = f'<p class="note">{esc(sec.note)}</p>' if sec.note else ""
        parts.append(f'<section id="{esc(anchor)}"><h2>{esc(sec.title)}</h2>{note}{sec.html_body}'
                     f'{"".join(plots_html)}</section>')
    devices = ", ".join(str(d.get("name")) for d in doc.get("devices") or [] if d.get("name"))
    sub = " · ".join(x for x in (f"rooftop {(doc.get('tool') or {}).get('version', '')}",
                                 str(run.get("created") or ""), devices) if x)
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>{esc(title)}</title><style>{_template('report.css')}</style></head><body>",
        f'<header class="top"><h1>{esc(title)}</h1><div class="sub">{esc(sub)}</div>',
        '<div class="note" id="rooftop-plot-status"></div></header>',
        f'<nav class="toc">{"".join(toc)}</nav><main>{"".join(parts)}</main>',
        f'<script type="application/json" id="rooftop-figures">{script_json(figures)}</script>\n',
        f"<script>{_plotly_js()}</script>\n",
        f"<script>{_template('report.js')}</script>",
        "</body></html>\n",
    ])
