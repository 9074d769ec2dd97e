"""Column sets of ``dcgmi dmon`` headers and commands (docs/formulas.md#inputs).

A ``#Entity`` header names the columns by dmon short name (``GRACT``); a shell command
``dcgmi dmon ... -e 1001,1004`` names them by field ID. Every distinct set gets an index; the
columns of all sets are kept concatenated (field ID, factor to canonical units, name) so a block's
cells are looked up with one numpy gather.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from rooftop.parsers.dcgm import fields as F

Column = tuple[int | None, str]  # (field ID or None when the name is unknown, name as printed)
INT32_LIMIT = 2**31  # no DCGM field ID reaches it: a larger ID counts as an unknown column


class ColumnSets:
    """The column sets seen so far. ``offset[s]``: first column of set ``s`` in the concatenation;
    ``width[s]``: its number of columns (``width[-1]`` is 0: "no set")."""

    def __init__(self) -> None:
        self.sets: list[list[Column]] = []
        self._index: dict[tuple[Column, ...], int] = {}
        self._of_header: dict[tuple[str, ...], int] = {}
        self.fid = np.zeros(0, "int64")  # all sets' columns, concatenated; -1: unknown
        self.factor = np.zeros(0)
        self.scaled = False  # some column is scaled to canonical units
        self.names = pa.array([], pa.string())
        self.offset = np.zeros(1, "int64")
        self.width = np.zeros(1, "int64")

    def add(self, cols: list[Column]) -> int:
        """Index of a column set (a re-printed header gives the same index)."""
        key = tuple(cols)
        if key not in self._index:
            self._index[key] = len(self.sets)
            self.sets.append(cols)
            fid = np.array([-1 if f is None or not 0 <= f < INT32_LIMIT else f for f, _ in cols], dtype="int64")
            factor = np.array([F.canonical_factor(t) if f >= 0 else 1.0 for f, (_, t) in zip(fid, cols, strict=True)],
                              dtype="float64")  # by the column's name: a DCGM 4.6.1 SI field is converted
            self.offset = np.insert(self.offset, -1, len(self.fid))
            self.offset[-1] = len(self.fid) + len(cols)
            self.width = np.insert(self.width, -1, len(cols))
            self.fid = np.concatenate([self.fid, fid])
            self.factor = np.concatenate([self.factor, factor])
            self.scaled = bool((self.factor != 1.0).any())
            self.names = pa.concat_arrays([self.names, pa.array([t for _, t in cols], pa.string())])
        return self._index[key]

    def of_header(self, names: tuple[str, ...]) -> int:
        """The set a ``#Entity`` header names (dmon repeats its header every 14 ticks)."""
        cs = self._of_header.get(names)
        if cs is None:
            cs = self._of_header[names] = self.add([(F.field_id(t), t) for t in names])
        return cs

    def of_command(self, ids: list[int]) -> int:
        """The set a ``dcgmi dmon -e ID,ID`` command names."""
        return self.add([(f, F.BY_ID[f].short if f in F.BY_ID else str(f)) for f in ids])
