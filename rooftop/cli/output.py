"""What the commands print and write: the reports (:func:`emit`), lines on the terminal (:func:`echo`,
every one escaped), the progress bar, and the refusal to overwrite an input."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from rooftop.cli.options import STDOUT, Outputs
from rooftop.errors import InputError
from rooftop.reports.terminal import escape_terminal

if TYPE_CHECKING:
    from rooftop.analyzer.schema import Document

T = TypeVar("T")


def emit(doc: Document, outputs: Outputs, top: int) -> None:
    """Write the report files, the stdout document if asked, then the terminal summary (to stderr
    when stdout carries a document)."""
    from rooftop.reports.outputs import write_outputs
    from rooftop.reports.terminal import summary_text, terminal_width

    write_outputs(doc, html=outputs.html, md=None if outputs.md == STDOUT else outputs.md,
                  json_path=None if outputs.json == STDOUT else outputs.json)
    if outputs.json == STDOUT:
        from rooftop.reports.json_report import render_json_bytes

        _to_stdout(render_json_bytes(doc))
    elif outputs.md == STDOUT:
        from rooftop.reports.markdown import render_markdown

        _to_stdout(render_markdown(doc).encode("utf-8"))
    if outputs.csv:
        from rooftop.reports.frames import write_csv

        write_csv(doc, outputs.csv_files)
    if not outputs.quiet:
        stream = sys.stderr if outputs.to_stdout else sys.stdout
        echo(summary_text(doc, top=top, outputs=outputs.files, width=terminal_width(stream)), err=outputs.to_stdout)
    if outputs.open and outputs.html:
        click.launch(str(Path(outputs.html).resolve()))


def emit_ci(doc: Document, junit: str | None, outputs: Outputs) -> None:
    """What CI reads (docs/contract.md#ci): ``--junit``; on GitHub Actions the job summary appended
    to ``$GITHUB_STEP_SUMMARY`` and annotations (``GITHUB_ACTIONS=true``) on stdout, or on stderr
    when stdout carries a document."""
    import os

    from rooftop.atomic import write_atomic
    from rooftop.reports.ci import junit_xml, step_summary, workflow_commands

    if junit:
        write_atomic(junit, junit_xml(doc))
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            with open(summary, "a", encoding="utf-8") as fh:
                fh.write(step_summary(doc))
        except OSError as exc:
            raise InputError(summary, f"(GITHUB_STEP_SUMMARY) cannot be appended to ({exc.strerror})",
                             "unset GITHUB_STEP_SUMMARY or make it writable") from exc
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in workflow_commands(doc):
            click.echo(line, err=outputs.to_stdout)  # workflow commands, escaped by reports.ci for their syntax


def _to_stdout(data: bytes) -> None:
    stream = sys.stdout.buffer
    stream.write(data if data.endswith(b"\n") else data + b"\n")
    stream.flush()


def echo(text: str | list[str], err: bool = False) -> None:
    """Print lines rooftop composed: each line's control and bidi characters escaped. A list is
    printed one entry per line, so a newline inside an entry (a file name) is escaped too."""
    lines = text if isinstance(text, list) else text.split("\n")
    click.echo("\n".join(escape_terminal(line) for line in lines), err=err)


def fit_lines(lines: list[str], err: bool = False) -> list[str]:
    """Lines laid out for the width of the terminal they go to (:func:`rooftop.reports.terminal.fit`;
    whole when it is not a terminal), each escaped first, so a newline in a file name stays a
    visible ``\\n`` in its line."""
    from rooftop.reports.terminal import fit, terminal_width

    width = terminal_width(sys.stderr if err else sys.stdout)
    return [out for line in lines for out in fit(escape_terminal(line), width)]


def guard_outputs(inputs: list[str], outputs: list[str]) -> None:
    """Refuse an output path that is one of the inputs (``analyze run.csv --html run.csv``)."""
    from rooftop.parsers.folders import scan_inputs

    given = {Path(p).resolve() for p in scan_inputs(inputs, skip_unreadable=True).files}  # the reading says the rest
    for out in outputs:
        if Path(out).resolve() in given:
            raise InputError(out, "is also an input; refusing to overwrite it", "choose another output path")
        root = dataset_holding(out)
        if root is not None:
            raise InputError(out, f"is one of the fleet dataset {root}'s own files (its commit record, lock, "
                             "partitions or pulled hours); refusing to write over it",
                             "write reports outside the dataset's files")


def dataset_holding(out: str) -> Path | None:
    """The fleet dataset whose own files ``out`` would overwrite (``_manifest.json``, ``_ingest.lock``,
    their temporaries, ``_prometheus/…``, ``date=…/…``), or None. A dataset is a folder holding a
    ``_manifest.json`` or an ``_ingest.lock``; another file in its top folder is not its own."""
    path = Path(out).resolve()
    for root in path.parents:
        if not ((root / "_manifest.json").exists() or (root / "_ingest.lock").exists()):
            continue
        first = path.relative_to(root).parts[0]
        if first in ("_manifest.json", "_ingest.lock", "_prometheus") or first.startswith(("date=", "._manifest.json.")):
            return root
    return None


# ----------------------------------------------------------------------------- progress

def show_progress(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty()


class _Bar:
    """The progress callback the library takes (rooftop.progress): a click bar on stderr over a list
    of items (files, or named stages: the current one shown after the bar), and, through
    :meth:`bytes`, over the bytes of one large input as it is read."""

    def __call__(self, items: Sequence[T], label: str) -> AbstractContextManager[Iterable[T]]:
        return click.progressbar(items, label=label, file=sys.stderr, item_show_func=_item_name)

    @contextmanager
    def bytes(self, label: str, total: int) -> Iterator[Callable[[int], None]]:
        with click.progressbar(length=total, label=label, file=sys.stderr) as bar:
            done = [0]

            def advance(position: int) -> None:
                if position > done[0]:
                    bar.update(min(position, total) - done[0])
                    done[0] = min(position, total)

            yield advance


def _item_name(item: object) -> str | None:
    """What the bar says it is on: a stage's name, a file's name (not its folders), cut to 40."""
    if item is None:
        return None
    name = Path(str(item)).name or str(item)
    return escape_terminal(name if len(name) <= 40 else name[:39] + "…")


progress_bar = _Bar()
