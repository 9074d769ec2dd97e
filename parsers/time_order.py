"""One time, one value per series: the rule for samples whose time does not move forward.

A GPU sample series (host, GPU, UUID, MIG instance, field) moves forward in time in every format
rooftop reads (scrapes, ticks, query answers: each series in time order). A sample at or before an
earlier sample of its series in the same input cannot be placed: a clock stepped back, a DST
fall-back repeated an hour of naive local times, or two sources wrote the same GPU. Averaging it
into the windows (what happened before) silently mixes two times. The rule
(docs/formulas.md#inputs, "Time order"): **per series, in file order, a sample is kept only when
its time is later than every earlier sample's of that series; the others are rejected**, counted
by kind in ``meta["time_order"]`` and in the input's ``rejected`` (one line per kind, with the
first example):

- ``duplicate``: the same time and the same value as the series' latest sample (a repeated line);
- ``conflict``: the same time, another value (two sources, or a repeated naive hour that collides);
- ``stepped_back``: an earlier time (a clock stepped back, a repeated DST hour).

The rule is prefix-stable (a sample's fate depends only on the samples before it), so a file that
grows keeps its earlier samples' fates, and batches give what the whole table gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rooftop.parsers.model import Rejected

KEY_COLUMNS = ("host", "gpu", "uuid", "pci_bus_id", "mig", "field_id")
KINDS = ("duplicate", "conflict", "stepped_back")
_SHIFT = 43  # bits of time (ms since 1990: 278 years) below the series code in the sort key
_T0 = 631_152_000_000  # 1990-01-01T00:00:00Z in ms
SMALL_ROWS = 512  # a table this small is checked row by row


@dataclass
class TimeOrder:
    """The running state of the rule over one input's batches (see the module docstring)."""

    path: str
    series: dict[tuple[Any, ...], int] = field(default_factory=dict)
    last_t: list[int] = field(default_factory=list)  # per series: the latest time kept (sort-key units)
    last_v: list[float] = field(default_factory=list)  # and its value
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    first: dict[str, str] = field(default_factory=dict)  # kind -> the first example, for the reason

    def keep(self, table: pa.Table) -> pa.Table:
        """``table`` without the samples the rule rejects (counted here)."""
        n = table.num_rows
        if n == 0:
            return table
        if n <= SMALL_ROWS:
            return self._keep_small(table)
        gid = self._series_ids(table)
        ts = table.column("timestamp").cast(pa.int64()).to_numpy(zero_copy_only=False)
        t = np.clip(ts - _T0, 0, (1 << _SHIFT) - 1)
        value = table.column("value").to_numpy(zero_copy_only=False)
        key = (gid.astype(np.int64) << _SHIFT) + t
        if self._in_order(gid, t, key, value):
            return table
        order = np.argsort(gid, kind="stable")  # by series, file order within each
        k = key[order]
        v = value[order]
        g = gid[order]
        first_of_series = np.ones(n, dtype=bool)
        first_of_series[1:] = g[1:] != g[:-1]
        run = np.maximum.accumulate(k)  # series blocks ascend, so the max never leaks across blocks
        before = np.full(n, -1, dtype=np.int64)
        before[1:] = run[:-1]
        at = np.maximum.accumulate(np.where(k > before, np.arange(n), 0))  # the first row at the running max
        inblock = np.where(first_of_series, -1, before)  # the latest earlier time in this batch, per series
        at_prev = np.zeros(n, dtype=np.int64)
        at_prev[1:] = at[:-1]
        carried = np.asarray(self.last_t, dtype=np.int64)[g]  # from the batches before
        carried_v = np.asarray(self.last_v, dtype=np.float64)[g]
        prev = np.maximum(inblock, carried)
        prev_v = np.where(carried >= inblock, carried_v, v[at_prev])
        ok = k > prev
        if ok.all():
            self._carry(g, k, v)
            return table
        self._count(table, order, ~ok, k == prev, v == prev_v, ts[order])
        self._carry(g[ok], k[ok], v[ok])
        keep = np.zeros(n, dtype=bool)
        keep[order[ok]] = True
        return table.filter(pa.array(keep))

    def _keep_small(self, table: pa.Table) -> pa.Table:
        """:meth:`keep` for a small table, row by row (the vectorised path's fixed cost, ~1 ms,
        is most of a small file's parse)."""
        cols = [table.column(c).to_pylist() for c in KEY_COLUMNS]
        ts = table.column("timestamp").cast(pa.int64()).to_numpy(zero_copy_only=False).tolist()
        values = table.column("value").to_pylist()
        keep = []
        dropped: dict[str, list[int]] = {}
        for i, combo in enumerate(zip(*cols, strict=True)):
            sid = self.series.get(combo)
            if sid is None:
                sid = self.series[combo] = len(self.series)
                self.last_t.append(-1)
                self.last_v.append(np.nan)
            key = (sid << _SHIFT) + min(max(ts[i] - _T0, 0), (1 << _SHIFT) - 1)
            last = self.last_t[sid]
            if key > last:
                self.last_t[sid], self.last_v[sid] = key, values[i]
                keep.append(True)
                continue
            keep.append(False)
            kind = "stepped_back" if key < last else "duplicate" if values[i] == self.last_v[sid] else "conflict"
            dropped.setdefault(kind, []).append(i)
        if all(keep):
            return table
        for kind, rows in dropped.items():
            self.counts[kind] += len(rows)
            if kind not in self.first:
                self.first[kind] = self._example(table, rows[0], ts[rows[0]])
        return table.filter(pa.array(keep))

    @staticmethod
    def _example(table: pa.Table, row: int, ms: int) -> str:
        host, gpu, fld = (table.column(x)[row].as_py() for x in ("host", "gpu", "field"))
        return f"host {host}, GPU {gpu}, {fld} at {pd.Timestamp(int(ms), unit='ms', tz='UTC').isoformat()}"

    def _in_order(self, gid: np.ndarray, t: np.ndarray, key: np.ndarray, value: np.ndarray) -> bool:
        """The common case without a sort: times never decrease in the batch, no series repeats
        within one time, and every series starts after its carried time. Then every sample is
        kept; the carried times are updated. False: the caller sorts."""
        n = len(t)
        if n > 1 and not (np.diff(t) >= 0).all():
            return False
        if (key <= np.asarray(self.last_t, dtype=np.int64)[gid]).any():
            return False
        nser = len(self.series)
        run = np.zeros(n, dtype=np.int64)
        if n > 1:
            np.cumsum(np.diff(t) > 0, out=run[1:])
        pair = run * nser + gid
        if pair[-1:].size and int(run[-1]) * nser + nser > 8 * n + 1024:
            return False  # too sparse for a count table
        if n and int(np.bincount(pair).max()) > 1:
            return False
        last = np.full(nser, -1, dtype=np.int64)
        np.maximum.at(last, gid, np.arange(n))
        seen = np.flatnonzero(last >= 0)
        lt, lv = np.asarray(self.last_t, dtype=np.int64), np.asarray(self.last_v, dtype=np.float64)
        lt[seen], lv[seen] = key[last[seen]], value[last[seen]]
        self.last_t, self.last_v = lt.tolist(), lv.tolist()
        return True

    def _series_ids(self, table: pa.Table) -> np.ndarray:
        """Each row's series number (stable over batches): the key columns dictionary-encoded, the
        codes combined, and each combination seen for the first time numbered on."""
        idx, dicts = [], []
        for c in KEY_COLUMNS:
            enc = pc.dictionary_encode(table.column(c), null_encoding="encode").combine_chunks()
            idx.append(enc.indices.to_numpy(zero_copy_only=False).astype(np.int64))
            dicts.append(enc.dictionary.to_pylist())
        combined = np.zeros(table.num_rows, dtype=np.int64)
        space = 1
        for i, d in zip(idx, dicts, strict=True):
            space *= max(len(d), 1)
            if space > 1 << 40:  # never for real files; a sort then
                break
            combined = combined * max(len(d), 1) + i
        if space > 1 << 40:
            uniq, local = np.unique(np.stack(idx, axis=1), axis=0, return_inverse=True)
            combos = [tuple(d[j] for d, j in zip(dicts, row, strict=True)) for row in uniq.tolist()]
        else:
            if space <= 8 * len(combined) + 4096:  # a count table: no sort
                present = np.zeros(space, dtype=bool)
                present[combined] = True
                codes = np.flatnonzero(present)
                lut = np.zeros(space, dtype=np.int64)
                lut[codes] = np.arange(len(codes))
                local = lut[combined]
            else:
                codes, local = np.unique(combined, return_inverse=True)
            combos = []
            for code in codes.tolist():
                parts = []
                for d in reversed(dicts):
                    code, j = divmod(code, max(len(d), 1))
                    parts.append(d[j])
                combos.append(tuple(reversed(parts)))
        remap = np.empty(len(combos), dtype=np.int64)
        for i, combo in enumerate(combos):
            sid = self.series.get(combo)
            if sid is None:
                sid = self.series[combo] = len(self.series)
                self.last_t.append(-1)
                self.last_v.append(np.nan)
            remap[i] = sid
        return remap[np.asarray(local).reshape(-1)]

    def _carry(self, g: np.ndarray, k: np.ndarray, v: np.ndarray) -> None:
        """Remember each series' latest kept time and value."""
        if not len(g):
            return
        last = np.flatnonzero(np.r_[g[1:] != g[:-1], True])  # the last kept row of each series block
        for sid, key, val in zip(g[last].tolist(), k[last].tolist(), v[last].tolist(), strict=True):
            if key > self.last_t[sid]:
                self.last_t[sid], self.last_v[sid] = key, val

    def _count(self, table: pa.Table, order: np.ndarray, dropped: np.ndarray, same_t: np.ndarray,
               same_v: np.ndarray, ts: np.ndarray) -> None:
        kinds = np.where(same_t & same_v, 0, np.where(same_t, 1, 2))
        for code, kind in enumerate(KINDS):
            sel = dropped & (kinds == code)
            c = int(sel.sum())
            if not c:
                continue
            self.counts[kind] += c
            if kind not in self.first:
                at = int(np.flatnonzero(sel)[0])
                self.first[kind] = self._example(table, int(order[at]), int(ts[at]))

    @property
    def dropped(self) -> int:
        return sum(self.counts.values())

    def rejected(self) -> list[Rejected]:
        """One line per kind of rejected sample, with its count and first example."""
        words = {"duplicate": "repeat the time and value of an earlier sample of their series",
                 "conflict": "repeat the time of an earlier sample of their series with another value",
                 "stepped_back": "lie before an earlier sample of their series (a clock stepped back or "
                                 "a DST hour repeated)"}
        return [Rejected(self.path, None, f"{self.counts[k]:,} sample(s) {words[k]}: rejected, the earlier "
                         f"kept (first: {self.first[k]}; docs/formulas.md#inputs, time order)")
                for k in KINDS if self.counts[k]]

    def meta(self) -> dict[str, int]:
        return {k: v for k, v in self.counts.items() if v}

