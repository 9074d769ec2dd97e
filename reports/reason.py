"""A verdict's reason cut to fit a ticket or a job summary: at a sentence or list-item boundary,
never mid-word, saying how much was left out (the JSON output keeps it whole)."""

from __future__ import annotations

import re

from rooftop.reports.escape import md as md_esc

REASON_LIMIT = 2000
"""Characters of a reason in a Markdown report (a job summary allows more, see ``reports.ci``)."""
_BOUNDARY = re.compile(r"(?<=[.;])\s+(?=\S)")


def clip(text: str, limit: int = REASON_LIMIT) -> str:
    """``text`` whole when it fits in ``limit`` characters; else its first sentences / ``;``-items
    that fit, then ``… (N more sentence(s) or item(s), C characters, left out: the JSON output has
    the whole reason)``. One part longer than the room is cut at its last space."""
    if len(text) <= limit:
        return text
    parts = _BOUNDARY.split(text)
    room = limit - 120  # the note
    kept: list[str] = []
    used = 0
    for part in parts:
        if used + len(part) + 1 > room:
            break
        kept.append(part)
        used += len(part) + 1
    if kept:
        head = " ".join(kept).rstrip(";")
        left = len(parts) - len(kept)
        return (f"{head} … ({left} more sentence(s) or item(s), {len(text) - len(head)} characters, left out: "
                "the JSON output has the whole reason)")
    cut = text[:room].rsplit(" ", 1)[0]
    return f"{cut} … ({len(text) - len(cut)} characters left out: the JSON output has the whole reason)"


def clip_reason(text: str, limit: int = REASON_LIMIT) -> str:
    """:func:`clip`, escaped for Markdown."""
    return md_esc(clip(str(text), limit))
