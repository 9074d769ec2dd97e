"""One block of ``dcgmi dmon`` text into samples, and the whole file's accounting (docs/formulas.md#inputs).

A block's lines are scanned at once (:mod:`rooftop.parsers.dcgm.dmon.scan`); fast rows keep their
values in the block's bytes (one Arrow ``take`` slices them out), every other line goes through
the per-line rules (:mod:`rooftop.parsers.dcgm.dmon.lines`). Rows are then merged in line order, ticked
(:mod:`rooftop.parsers.dcgm.dmon.ticks`) and their cells turned into samples: a cell of an unknown
column or a value that is not a number is rejected with its line; ``N/A``, ``N/W`` and DCGM's
blank sentinels are missing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np
import pyarrow as pa

from rooftop.errors import InputError
from rooftop.parsers.dcgm import fields as F
from rooftop.parsers.dcgm.dmon.columns import ColumnSets
from rooftop.parsers.dcgm.dmon.entities import Entities, EntityArrays
from rooftop.parsers.dcgm.dmon.lines import NO_STAMP, LineRules, SlowRows
from rooftop.parsers.dcgm.dmon.scan import Scan, scan
from rooftop.parsers.dcgm.dmon.ticks import Ticks
from rooftop.parsers.dcgm.dmon.values import missing_mask, to_float
from rooftop.parsers.model import SAMPLE_SCHEMA, InputAccounting, ParseResult, Rejected
from rooftop.parsers.source import ParseOptions

FORMAT = "dcgm-dmon"
TOKEN_STRIDE = 2  # the block's token/gap array: element 2t is token t, 2t + 1 the gap after it
ENTITY_TOKENS = 2  # a fast row's entity is two tokens ("GPU 0"); its values follow


@dataclass
class Part:
    """A block's samples before their times are known: every column but ``timestamp``, and per
    sample its tick number and wall-clock stamp (ms; -1: none; ``None``: no stamped row)."""

    columns: dict[str, pa.Array]
    tick: np.ndarray
    stamp: np.ndarray | None

    def table(self, start_ms: int, interval_ms: int) -> pa.Table:
        """The samples as a ``SAMPLE_SCHEMA`` table, tick ``k`` at ``start_ms + k * interval_ms``."""
        ts = start_ms + self.tick * interval_ms
        if self.stamp is not None:
            ts = np.where(self.stamp >= 0, self.stamp, ts)
        cols = {"timestamp": pa.array(ts, pa.timestamp("ms", tz="UTC")), **self.columns}
        return pa.Table.from_arrays([cols[n] for n in SAMPLE_SCHEMA.names], schema=SAMPLE_SCHEMA)


@dataclass
class _Rows:
    """A block's data rows in line order. Row ``r``'s value ``j`` is element ``vbase[r] + vstep[r] * j``
    of [the block's tokens and gaps (``n_rg`` elements), the slow rows' values]."""

    line: np.ndarray
    ent: np.ndarray
    cset: np.ndarray
    k: np.ndarray
    stamp: np.ndarray | None  # None: no slow row (fast rows have no stamp)
    vbase: np.ndarray
    vstep: np.ndarray | None  # None: every row is a fast row (step TOKEN_STRIDE)
    n_rg: int


def _merge(sc: Scan, ci: np.ndarray, f_ent: np.ndarray, cs: np.ndarray, k: np.ndarray, slow: SlowRows) -> _Rows:
    """Fast rows (lines ``ci``) and slow rows merged in line order."""
    n_rg = max(TOKEN_STRIDE * len(sc.tstart) - 1, 0) if len(ci) else 0
    fast_base = TOKEN_STRIDE * (sc.tfirst[ci] + ENTITY_TOKENS)
    if not slow.line:
        return _Rows(ci, f_ent, cs, k, None, fast_base, None, n_rg)
    s_k = np.asarray(slow.k, dtype="int64")
    line = np.concatenate([ci, np.asarray(slow.line, dtype="int64")])
    order = np.argsort(line, kind="stable")
    return _Rows(
        line=line[order],
        ent=np.concatenate([f_ent, np.asarray(slow.ent, dtype="int64")])[order],
        cset=np.concatenate([cs, np.asarray(slow.cset, dtype="int64")])[order],
        k=np.concatenate([k, s_k])[order],
        stamp=np.concatenate([np.full(len(ci), NO_STAMP, "int64"), np.asarray(slow.stamp, dtype="int64")])[order],
        vbase=np.concatenate([fast_base, n_rg + np.cumsum(s_k) - s_k])[order],
        vstep=np.concatenate([np.full(len(ci), TOKEN_STRIDE, "int64"), np.ones(len(s_k), "int64")])[order],
        n_rg=n_rg,
    )


def _cell_index(rows: _Rows, offset: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int | None]:
    """Cells, k per row in row order: their row, global column and value index; and ``k`` when
    every row has the same column set (``None`` otherwise)."""
    n = len(rows.line)
    if bool((rows.cset == rows.cset[0]).all()):
        kk = int(rows.k[0])
        rowc = np.repeat(np.arange(n), kk)
        jc = np.tile(np.arange(kk), n)
        step = np.full((n, 1), TOKEN_STRIDE, "int64") if rows.vstep is None else rows.vstep[:, None]
        vidx = (rows.vbase[:, None] + step * np.arange(kk)[None, :]).ravel()
        return rowc, jc + offset[rows.cset[0]], vidx, kk
    rowc = np.repeat(np.arange(n), rows.k)
    jc = np.arange(len(rowc)) - np.repeat(np.cumsum(rows.k) - rows.k, rows.k)
    vidx = rows.vbase[rowc] + (TOKEN_STRIDE if rows.vstep is None else rows.vstep[rowc]) * jc
    return rowc, offset[rows.cset[rowc]] + jc, vidx, None


def _per_cell(x: np.ndarray, rowc: np.ndarray | None, kk: int) -> np.ndarray:
    """A per-row array per cell: gathered by ``rowc``, or (every cell kept, k per row) repeated."""
    return np.repeat(x, kk) if rowc is None else x[rowc]


class BlockParser:
    """Everything carried from block to block (column sets, entities, ticks, accounting) and the
    per-block work."""

    def __init__(self, path: str, host: str | None) -> None:
        self.path = path
        self.host = host
        self.cols = ColumnSets()
        self.ents = Entities()
        self.rules = LineRules(path, self.cols, self.ents)
        self.tick = Ticks()
        self.known = 0  # value cells of known columns
        self.records = 0
        self.missing = 0
        self.sentinels = 0

    @property
    def ticks(self) -> int:
        return self.tick.count

    def block(self, data: bytes, values: bool = True) -> Part | None:
        """Parse one block of whole lines; ``values=False`` only follows rows and ticks."""
        sc = scan(data)  # lines, tokens, fast-row candidates
        slow, ev_l, rows = self._rows(data, sc)
        self.rules.lines += sc.n_lines
        r_tick, gpu_ent = self.tick.assign(rows.line, rows.ent, ev_l, self.ents.arrays())
        if not values or len(rows.line) == 0:
            return None
        return self._part(data, sc, slow, rows, r_tick, gpu_ent)

    def _rows(self, data: bytes, sc: Scan) -> tuple[SlowRows, np.ndarray, _Rows]:
        """The block's rows; also the slow rows' values and the lines of header events. Every line
        but the fast-row candidates goes through the per-line rules first, in order (headers and
        commands change the column set as they come); a candidate whose token count does not fit
        its column set is read the per-line way too."""
        nb = len(data)
        ci, key = sc.cand, sc.key
        cand = np.zeros(sc.n_lines, dtype=bool)
        cand[ci] = True
        cset0 = -1 if self.rules.cset is None else self.rules.cset
        slow = SlowRows()
        ev_line: list[int] = []
        ev_set: list[int] = []
        lend = np.append(sc.nl, nb)
        other = np.flatnonzero(~cand)
        for i, a, z in zip(other.tolist(), sc.lstart[other].tolist(), lend[other].tolist(), strict=True):
            if a < z:
                self.rules.other_line(i, data[a:z].decode("utf-8", "replace"), slow, ev_line, ev_set)
        ev_l = np.asarray(ev_line, dtype="int64")
        cs = np.asarray([cset0, *ev_set], dtype="int64")[np.searchsorted(ev_l, ci, side="right")]
        k = self.cols.width[cs]
        fast = (k > 0) & (sc.ntok[ci] == k + ENTITY_TOKENS)
        demoted = ci[~fast]
        for i, c, a, z in zip(demoted.tolist(), cs[~fast].tolist(), sc.lstart[demoted].tolist(),
                              lend[demoted].tolist(), strict=True):
            self.rules.slow_row(i, data[a:z].decode("ascii").strip(), NO_STAMP, None if c < 0 else c, slow)
        ci, key, cs, k = ci[fast], key[fast], cs[fast], k[fast]
        uk, inv = np.unique(key, return_inverse=True)
        ids = np.array([self.ents.fast_id(int(u)) for u in uk.tolist()], dtype="int64")
        f_ent = ids[inv] if len(inv) else np.zeros(0, "int64")
        return slow, ev_l, _merge(sc, ci, f_ent, cs, k, slow)

    def _part(self, data: bytes, sc: Scan, slow: SlowRows, rows: _Rows, r_tick: np.ndarray,
              gpu_ent: np.ndarray) -> Part | None:
        """The samples of the block's rows (``None``: no good value)."""
        rowc, gcol, vidx, kk = _cell_index(rows, self.cols.offset)
        abs_line = self.rules.lines - sc.n_lines + rows.line + 1
        fid = self.cols.fid[gcol]
        unknown = fid < 0
        if unknown.any():
            names = self.cols.names.to_pylist()
            for c in np.flatnonzero(unknown).tolist():
                self.rules.rejected.append(Rejected(self.path, int(abs_line[rowc[c]]),
                                                    f"unknown dmon column {names[gcol[c]]!r}"))
            known = ~unknown
            rowc, gcol, vidx, fid = rowc[known], gcol[known], vidx[known], fid[known]
        rg = pa.StringArray.from_buffers(rows.n_rg, pa.py_buffer(sc.edges.astype("int32")), pa.py_buffer(data)) \
            if rows.n_rg else pa.array([], pa.string())
        src_vals = pa.concat_arrays([rg, pa.array(slow.vals, pa.string())]) if slow.vals else rg
        nums, good = self._numbers(src_vals.take(pa.array(vidx, pa.int64())), rowc, abs_line)
        if not good.any():
            return None
        cell_row: np.ndarray | None = None  # every cell kept, k per row: repeat instead of gathering
        if not good.all() or kk is None or unknown.any():
            idx = np.flatnonzero(good)
            rowc, gcol, fid, nums = rowc[idx], gcol[idx], fid[idx], nums[idx]
            cell_row = rowc
        k = kk or 0
        cols = self._columns(rows.ent, gpu_ent, cell_row, k, len(rowc), gcol, fid, nums)
        r_stamp = None if rows.stamp is None or not (rows.stamp >= 0).any() else _per_cell(rows.stamp, cell_row, k)
        return Part(cols, _per_cell(r_tick, cell_row, k), r_stamp)

    def _numbers(self, vals: pa.Array, rowc: np.ndarray, abs_line: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The cells' values as numbers and where they are good; counts known, records, missing and
        sentinel cells, and rejects values that are not numbers."""
        missing = missing_mask(vals)
        nums = to_float(vals, missing)
        bad = ~np.isfinite(nums) & ~missing  # an infinity is no counter value either
        if bad.any():
            for c in np.flatnonzero(bad).tolist():
                what = "a finite number" if np.isinf(nums[c]) else "a number"
                self.rules.rejected.append(Rejected(self.path, int(abs_line[rowc[c]]),
                                                    f"value {str(vals[c])[:40]!r} is not {what}"))
        sentinel = F.sentinel_mask(nums)
        missing |= sentinel
        good: np.ndarray = ~missing & ~bad
        self.known += len(vals)
        self.records += int(good.sum())
        self.missing += int(missing.sum())
        self.sentinels += int(sentinel.sum())
        return nums, good

    def _columns(self, ent: np.ndarray, gpu_ent: np.ndarray, cell_row: np.ndarray | None, kk: int, nrow: int,
                 gcol: np.ndarray, fid: np.ndarray, nums: np.ndarray) -> dict[str, pa.Array]:
        """Every sample column but ``timestamp``, for the kept cells."""
        e: EntityArrays = self.ents.arrays()
        r_suf = e.suf[ent]
        if r_suf.any():  # GPU n LINK l rows: field name + "[link l]"
            fkey = gcol * len(e.suf_names) + _per_cell(r_suf, cell_row, kk)
            ukey, fcode = np.unique(fkey, return_inverse=True)
            names = self.cols.names.to_pylist()
            sn = e.suf_names
            fdict = pa.array([names[int(u) // len(sn)] + str(sn[int(u) % len(sn)]) for u in ukey], pa.string())
            field = fdict.take(pa.array(fcode, pa.int64()))
        else:
            field = self.cols.names.take(pa.array(gcol, pa.int64()))
        none = pa.nulls(nrow, pa.string())
        has_mig = bool(e.has_mig.any()) and bool(e.has_mig[ent].any())
        return {
            "host": none if self.host is None else pa.repeat(pa.scalar(self.host, pa.string()), nrow),
            "gpu": e.gpu.take(pa.array(_per_cell(gpu_ent, cell_row, kk), pa.int64())),
            "uuid": none,
            "pci_bus_id": none,
            "model": none,
            "mig": e.mig.take(pa.array(_per_cell(ent, cell_row, kk), pa.int64())) if has_mig else none,
            "mig_profile": none,
            "field_id": pa.array(fid.astype("int32"), pa.int32()),
            "field": field,
            "value": pa.array(nums * self.cols.factor[gcol] if self.cols.scaled else nums, pa.float64()),
            "namespace": none,
            "pod": none,
            "container": none,
            "job": none,
        }

    def finish(self, opts: ParseOptions, start_ms: int) -> ParseResult:
        """Raise :class:`InputError` for unusable files; the result (empty samples) otherwise."""
        path, rules = self.path, self.rules
        if self.known == 0 and not rules.rejected:
            if rules.errors:
                raise InputError(path, f"dcgmi dmon printed no samples, only: {rules.errors[0][:160]}",
                                 "fix the DCGM error (profiling busy or unsupported?) and capture again")
            if rules.headers == 0:
                raise InputError(path, "no dcgmi dmon header or data rows", "pass the output of 'dcgmi dmon -e ...'")
        if rules.headers == 0 and rules.cset is None and rules.rejected and self.known == 0:
            raise InputError(path, "dcgmi dmon rows without the '#Entity' header line: field IDs unknown",
                             "keep the two header lines dcgmi dmon prints (or the 'dcgmi dmon -e ...' command)")
        acc = InputAccounting(path, FORMAT, records=self.records, missing=self.missing,
                              rejected=len(rules.rejected) + rules.extra_rejected)
        meta: dict[str, object] = {
            "errors": rules.errors, "ticks": self.tick.count, "headers": rules.headers, "rows": self.tick.rows,
            "interval_s": opts.interval_or_default(), "sentinels": self.sentinels,
            "start": datetime.fromtimestamp(start_ms / 1000, tz=timezone.utc).isoformat(),
            "start_from": "--start" if opts.start is not None else "file mtime",
        }
        rules.rejected.sort(key=lambda r: r.line or 0)
        return ParseResult(accounting=acc, rejected=rules.rejected, meta=meta)
