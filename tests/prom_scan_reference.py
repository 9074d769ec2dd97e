"""A plain per-line reference implementation of parsers/prometheus/scan.py (see its module docstring).

Obviously correct rather than fast: split the chunk at ``\\n``; a line is *fast* when it starts with
``DCGM_FI_``, (one trailing ``\\r`` dropped) it has a ``}``, and its last ``}`` plus what follows it
(at most ``MAX_TAIL_BYTES`` bytes) is ``} value`` or ``} value ts``: single spaces, a value without
ASCII whitespace, ``ts`` ASCII digits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rooftop.parsers.prometheus.scan import MAX_TAIL_BYTES, METRIC_PREFIX

_TAIL = re.compile(rb" ([^\t\n\x0b\x0c\r ]+)(?: ([0-9]+))?")  # after the "}"


@dataclass(frozen=True)
class RefScan:
    rest: list[int]  # 0-based indices of the lines the general path gets
    rest_text: list[str]  # their text
    fast: dict[int, tuple[str, str, str | None]]  # line index -> (head, value, ts or None)


def reference_scan(data: bytes) -> RefScan:
    """What :func:`rooftop.parsers.prometheus.scan.scan_chunk` must find in ``data``."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:  # no fast lines; the lines as decoded with replacement characters
        lines = data.decode("utf-8", "replace").split("\n")
        return RefScan(list(range(len(lines))), lines, {})
    rest: list[int] = []
    rest_text: list[str] = []
    fast: dict[int, tuple[str, str, str | None]] = {}
    for i, line in enumerate(data.split(b"\n")):
        got = _fast_line(line)
        if got is None:
            rest.append(i)
            rest_text.append(line.decode("utf-8"))
        else:
            fast[i] = got
    return RefScan(rest, rest_text, fast)


def _fast_line(line: bytes) -> tuple[str, str, str | None] | None:
    if not line.startswith(METRIC_PREFIX.encode()):
        return None
    body = line[:-1] if line.endswith(b"\r") else line
    q = body.rfind(b"}")
    if q < 0:
        return None
    head, tail = body[: q + 1], body[q + 1:]
    if len(tail) + 1 > MAX_TAIL_BYTES:
        return None
    m = _TAIL.fullmatch(tail)
    if m is None:
        return None
    ts = m.group(2)
    return head.decode("utf-8"), m.group(1).decode("utf-8"), ts.decode("ascii") if ts is not None else None
