"""The JSON output: the contract document, strict JSON (no NaN/Infinity), UTF-8 kept."""

from __future__ import annotations

from rooftop.analyzer.schema import Document
from rooftop.reports.escape import dumps_bytes

# Above this many kernels or windows the JSON is written compact; small documents stay indented
# (two spaces) for people reading them. The content is the same.
COMPACT_ABOVE = 10_000


def render_json_bytes(doc: Document) -> bytes:
    """The document as strict JSON in UTF-8 (what ``--json`` writes); non-finite numbers are ``null``."""
    rows = max(len(doc["kernels"]), len(doc["windows"]))
    return dumps_bytes(doc, indent=rows <= COMPACT_ABOVE, newline=True)


def render_json(doc: Document) -> str:
    """:func:`render_json_bytes` as text."""
    return render_json_bytes(doc).decode("utf-8")
