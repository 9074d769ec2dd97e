"""rooftop: hierarchical roofline analysis of Nsight Compute, DCGM and timeline exports.

The installed package holds the three stages of ``docs/architecture.md`` as subpackages —
``rooftop.parsers`` (inputs → canonical tables), ``rooftop.analyzer`` (ceilings, labels,
findings → one analysis document) and ``rooftop.reports`` (HTML, Markdown, JSON drawn from that
document) — and this small API:

>>> import rooftop
>>> doc = rooftop.analyze(["run.ncu-rep"], device=None)      # the analysis document (a typed dict)
>>> doc["kernels"][0]["label"]
>>> same = rooftop.load("analysis.json")                   # a saved ``--json`` document

The document follows ``docs/contract.md`` (``schema_version: 1``); its type is
:class:`rooftop.analyzer.schema.Document` (a ``TypedDict``: the package ships ``py.typed``, so
mypy checks what a caller reads from it).
"""

from __future__ import annotations

from collections.abc import Iterable
from os import PathLike
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rooftop.analyzer.schema import Document

from rooftop._version import __version__
from rooftop.errors import InputError

__all__ = ["InputError", "__version__", "analyze", "load"]


def analyze(paths: Iterable[str | PathLike[str]] | str | PathLike[str], device: str | None = None,
            *, top: int = 10, window_s: float | None = None) -> Document:
    """Analyse files or folders of any format rooftop reads; returns the analysis document.

    ``device`` is a built-in device name or a JSON/YAML ceilings file, as ``--device`` on the
    command line; ``window_s`` None chooses the DCGM window from the capture, as the command line
    does (docs/formulas.md#windows). Unusable input raises :class:`rooftop.InputError`."""
    from rooftop.analyzer.pipeline import run_analysis

    items = [paths] if isinstance(paths, (str, PathLike)) else list(paths)
    return run_analysis([str(p) for p in items], device=device, top=top, window_s=window_s,
                        command="rooftop.analyze()")


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
