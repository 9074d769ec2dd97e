"""The JSON output: the contract document, strict JSON (no NaN/Infinity), UTF-8 kept."""

from __future__ import annotations

from typing import Any

from reports.escape import dumps

# Above this many kernels or windows the JSON is written compact: with ``indent``, Python's
# json module falls back to its pure-Python encoder, which dominated a 100k-kernel run
# (bench/NOTES.md). Small documents stay indented for people reading them.
COMPACT_ABOVE = 10_000


def render_json(doc: dict[str, Any]) -> str:
    """``json.dumps(doc, allow_nan=False, indent=1)``; non-finite numbers become ``null``.

    Large documents (more than ``COMPACT_ABOVE`` kernels or windows) are written without
    indentation; the content is the same.
    """
    rows = max(len(doc.get("kernels") or []), len(doc.get("windows") or []))
    return dumps(doc, indent=None if rows > COMPACT_ABOVE else 1) + "\n"
