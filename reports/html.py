"""The self-contained HTML report, rendered only from the analysis document (``Document``).

One file: CSS, static SVG charts and one small page script inlined (no plotly.js: every chart is
SVG drawn from the document, hover through ``<title>``), a restrictive CSP, no network request,
opens offline in any browser. Input-derived strings are escaped
everywhere (``reports.escape``); data never becomes an inline event handler.

A page is the list of sections that ``SECTIONS_BY_KIND[doc["kind"]]`` builds, in page order. The
builders live in one sections module per command, imported directly: ``analyze_sections``
(+ ``timelines`` for DCGM windows), ``fleet_sections``, ``diff_sections``; the sections every kind
shares are in ``common_sections``. The widgets they build with (``Section``, ``Column``,
``table``) are in ``reports.widgets``, ``esc`` in ``reports.escape``; the charts in ``svg_roofline``
and ``svg_charts``.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Sequence

from rooftop.analyzer.schema import Document, Kind
from rooftop.reports import analyze_sections as an
from rooftop.reports import common_sections as common
from rooftop.reports import (
    diff_sections,
    fleet_sections,
    health_sections,
    links_sections,
    ops_sections,
    timeline_sections,
    timelines,
    trend_sections,
)
from rooftop.reports.escape import esc
from rooftop.reports.kernel_table import kernel_table_section
from rooftop.reports.widgets import Section, SectionBuilder

__all__ = ["SECTIONS_BY_KIND", "render_html"]

def csp(scripts: Sequence[str]) -> str:
    """The page's Content-Security-Policy: only rooftop's own inline scripts run (by their SHA-256),
    so an escaping slip can never execute; nothing is fetched."""
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(js.encode('utf-8')).digest()).decode()}'"
                      for js in scripts)
    return f"default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'; img-src data:"


def build_sections(doc: Document) -> list[Section]:
    """Run the builders registered for ``doc["kind"]`` (a kind without its own page gets the analyze page)."""
    builders = SECTIONS_BY_KIND.get(doc["kind"]) or SECTIONS_BY_KIND["analyze"]
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


def render_html(doc: Document) -> str:
    """The whole page as one string."""
    return render_page(doc, build_sections(doc))


SECTIONS_BY_KIND: dict[Kind, list[SectionBuilder]] = {
    "analyze": [an.summary_section, common.findings_section, health_sections.health_section, an.roofline_section, kernel_table_section,
                timelines.dcgm_sections, links_sections.links_section, timeline_sections.timeline_sections, ops_sections.ops_sections, fleet_sections.join_section,
                an.devices_section, common.lint_section,
                common.inputs_section, common.provenance_section],
    "fleet": [fleet_sections.overview_section, fleet_sections.sections, links_sections.links_section,
              common.findings_section,
              common.lint_section, fleet_sections.devices_section, common.inputs_section, common.provenance_section],
    "diff": [common.overview_section, diff_sections.sections,
             common.lint_section,
             common.inputs_section, common.provenance_section],
    "trend": [trend_sections.sections, common.lint_section, common.inputs_section, common.provenance_section],
}


# ============================================================================= page


def _template(name: str) -> str:
    from importlib import resources

    # one name per joinpath() call: several arrived in Python 3.11
    return resources.files("rooftop.reports").joinpath("templates").joinpath(name).read_text(encoding="utf-8")


TITLES: dict[Kind, str] = {"analyze": "rooftop report", "fleet": "rooftop fleet report",
                           "diff": "rooftop diff report", "trend": "rooftop trend report"}


def render_page(doc: Document, sections: Sequence[Section]) -> str:
    """Assemble the page around ``sections``: header, table of contents, the page script."""
    title = TITLES.get(doc["kind"], "rooftop report")
    run = doc["run"]
    parts: list[str] = []
    toc: list[str] = []
    for n, sec in enumerate(sections):
        anchor = sec.anchor or f"s{n}"
        toc.append(f'<a href="#{esc(anchor)}">{esc(sec.title)}</a>')
        note = f'<p class="note">{esc(sec.note)}</p>' if sec.note else ""
        parts.append(f'<section id="{esc(anchor)}"><h2>{esc(sec.title)}</h2>{note}{sec.html_body}'
                     "</section>")
    # a device listed twice (export and builtin entries of one GPU) is named once in the header
    devices = ", ".join(dict.fromkeys(d["name"] for d in doc["devices"] if d["name"]))
    sub = " · ".join(x for x in (f"rooftop {doc['tool']['version']}", run["created"], devices) if x)
    scripts = [_template("report.js")]
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f'<meta http-equiv="Content-Security-Policy" content="{csp(scripts)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>{esc(title)}</title><style>{_template('report.css')}</style></head><body>",
        f'<header class="top"><h1>{esc(title)}</h1><div class="sub">{esc(sub)}</div>',
        "</header>",
        f'<nav class="toc">{"".join(toc)}</nav><main>{"".join(parts)}</main>',
        *(f"<script>{js}</script>\n" for js in scripts),
        "</body></html>\n",
    ])
