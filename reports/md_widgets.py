"""Markdown widgets every report section uses: sections and escaped pipe tables.

Section API (how the sections modules plug into :func:`rooftop.reports.markdown.render_markdown`)
------------------------------------------------------------------------------------------------
A Markdown report is a title line plus a list of :class:`MdSection` objects::

    MdSection(title: str, body: str)

``body`` is Markdown that the builder has ALREADY NEUTRALISED: pass every input-derived string
through :func:`md_esc` (or build tables with :func:`md_table`, which escapes cells). A builder is
``Callable[[Document], MdSection | list[MdSection] | None]``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rooftop.analyzer.schema import Document
from rooftop.reports.escape import md as md_esc

__all__ = ["CELL_LIMIT", "MdBuilder", "MdSection", "md_table"]

CELL_LIMIT = 600   # any other cell (titles, recommendations)


@dataclass(frozen=True)
class MdSection:
    """One ``##`` section; ``body`` is pre-escaped Markdown."""

    title: str
    body: str


MdBuilder = Callable[[Document], "MdSection | list[MdSection] | None"]


def md_table(rows: Iterable[Mapping[str, Any]],
             columns: Sequence[tuple[str, str] | tuple[str, str, Callable[[Any], str]]],
             limit: int = CELL_LIMIT) -> str:
    """A pipe table; ``columns`` are ``(key, header)`` or ``(key, header, formatter)``. Every
    cell is escaped (formatter output too), so input strings cannot break the table; cells
    longer than ``limit`` characters are shortened with an ellipsis."""
    heads = [md_esc(c[1]) for c in columns]
    out = ["| " + " | ".join(heads) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for row in rows:
        cells = []
        for c in columns:
            value = row.get(c[0])
            text = c[2](value) if len(c) > 2 else ("—" if value is None else str(value))
            cells.append(md_esc(text, limit=limit) or " ")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)
