"""rooftop: hierarchical roofline analysis of Nsight Compute, DCGM and timeline exports.

The installed package holds the three stages of ``docs/architecture.md`` as subpackages —
``rooftop.parsers`` (inputs → canonical tables), ``rooftop.analyzer`` (ceilings, labels,
findings → one analysis document) and ``rooftop.reports`` (HTML, Markdown, JSON drawn from that
document) — and this small API:

>>> import rooftop
>>> doc = rooftop.analyze(["run.ncu-rep"], device=None)      # the analysis document (a dict)
>>> doc["kernels"][0]["label"]
>>> same = rooftop.load("analysis.json")                   # a saved ``--json`` document

The document follows ``docs/contract.md`` (``schema_version: 1``).
"""

from __future__ import annotations

from collections.abc import Iterable
from os import PathLike
from typing import Any

from rooftop._version import __version__
from rooftop.errors import InputError

__all__ = ["InputError", "__version__", "analyze", "load"]


def analyze(paths: Iterable[str | PathLike[str]] | str | PathLike[str], device: str | None = None,
            *, top: int = 10, window_s: float | None = None) -> dict[str, Any]:
    """Analyse files or folders of any format rooftop reads; returns the analysis document.

    ``device`` is a built-in device name or a JSON/YAML ceilings file, as ``--device`` on the
    command line; ``window_s`` None chooses the DCGM window from the capture, as the command line
    does (docs/formulas.md#windows). Unusable input raises :class:`rooftop.InputError`."""
    from rooftop.analyzer.pipeline import run_analysis

    items = [paths] if isinstance(paths, (str, PathLike)) else list(paths)
    return run_analysis([str(p) for p in items], device=device, top=top, window_s=window_s,
                        command="rooftop.analyze()")


def load(path: str | PathLike[str]) -> dict[str, Any]:
    """Load a document saved with ``--json`` (analyze, fleet or diff), checking its schema version."""
    import json


    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as exc:
        raise InputError(str(path), f"cannot read a rooftop JSON document ({exc})") from exc
    if not isinstance(doc, dict) or doc.get("schema_version") != 1:
        raise InputError(str(path), "not a rooftop document of schema_version 1",
                         "write one with `rooftop analyze … --json PATH`")
    return doc
