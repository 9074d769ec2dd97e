"""The per-line rules of ``dcgmi dmon`` text (docs/formulas.md#inputs; corpus FORMATS.md §1).

Every line that is not a fast row (parsers/dcgm/dmon/scan.py) comes here: ``#Entity``/``# Entity``
headers and ``dcgmi dmon ... -e ID,ID`` commands set the columns; the units row (``ID``/``Id``) is
skipped; ``Error ...`` lines are kept; prompts, fences, ``...`` and prose are skipped. A data row
is split on whitespace and its values are taken **from the right** (one per column); what is left
is the entity. A leading wall-clock prefix (``2024-05-01 12:00:00``, ISO with zone, epoch seconds)
is the row's timestamp.
"""

from __future__ import annotations

import re

import pandas as pd

from rooftop.parsers.dcgm.dmon.columns import ColumnSets
from rooftop.parsers.dcgm.dmon.entities import ENTITY, Entities
from rooftop.parsers.model import Rejected

HEADER = re.compile(r"^\s*#\s?Entity\b(.*)$")
UNITS = re.compile(r"^\s*(ID|Id)\b")
ROW_START = re.compile(r"^\s*(GPU-I|GPU-CI|GPU|Switch|CPU Core|CPU|CX|vGPU|SW)\s+\d+\b")
COMMAND = re.compile(r"dcgmi\s+dmon\b.*?\s-e\s+([0-9][0-9,\s]*[0-9])")
STAMP = re.compile(
    r"^\s*(?P<ts>\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?|\d{10}(?:\.\d+)?)\s+"
    r"(?=(?:GPU|GPU-I|GPU-CI|Switch|CPU|CX|vGPU|SW)\s+\d)"
)
NO_STAMP = -1  # a row without a wall-clock prefix


def parse_stamp(text: str) -> int:
    """A wall-clock prefix as epoch ms (UTC when it names no zone)."""
    if re.fullmatch(r"\d{10}(?:\.\d+)?", text):
        return round(float(text) * 1000)
    ts = pd.Timestamp(text)
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    return int(ts.value // 1_000_000)


class SlowRows:
    """Data rows read the per-line way (values as Python strings), in the order they are found."""

    def __init__(self) -> None:
        self.line: list[int] = []  # 0-based line index within the block
        self.stamp: list[int] = []
        self.cset: list[int] = []
        self.ent: list[int] = []
        self.k: list[int] = []
        self.vals: list[str] = []


class LineRules:
    """The per-line rules and what they carry from block to block: the column set in effect, the
    lines before the current block (``lines``), rejected rows and DCGM's error lines."""

    def __init__(self, path: str, cols: ColumnSets, ents: Entities) -> None:
        self.path = path
        self.cols = cols
        self.ents = ents
        self.rejected: list[Rejected] = []
        self.errors: list[str] = []
        self.extra_rejected = 0  # a rejected row is one listing but k samples
        self.headers = 0
        self.cset: int | None = None  # column set in effect
        self.lines = 0  # lines in the blocks before this one

    def _short(self, n: int, ntok: int, k: int) -> None:
        """Rejects a row with the wrong token count (one listing, k samples)."""
        self.rejected.append(Rejected(
            self.path, n, f"dmon row has {ntok} tokens; expected an entity and {k} values ({k} samples rejected)"))
        self.extra_rejected += max(k - 1, 0)

    def slow_row(self, i: int, line: str, stamp: int, cset: int | None, slow: SlowRows) -> None:
        """One data row the per-line way (``line`` stripped, prefixes removed)."""
        n = self.lines + i + 1
        tokens = line.split()
        if cset is None:
            self.rejected.append(Rejected(self.path, n, "dmon data row before any '#Entity' header: columns unknown"))
            return
        k = len(self.cols.sets[cset])
        ent_tokens, values = (tokens[:-k], tokens[-k:]) if k else (tokens, [])
        entity = " ".join(ent_tokens)
        if len(tokens) <= k or ENTITY.match(entity) is None:
            self._short(n, len(tokens), k)
            return
        slow.line.append(i)
        slow.stamp.append(stamp)
        slow.cset.append(cset)
        slow.ent.append(self.ents.id(entity))
        slow.k.append(k)
        slow.vals.extend(values)

    def other_line(self, i: int, text: str, slow: SlowRows, ev_line: list[int], ev_set: list[int]) -> None:
        """A line that is not a fast row: header, command, units, error, noise, or a row.
        Headers and commands are header events: ``ev_line`` gets the line, ``ev_set`` its set."""
        line = text.strip()
        if not line:
            return
        m = HEADER.match(line)
        if m:
            self.headers += 1
            cs = self.cset = self.cols.of_header(tuple(m.group(1).split()))
            ev_line.append(i)
            ev_set.append(cs)
            return
        cm = COMMAND.search(line)
        if cm and not ROW_START.match(line):
            cs = self.cset = self.cols.of_command([int(x) for x in re.split(r"[,\s]+", cm.group(1)) if x])
            ev_line.append(i)
            ev_set.append(cs)
            return
        if UNITS.match(line) and not ROW_START.match(line):
            return
        if line.startswith(("Error", "error")) or line.startswith("ERROR"):
            self.errors.append(line)
            return
        stamp = NO_STAMP
        sm = STAMP.match(line)
        if sm:
            try:
                stamp = parse_stamp(sm.group("ts"))
            except ValueError:
                stamp = NO_STAMP
            line = line[sm.end():]
        if line.startswith(">"):
            line = line.lstrip("> ").strip()
        if not ROW_START.match(line):
            return  # prompts, fences, '...', prose, 'dmon was stopped ...'
        self.slow_row(i, line, stamp, self.cset, slow)
