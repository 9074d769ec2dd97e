"""Write the requested report files (atomically) and print the terminal summary."""

from __future__ import annotations

from pathlib import Path

from rooftop.analyzer.schema import Document, validate_document
from rooftop.atomic import write_atomic


def write_outputs(doc: Document, html: str | None, md: str | None, json_path: str | None) -> None:
    """Render and write each requested output; each file appears whole or not at all."""
    validate_document(doc)  # the reports boundary: draw only a document of the declared type
    if json_path:
        from rooftop.reports.json_report import render_json_bytes

        write_atomic(json_path, render_json_bytes(doc))  # bytes: no 250 MB str to encode again
    if md:
        from rooftop.reports.markdown import render_markdown, roofline_svg_files

        svgs = roofline_svg_files(doc, md)  # self-contained SVG rooflines next to the Markdown, linked from it
        for path, text in svgs:
            write_atomic(path, text)
        write_atomic(md, render_markdown(doc, svg_names=[Path(p).name for p, _ in svgs]))
    if html:
        from rooftop.reports.html import render_html

        write_atomic(html, render_html(doc))


def print_summary(doc: Document, top: int, outputs: list[str]) -> None:
    """Short plain-text summary on stdout: totals, label shares, top findings, where files went."""
    import click

    from rooftop.reports.terminal import summary_text

    click.echo(summary_text(doc, top=top, outputs=outputs))
