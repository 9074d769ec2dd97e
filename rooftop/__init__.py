"""rooftop: hierarchical roofline analysis of Nsight Compute, DCGM and timeline exports.

The installed package holds the three stages of ``docs/architecture.md`` as subpackages —
``rooftop.parsers`` (inputs → canonical tables), ``rooftop.analyzer`` (ceilings, labels,
findings → one analysis document) and ``rooftop.reports`` (HTML, Markdown, JSON drawn from that
document) — and this small API, the command line's commands as functions:

>>> import rooftop
>>> doc = rooftop.analyze(["run.ncu-rep"], device=None)      # the analysis document
>>> doc["kernels"][0]["label"]
>>> rooftop.kernels(doc)                                   # a DataFrame (also findings, windows, steps, ops)
>>> d = rooftop.diff("before.ncu-rep", "after.ncu-rep", fail_on=5)   # d["verdict"]["fail"]
>>> rooftop.ingest(["dmon.txt"], "/data/fleet", interval_s=1, start="2026-11-21T22:00:00Z", host="n17")
>>> f = rooftop.fleet("/data/fleet", by=["host"])
>>> same = rooftop.load("analysis.json")                   # a saved ``--json`` document

The documents follow ``docs/contract.md`` (``schema_version: 1``); their type is
:class:`rooftop.analyzer.schema.Document`. In a notebook a document shows as its summary
(:mod:`rooftop.notebook`). Unusable input raises :class:`rooftop.InputError` (one line: file, what,
what to do).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING

from rooftop._version import __version__
from rooftop.errors import InputError
from rooftop.notebook import findings, kernels, ops, steps, windows

if TYPE_CHECKING:
    from rooftop.analyzer.schema import Document
    from rooftop.analyzer.store.ingest_summary import IngestSummary
    from rooftop.parsers.source import ParseOptions

__all__ = ["InputError", "__version__", "analyze", "diff", "findings", "fleet", "ingest", "kernels", "load",
           "ops", "steps", "windows"]


def analyze(paths: Iterable[str | PathLike[str]] | str | PathLike[str], device: str | None = None,
            *, top: int = 10, window_s: float | None = None, interval_s: float | None = None,
            start: datetime | str | None = None, host: str | None = None,
            since: datetime | str | None = None, until: datetime | str | None = None,
            match: Iterable[str] = (), step_s: float | None = None,
            token_file: str | None = None, kernel: str | None = None) -> Document:
    """Analyse files or folders of any format rooftop reads; returns the analysis document.

    ``device`` is a built-in device name or a JSON/YAML ceilings file, as ``--device`` on the
    command line; ``window_s`` None chooses the DCGM window from the capture, as the command line
    does (docs/formulas.md#windows). As the command's options: ``interval_s``, ``start`` (a datetime,
    naive = UTC, or ISO 8601 text) and ``host`` for dmon streams; ``since``/``until`` (and
    ``match``, ``step_s``, ``token_file``) for ``http(s)://`` Prometheus inputs; ``kernel`` as
    ``-k``: only the ncu kernels whose name matches that regular expression."""
    from rooftop.analyzer.pipeline import run_analysis
    from rooftop.notebook import shown

    items = _paths(paths)
    options = _options(items, interval_s, start, host, since, until, match, step_s, token_file)
    return shown(run_analysis(items, options=options, device=device, top=top, window_s=window_s,
                              command="rooftop.analyze()", kernel=kernel))


def load(path: str | PathLike[str]) -> Document:
    """Load a document saved with ``--json`` (analyze, fleet or diff), checking its schema version
    and then its type (``validate_document``: a key of the wrong type raises
    :class:`rooftop.InputError` naming it)."""
    import json

    from rooftop.analyzer.schema import checked_document
    from rooftop.errors import SchemaError

    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as exc:
        raise InputError(str(path), f"cannot read a rooftop JSON document ({exc})") from exc
    if not isinstance(doc, dict) or doc.get("schema_version") != 1:
        raise InputError(str(path), "not a rooftop document of schema_version 1",
                         "write one with `rooftop analyze … --json PATH`")
    try:
        return checked_document(doc)
    except SchemaError as exc:
        raise InputError(str(path), str(exc), "write it again with this rooftop's `--json`") from exc


def _when(value: datetime | str | None) -> datetime | None:
    """A time for the options: a datetime (naive = UTC) or ISO 8601 text (``Z`` accepted)."""
    from datetime import datetime, timezone

    if value is None:
        return None
    when = datetime.fromisoformat(value.replace("Z", "+00:00")) if isinstance(value, str) else value
    return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)


def _options(items: list[str], interval_s: float | None, start: datetime | str | None, host: str | None,
             since: datetime | str | None, until: datetime | str | None, match: Iterable[str],
             step_s: float | None, token_file: str | None) -> ParseOptions:
    from rooftop.parsers.prometheus.http import range_query
    from rooftop.parsers.source import ParseOptions

    return ParseOptions(interval_s=interval_s, start=_when(start), host=host,
                        prometheus=range_query(items, _when(since), _when(until), tuple(match), step_s,
                                               token_file))


def _paths(paths: Iterable[str | PathLike[str]] | str | PathLike[str]) -> list[str]:
    return [str(p) for p in ([paths] if isinstance(paths, (str, PathLike)) else list(paths))]


def diff(baseline: str | PathLike[str], candidate: str | PathLike[str], *, fail_on: float | None = None,
         device: str | None = None, gate: str = "total", min_effect: float | None = None) -> Document:
    """``rooftop diff``: two runs (ncu exports, timelines or saved ``--json`` analyses) compared;
    ``doc["verdict"]["fail"]`` is what ``--fail-on`` would exit 1 on; ``min_effect`` as
    ``--min-effect`` (None: its default) (docs/formulas.md#diff)."""
    from rooftop.analyzer.diff.gate import MIN_EFFECT_PCT
    from rooftop.analyzer.diff.sides import run_diff
    from rooftop.notebook import shown

    return shown(run_diff(str(baseline), str(candidate), fail_on=fail_on, device=device,
                          command="rooftop.diff()", gate=gate,
                          min_effect=MIN_EFFECT_PCT if min_effect is None else min_effect))


def ingest(inputs: Iterable[str | PathLike[str]] | str | PathLike[str], to: str | PathLike[str], *,
           interval_s: float | None = None, start: datetime | str | None = None, host: str | None = None,
           since: datetime | str | None = None, until: datetime | str | None = None,
           match: Iterable[str] = (), step_s: float | None = None, token_file: str | None = None,
           finished: bool = False) -> IngestSummary:
    """``rooftop ingest``: DCGM inputs (files, folders, ``http(s)://`` Prometheus servers with
    ``since``/``until``) into the Parquet dataset ``to``; returns what was ingested
    (``summary.lines()`` is what the command prints)."""
    from rooftop.analyzer.store.ingest import ingest_sources

    items = _paths(inputs)
    options = _options(items, interval_s, start, host, since, until, match, step_s, token_file)
    return ingest_sources(items, Path(to), options, options.prometheus, finished=finished)


def fleet(dataset: str | PathLike[str], *, since: datetime | str | None = None,
          until: datetime | str | None = None, by: Iterable[str] = ("host",), engine: str = "local",
          scheduler: str | None = None, workers: int = 2, window_s: float = 60.0,
          device: str | None = None, top: int = 10) -> Document:
    """``rooftop fleet``: the analysis of an ingested dataset (window labels, roll-ups per ``by``
    group, ranked fleet findings); the last 24 h of data unless ``since``/``until``."""
    from rooftop.analyzer.fleet.pipeline import run_fleet
    from rooftop.notebook import shown

    return shown(run_fleet(Path(dataset), since=_when(since), until=_when(until), by=list(by), engine=engine,
                           scheduler=scheduler, workers=workers, window_s=window_s, device=device, top=top,
                           command="rooftop.fleet()"))
