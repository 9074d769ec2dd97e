"""Ticket-ready Markdown (GitHub and Jira), rendered only from the contract document dict.

A report is a title line plus the sections that ``MD_SECTIONS_BY_KIND[doc["kind"]]`` builds, in
order. The builders live in one sections module per command, imported directly
(``analyze_sections``, ``fleet_sections``, ``diff_sections``; shared ones in ``common_sections``);
the widgets they build with (``MdSection``, ``md_table``, ``md_esc``) are in
``reports.md_widgets`` (re-exported here).
"""

from __future__ import annotations

from typing import Any

from rooftop.reports import analyze_sections as an
from rooftop.reports import common_sections as common
from rooftop.reports import diff_sections, fleet_sections, timeline_sections
from rooftop.reports.md_widgets import MdBuilder, MdSection, md_esc, md_table

__all__ = ["MD_SECTIONS_BY_KIND", "MdSection", "md_esc", "md_table", "render_markdown"]

MD_SECTIONS_BY_KIND: dict[str, list[MdBuilder]] = {
    "analyze": [common.key_numbers_section, common.findings_md_section, an.top_kernels_md_section,
                timeline_sections.timeline_md_sections, fleet_sections.join_md_section, common.lint_md_section, common.reproduce_md_section],
    "fleet": [common.key_numbers_section, fleet_sections.markdown_sections,
              common.findings_md_section, common.lint_md_section, common.reproduce_md_section],
    "diff": [common.key_numbers_section, timeline_sections.timeline_diff_md_sections, diff_sections.markdown_sections, common.lint_md_section,
             common.reproduce_md_section],
}

TITLES = {"analyze": "rooftop report", "fleet": "rooftop fleet report", "diff": "rooftop diff report"}


def render_markdown(doc: dict[str, Any]) -> str:
    """The whole Markdown report."""
    kind = str(doc.get("kind") or "analyze")
    builders = MD_SECTIONS_BY_KIND.get(kind) or MD_SECTIONS_BY_KIND["analyze"]
    parts = [f"# {TITLES.get(kind, 'rooftop report')}"]
    for b in builders:
        res = b(doc)
        if res is None:
            continue
        for sec in res if isinstance(res, list) else [res]:
            parts.append(f"## {md_esc(sec.title)}\n\n{sec.body}")
    return "\n\n".join(parts) + "\n"
