"""The JSON output: the contract document, strict JSON (no NaN/Infinity), UTF-8 kept."""

from __future__ import annotations

from typing import Any

from reports.escape import dumps


def render_json(doc: dict[str, Any]) -> str:
    """``json.dumps(doc, allow_nan=False, indent=1)``; non-finite numbers become ``null``."""
    return dumps(doc, indent=1) + "\n"
