"""HTML widgets every report section uses: sections, escaped tables, findings, share bars.

Section API (how the sections modules plug into :func:`rooftop.reports.html.render_html`)
-------------------------------------------------------------------------------------------
A page is a list of :class:`Section` objects, built from the document by *section builders*::

    Section(title: str, html_body: str, anchor: str | None = None, note: str = "")

- ``html_body`` is an HTML fragment that the builder has ALREADY ESCAPED: wrap every input-derived
  string in :func:`esc` (or build tables with :func:`table`, which escapes cells).
- Charts are static SVG inside ``html_body`` (``reports.svg_charts``, ``reports.svg_roofline``),
  every input-derived string escaped; hover is SVG ``<title>``.
- No ``<script>`` and no ``on*=`` attributes in ``html_body`` (the page has a single script).

A builder is ``Callable[[Document], Section | list[Section] | None]`` (``None``: nothing to show).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rooftop.analyzer.schema import Document, Finding, Kernel
from rooftop.reports.escape import esc
from rooftop.reports.formatting import fmt_pct, fmt_saving

__all__ = [
    "LABEL_COLORS", "Column", "Section", "SectionBuilder", "finding_html", "kpi", "share_bar",
    "table",
]

LABEL_COLORS = {
    "memory-bound": "#d9480f",
    "compute-bound": "#1971c2",
    "overhead-bound": "#7048e8",
    "unknown": "#868e96",
    "mixed": "#2b8a3e",
    "idle": "#adb5bd",
}


@dataclass(frozen=True)
class Section:
    """One titled block of the page. ``html_body`` is pre-escaped HTML (charts included)."""

    title: str
    html_body: str
    anchor: str | None = None
    note: str = ""


SectionBuilder = Callable[[Document], "Section | list[Section] | None"]


@dataclass(frozen=True)
class Column:
    """A table column: ``key`` into each row, header text, optional cell formatter, and an
    optional CSS class for its cells (``"name"``: monospace, long kernel names clamped to three
    lines; ``"file"``: a file name). A cell with a CSS class carries the whole value as its title."""

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
            elif c.css:  # long text: clamped to a few lines, the whole value on hover and on click
                out.append(f'<td class="{esc(c.css)}"><div title="{esc(value)}">{esc(text)}</div></td>')
            else:
                out.append(f"<td>{esc(text)}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def share_bar(shares: Mapping[str, float], labels: Sequence[str]) -> str:
    """A stacked bar and legend for label shares (fractions of a total)."""
    parts = [f'<i class="lab-{esc(lab)}" style="width:{100 * shares.get(lab, 0.0):.3f}%" '
             f'title="{esc(lab)} {fmt_pct(shares.get(lab, 0.0))}"></i>' for lab in labels]
    legend = "".join(f'<i class="lab-{esc(lab)}"></i>{esc(lab)} {fmt_pct(shares.get(lab, 0.0))}'
                     for lab in labels if shares.get(lab, 0.0) > 0)
    return f'<div class="bar">{"".join(parts)}</div><div class="legend note">{legend}</div>'


def kpi(value: str, caption: str) -> str:
    """One key number with its caption."""
    return f'<div class="kpi"><b>{esc(value)}</b><span>{esc(caption)}</span></div>'


def finding_html(f: Finding, kernels: Sequence[Kernel]) -> str:
    """One finding as a list item: severity, title, numbers, an example launch, the recommendation
    and its evidence (collapsed)."""
    sev = f["severity"]
    ks = f["kernels"]
    meta = [f"rule {esc(f['rule'])}", f"{fmt_pct(f['time_share'])} of GPU time"]
    if f["est_saving_s"] is not None:
        meta.append(f"est. saving {esc(fmt_saving(f))}")
    if ks:
        meta.append(f"{len(ks)} launch{'es' if len(ks) != 1 else ''}")
    if f.get("label"):
        lim = f.get("limiter")
        meta.append(esc(f.get("label")) + (f" / {esc(lim)}" if lim else ""))
    names = ""
    if ks:
        first = ks[0]
        if 0 <= first < len(kernels):
            name = kernels[first]["name"]
            name = name if len(name) <= 400 else name[:399] + "…"
            names = f'<div class="meta">e.g. <span class="kname">{esc(name)}</span></div>'
    ev = f.get("evidence") or []
    # the evidence behind the label and the numbers, one click away (keeps the findings list short)
    ev_html = (f'<details class="ev"><summary>evidence ({len(ev)})</summary><ul>'
               + "".join(f"<li>{esc(e)}</li>" for e in ev[:8]) + "</ul></details>") if ev else ""
    return (f'<li class="finding"><div class="t"><span class="sev sev-{esc(sev)}">{esc(sev)}</span>'
            f'{esc(f["title"])}</div><div class="meta">{" · ".join(meta)}</div>{names}'
            f'<div class="rec">{esc(f["recommendation"])}</div>{ev_html}</li>')
