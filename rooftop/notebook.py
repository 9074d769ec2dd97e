"""rooftop in a notebook: the document's tables as DataFrames and a summary the notebook shows.

:func:`kernels`, :func:`findings`, :func:`windows`, :func:`steps` and :func:`ops` return one row per
entry of the document, nested keys flattened and units in the column names
(:mod:`rooftop.reports.frames`). The documents :func:`rooftop.analyze`, :func:`rooftop.diff` and
:func:`rooftop.fleet` return are plain dicts of the typed :class:`~rooftop.analyzer.schema.Document`
shape at run time too; they are :class:`Shown`, a ``dict`` that a notebook displays as the report
summary (``_repr_html_``) instead of a page of nested JSON.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import pandas as pd

    from rooftop.analyzer.schema import Document

__all__ = ["Shown", "findings", "kernels", "ops", "shown", "steps", "windows"]


class Shown(dict[str, Any]):
    """A document (a ``dict``, equal to the plain one) that a notebook shows as its summary."""

    def _repr_html_(self) -> str:
        from rooftop.reports.terminal import summary_text

        text = summary_text(cast(Any, self), top=5)
        return ('<div class="rooftop-summary"><pre style="white-space: pre-wrap">'
                f"{html.escape(text)}</pre></div>")

    def __repr__(self) -> str:
        kinds = self.get("kind", "?")
        counts = ", ".join(f"{len(self.get(k) or [])} {k}" for k in ("kernels", "findings", "windows"))
        return f"<rooftop {kinds} document: {counts}; rooftop.kernels(doc) etc. for tables>"


def shown(doc: Mapping[str, Any]) -> Document:
    """``doc`` as a :class:`Shown` (same keys and values; typed as the document)."""
    return cast("Document", Shown(doc))


def _table(doc: Document | Mapping[str, Any], name: str) -> pd.DataFrame:
    from rooftop.reports.frames import table

    return table(cast(Mapping[str, Any], doc), name)


def kernels(doc: Document | Mapping[str, Any]) -> pd.DataFrame:
    """One row per kernel launch: name, family, label, limiter, ``duration_s``, ``sol_*_pct``,
    ``*_bytes``, ``*_intensity_flop_per_byte``, ``*_flop_s``, evidence (``; ``-joined), ``extra_*``."""
    return _table(doc, "kernels")


def findings(doc: Document | Mapping[str, Any]) -> pd.DataFrame:
    """One row per ranked finding: rank, rule, severity, title, ``est_saving_s``,
    ``time_share_fraction``, recommendation, evidence."""
    return _table(doc, "findings")


def windows(doc: Document | Mapping[str, Any]) -> pd.DataFrame:
    """One row per DCGM window: gpu, start, end, label, limiter, ``metrics_*``."""
    return _table(doc, "windows")


def steps(doc: Document | Mapping[str, Any]) -> pd.DataFrame:
    """One row per profiler step or top-level range of a timeline (nsys, Kineto)."""
    return _table(doc, "steps")


def ops(doc: Document | Mapping[str, Any]) -> pd.DataFrame:
    """One row per framework op where the document has them (empty otherwise)."""
    return _table(doc, "ops")
