"""Ticket-ready Markdown (GitHub and Jira), rendered only from the analysis document (``Document``).

A report is a title line plus the sections that ``MD_SECTIONS_BY_KIND[doc["kind"]]`` builds, in
order. The builders live in one sections module per command, imported directly
(``analyze_sections``, ``fleet_sections``, ``diff_sections``; shared ones in ``common_sections``);
the widgets they build with (``MdSection``, ``md_table``, ``md_esc``) are in
``reports.md_widgets`` (``md_esc`` is ``reports.escape.md``).
"""

from __future__ import annotations

from pathlib import Path

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
from rooftop.reports.escape import md as md_esc
from rooftop.reports.md_widgets import MdBuilder

__all__ = ["MD_SECTIONS_BY_KIND", "render_markdown"]

MD_SECTIONS_BY_KIND: dict[Kind, list[MdBuilder]] = {
    "analyze": [common.key_numbers_section, common.findings_md_section, health_sections.health_md_section,
                common.recommendations_md_section,
                an.roofline_md_section, an.top_kernels_md_section,
                timelines.dcgm_md_section, links_sections.links_md_section,
                timeline_sections.timeline_md_sections, ops_sections.ops_md_sections, fleet_sections.join_md_section, common.lint_md_section, common.reproduce_md_section],
    "fleet": [common.key_numbers_section, fleet_sections.markdown_sections, links_sections.links_md_section,
              common.findings_md_section, common.lint_md_section, common.reproduce_md_section],
    "diff": [common.key_numbers_section, diff_sections.markdown_sections, common.lint_md_section,
             common.reproduce_md_section],
    "trend": [trend_sections.markdown_sections, common.lint_md_section, common.reproduce_md_section],
}

TITLES: dict[Kind, str] = {"analyze": "rooftop report", "fleet": "rooftop fleet report",
                           "diff": "rooftop diff report", "trend": "rooftop trend report"}


def roofline_svg_files(doc: Document, md_path: str) -> list[tuple[str, str]]:
    """``(path, svg)`` per roofline chart to write next to ``md_path``: ``<stem>.roofline.svg``, then
    ``<stem>.roofline-2.svg``... (static, self-contained: the chart of the HTML report)."""
    from rooftop.reports.svg_roofline import roofline_svg, window_roofline_svg

    view = doc.get("roofline")
    if view is None:
        return []
    families = an.family_rows(doc)
    svgs = [roofline_svg(p, families, title=an.panel_title(p)) for p in view["panels"] if p["placed"]]
    svgs += [window_roofline_svg(p, title=an.panel_title(p)) for p in view["windows"]]
    base = Path(md_path)
    stem = base.name[:-3] if base.name.lower().endswith(".md") else base.name
    out = []
    for n, svg in enumerate(svgs, 1):
        name = f"{stem}.roofline{'' if n == 1 else f'-{n}'}.svg"
        out.append((str(base.with_name(name)), '<?xml version="1.0" encoding="utf-8"?>\n' + svg + "\n"))
    return out


def render_markdown(doc: Document, svg_names: list[str] | None = None) -> str:
    """The whole Markdown report; ``svg_names``: the roofline SVG files written next to it (linked)."""
    kind = doc["kind"]
    builders = MD_SECTIONS_BY_KIND.get(kind) or MD_SECTIONS_BY_KIND["analyze"]  # a kind without its own page
    parts = [f"# {TITLES.get(kind, 'rooftop report')}"]
    for b in builders:
        res = an.roofline_md_section(doc, svg_names or []) if b is an.roofline_md_section else b(doc)
        if res is None:
            continue
        for sec in res if isinstance(res, list) else [res]:
            parts.append(f"## {md_esc(sec.title)}\n\n{sec.body}")
    return "\n\n".join(parts) + "\n"
