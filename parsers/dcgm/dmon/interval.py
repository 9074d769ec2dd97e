"""The tick interval of ``dcgmi dmon`` text: the file's own ``-d``, the user's, or the default.

``dcgmi dmon`` prints no timestamps: tick *k* is stamped ``start + k * interval``
(docs/formulas.md#inputs), so a wrong interval stretches or squeezes every window. When the file
holds the command that produced it (``$ dcgmi dmon -e 1001,1004 -d 5000``, a shell prompt pasted
with the output), its ``-d``/``--delay`` (milliseconds) is the interval. Rules:

* ``--interval`` given: it is used; a file ``-d`` that disagrees is recorded in the input's meta.
* Else one ``-d`` value in the file (however often repeated): that value.
* Else no ``-d``: ``dcgmi dmon``'s default, 1000 ms (``dcgmi dmon --help``: "-d, --delay ...
  default = 1000 msec").
* Else several different ``-d`` values (several runs pasted into one file): the ticks of each run
  would need their own interval, so the file is refused with the lines and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from rooftop.errors import InputError
from rooftop.parsers.source import DEFAULT_INTERVAL_S, ParseOptions

COMMAND = re.compile(rb"dcgmi[ \t]+dmon\b[^\n]*")
MIN_MS, MAX_MS = 1, 86_400_000  # dcgmi dmon's minimum -d 1 ms; --interval's upper bound, one day
DELAY = re.compile(rb"(?:[ \t]-d[ \t]*|[ \t]--delay(?:=|[ \t]+))(\d+)\b")


@dataclass(frozen=True)
class Interval:
    """The interval used (s) and where it came from, for the input's meta."""

    seconds: float
    source: str


def tap(blocks: Iterable[bytes], found: list[tuple[int, int]]) -> Iterator[bytes]:
    """The blocks unchanged, appending ``(line, milliseconds)`` of every ``dcgmi dmon ... -d N``
    command to ``found`` as they pass (blocks of whole ``\\n``-separated lines, as
    :func:`rooftop.parsers.dcgm.dmon.reader._blocks` yields them: a block of m newlines holds m + 1 lines)."""
    lines_before = 0
    for block in blocks:
        if b"dmon" in block:
            for m in COMMAND.finditer(block):
                d = DELAY.search(m.group(0))
                if d:
                    found.append((lines_before + block.count(b"\n", 0, m.start()) + 1, int(d.group(1))))
        lines_before += block.count(b"\n") + 1
        yield block


def delays(blocks: Iterable[bytes]) -> list[tuple[int, int]]:
    """Every ``(line, milliseconds)`` of :func:`tap` over all the blocks."""
    found: list[tuple[int, int]] = []
    for _ in tap(blocks, found):
        pass
    return found


def resolve(path: str, opts: ParseOptions, found: list[tuple[int, int]]) -> Interval:
    """The interval for ``path`` by the rules above."""
    values = sorted({ms for _, ms in found})
    if opts.interval_s is not None:
        clash = [f"line {ln}: -d {ms}" for ln, ms in found if abs(ms / 1000 - opts.interval_s) > 1e-9]
        note = f" (the file says {clash[0]})" if clash else ""
        return Interval(float(opts.interval_s), f"--interval{note}")
    if len(values) == 1:
        line, ms = found[0]
        if not MIN_MS <= ms <= MAX_MS:
            raise InputError(path, f"dcgmi dmon -d {ms} is not a usable sampling interval (1 ms to 1 day)",
                             "pass --interval SECONDS", line=line)
        return Interval(ms / 1000, f"the file's dcgmi dmon -d {ms} (line {line})")
    if not values:
        return Interval(DEFAULT_INTERVAL_S, "dcgmi dmon's default -d 1000 (no -d in the file)")
    where = ", ".join(f"-d {ms} at line {ln}" for ln, ms in found[:4])
    raise InputError(path, f"the file pastes dcgmi dmon runs with different intervals ({where})",
                     "split the file per run, or pass --interval SECONDS if one interval is right",
                     line=found[0][0])
