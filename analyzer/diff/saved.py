"""A saved rooftop JSON document as a diff side (docs/formulas.md#diff): read once, by every kind of diff."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rooftop.analyzer.diff.match import _HINT
from rooftop.errors import InputError

__all__ = ["read_document"]


def read_document(path: Path) -> dict[str, Any] | None:
    """A rooftop JSON document at ``path``, or None when the file is not one."""
    try:
        with path.open("rb") as fh:
            head = fh.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError as exc:
        raise InputError(str(path), f"cannot be read ({exc.strerror})", _HINT) from exc
    if not head.startswith(b"{"):
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8-sig"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(doc, dict) or "schema_version" not in doc:
        return None
    tool = doc.get("tool")
    if not isinstance(tool, dict) or tool.get("name") != "rooftop":
        return None
    return doc
