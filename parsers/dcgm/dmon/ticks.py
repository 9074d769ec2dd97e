"""Ticks of ``dcgmi dmon`` rows (docs/formulas.md#inputs; lint ``dmon-time-assumed``).

dmon prints no timestamps: a tick is one block of entity rows. A tick starts at the file's first
row, at the first row after a header/command line, and where an entity repeats within the tick
in progress; ticks count on across blocks and across several dmon runs pasted in one file. A
``GPU-I``/``GPU-CI`` row takes the gpu of the latest ``GPU`` row of its tick (dmon lists GPUs,
then their instances), else none.
"""

from __future__ import annotations

import numpy as np

from rooftop.parsers.dcgm.dmon.entities import EntityArrays

NONE = -1  # "no row" in the tick / GPU-row bookkeeping (global row indices are >= 0)


class Ticks:
    """The tick bookkeeping carried from block to block (``rows``/``count``: so far)."""

    def __init__(self) -> None:
        self.rows = 0  # accepted rows so far
        self.events = 0  # header / command lines so far
        self.count = 0  # ticks so far
        self._ev_at_last_row = 0
        self._tick_start = NONE  # global row index where the tick in progress started
        self._last_gpu_row = NONE
        self._last_gpu_ent = -1
        self._lastpos = np.zeros(0, "int64")  # per entity: global index of its latest row

    def assign(self, line: np.ndarray, ent: np.ndarray, ev_l: np.ndarray,
               ents: EntityArrays) -> tuple[np.ndarray, np.ndarray]:
        """Tick number of each row of a block (``line``: its line in the block, ``ent``: its entity;
        ``ev_l``: lines of the block's header events), and the entity whose ``gpu`` each row takes."""
        n = len(line)
        after = self.events + np.searchsorted(ev_l, line, side="left")  # header events before each row
        self.events += len(ev_l)
        if n == 0:
            return np.zeros(0, "int64"), ent
        g = self.rows + np.arange(n)
        reset = np.empty(n, dtype=bool)
        reset[0] = self.rows > 0 and after[0] != self._ev_at_last_row
        reset[1:] = after[1:] != after[:-1]
        self._ev_at_last_row = int(after[-1])
        prev = self._previous(g, ent, len(ents.isgpu))
        starts = self._starts(reset, prev)
        start = np.zeros(n, dtype=bool)
        start[starts] = True
        r_tick = self.count + np.cumsum(start) - 1
        tstart = np.maximum.accumulate(np.where(start, g, self._tick_start))
        self.count += len(starts)
        if starts:
            self._tick_start = self.rows + starts[-1]
        gpu_ent = self._gpu_entities(g, ent, tstart, ents)
        self.rows += n
        return r_tick, gpu_ent

    def _previous(self, g: np.ndarray, ent: np.ndarray, n_entities: int) -> np.ndarray:
        """Global index of the previous row of the same entity (``NONE`` if none); remembers each
        entity's last row for the next block."""
        if len(self._lastpos) < n_entities:  # entities added since the last block
            self._lastpos = np.concatenate([self._lastpos, np.full(n_entities - len(self._lastpos), NONE)])
        n = len(g)
        by_ent = np.argsort(ent, kind="stable")
        se = ent[by_ent]
        same = se[1:] == se[:-1]
        prev_s = np.empty(n, dtype="int64")
        prev_s[0] = self._lastpos[se[0]]
        prev_s[1:] = np.where(same, g[by_ent[:-1]], self._lastpos[se[1:]])
        prev = np.empty(n, dtype="int64")
        prev[by_ent] = prev_s
        lastmask = np.append(~same, True)
        self._lastpos[se[lastmask]] = g[by_ent[lastmask]]
        return prev

    def _starts(self, reset: np.ndarray, prev: np.ndarray) -> list[int]:
        """Rows (in the block) that start a tick: the first tick start, then each next start is the
        first later row that follows a header, or whose entity was seen at or after that start."""
        n = len(reset)
        if self._tick_start == NONE:
            r0 = 0
        else:
            cond = reset | (prev >= self._tick_start)
            r0 = int(np.argmax(cond)) if cond.any() else n
        prev_l = prev - self.rows
        nextocc = np.full(n + 1, n, dtype="int64")
        has = prev_l >= 0
        nextocc[prev_l[has]] = np.flatnonzero(has)
        first_repeat = np.minimum.accumulate(nextocc[::-1])[::-1][:n]
        rpos = np.where(reset, np.arange(n), n)
        next_reset = np.append(np.minimum.accumulate(rpos[::-1])[::-1][1:], n)
        nxt = np.minimum(first_repeat, next_reset).tolist()
        starts: list[int] = []
        s = r0
        while s < n:
            starts.append(s)
            s = nxt[s]
        return starts

    def _gpu_entities(self, g: np.ndarray, ent: np.ndarray, tstart: np.ndarray, ents: EntityArrays) -> np.ndarray:
        """Per row the entity whose ``gpu`` it takes: its own, or for ``GPU-I``/``GPU-CI`` rows the
        latest ``GPU`` row in the same tick (carried across blocks)."""
        isgpu = ents.isgpu[ent]
        gpu_ent = ent
        inst = ents.inst[ent]
        if inst.any():
            gpos = np.maximum.accumulate(np.where(isgpu, g, self._last_gpu_row))
            ok = inst & (gpos >= tstart) & (gpos >= 0)
            local = gpos - self.rows
            gent = np.where(local >= 0, ent[np.maximum(local, 0)], self._last_gpu_ent)
            gpu_ent = np.where(ok, gent, ent)
        if isgpu.any():
            lg = int(np.flatnonzero(isgpu)[-1])
            self._last_gpu_row, self._last_gpu_ent = self.rows + lg, int(ent[lg])
        return gpu_ent
