"""Map: sample rows (pandas or Arrow batches) to window partials, through runs of equal rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from rooftop.analyzer.windows.codes import (
    Raw,
    _codes,
    _ConstColumn,
    _epoch_ms,
    _group_codes,
    _is_const,
    _missing,
    _raw_codes,
    _sorted_raw,
    _top_labels,
    _unify,
)
from rooftop.analyzer.windows.fields import (
    _FID_LUT,
    _KEY_KEEP,
    LABEL_COLUMNS,
    METRICS,
    Codes,
    Slices,
)
from rooftop.analyzer.windows.partials import WindowPartials, _empty_partials

_DENSE_MAX = 1 << 22  # largest dense code space (cells) tabulated with np.bincount without re-coding



def window_partials(samples: pd.DataFrame, window_s: float) -> pd.DataFrame:
    """Per (``KEY_COLUMNS``) sums, counts and label counts of one partition of samples (pandas)."""
    n = len(samples)
    if not n:
        return _empty_partials(window_s).to_frame()
    keys = [_sorted_raw(_codes(samples[c])) if c in samples.columns else _missing(n) for c in _KEY_KEEP]
    labels = {lab: _sorted_raw(_codes(samples[lab], blank_missing=True))
              for lab in LABEL_COLUMNS if lab in samples.columns}
    runs = _runs(_epoch_ms(samples["timestamp"]), samples["field_id"].to_numpy(),
                 samples["value"].to_numpy(dtype="float64"), keys, labels, window_s, ((-(2**63), 2**63 - 1),))
    out = _group_runs([] if runs is None else [runs], window_s, 1)[0]
    return (out if out is not None else _empty_partials(window_s)).to_frame()


def window_partials_arrow(batch: pa.RecordBatch | pa.Table, window_s: float, slices: Slices,
                          constants: dict[str, str | None] | None = None) -> list[WindowPartials | None]:
    """:func:`window_partials` of an Arrow batch (as read from Parquet, strings dictionary-encoded
    or not) for each time slice ``[lo, hi)`` (epoch ms): one :class:`WindowPartials` per slice,
    None if empty. ``constants``: string columns absent from ``batch`` that hold one value (or
    None) on every row. A table is taken record batch by record batch (row group by row group
    from Parquet): dictionary indices are used as read, sorted codes are found per run."""
    batches = batch.to_batches() if isinstance(batch, pa.Table) else [batch]
    runs = [r for b in batches if b.num_rows for r in [_batch_runs(b, window_s, slices, constants or {})]
            if r is not None]
    return _group_runs(runs, window_s, len(slices))


def _batch_runs(batch: pa.RecordBatch, window_s: float, slices: Slices,
                consts: dict[str, str | None]) -> _Runs | None:
    n = batch.num_rows
    names = {*batch.schema.names, *consts}

    def column(name: str) -> Any:
        return _ConstColumn(consts[name], n) if name in consts else batch.column(name)

    tcol = batch.column("timestamp")
    ts = np.asarray(tcol.cast(pa.int64()).to_numpy())
    unit = tcol.type.unit if pa.types.is_timestamp(tcol.type) else "ms"
    ts = ts * 1000 if unit == "s" else ts // {"ms": 1, "us": 1000, "ns": 1_000_000}[unit] if unit != "ms" else ts
    keys = [_raw_codes(column(c)) if c in names else _missing(n) for c in _KEY_KEEP]
    labels = {lab: _raw_codes(column(lab), blank_missing=True) for lab in LABEL_COLUMNS if lab in names}
    return _runs(ts, np.asarray(batch.column("field_id").to_numpy()),
                 np.asarray(batch.column("value").to_numpy(), dtype="float64"), keys, labels, window_s, slices)



def _run_starts(*cols: np.ndarray) -> np.ndarray | None:
    """First row of every run of rows equal in all ``cols`` when runs are long (mean >= 4 rows:
    series in time order), else None (interleaved rows: each row is its own run)."""
    n = len(cols[0])
    if n == 0:
        return None
    chg = cols[0][1:] != cols[0][:-1]
    for c in cols[1:]:
        chg |= c[1:] != c[:-1]
    starts = np.flatnonzero(chg)
    if 4 * (len(starts) + 1) > n:
        return None
    starts += 1
    return np.concatenate((np.zeros(1, dtype=starts.dtype), starts))


@dataclass
class _Runs:
    """Runs of rows with one (key tuple, labels, window, metric, slice): what each run adds."""

    keys: list[Codes]  # sorted codes per run and uniques, per _KEY_KEEP column
    labels: dict[str, Codes]
    win: np.ndarray  # absolute window number (epoch ms // window)
    metric: np.ndarray
    sl: np.ndarray | int  # slice per run, or one slice for all
    total: np.ndarray  # sum of values
    count: np.ndarray
    zeros: np.ndarray
    t_min: np.ndarray
    t_max: np.ndarray


def _runs(ts: np.ndarray, fid: np.ndarray, value: np.ndarray, keys: list[Raw], labels: dict[str, Raw],
          window_s: float, slices: Slices) -> _Runs | None:
    """Rows reduced to runs: one pass per column finds where (keys, labels, window, metric, slice)
    change; values are summed run by run (``np.add.reduceat``, pairwise inside a run). Rows that
    interleave series (mean run < 4 rows) are taken one by one. Out-of-slice and unknown-field
    rows are dropped; None when nothing is left.

    One piece because it is the scan's hot path, one pass over a partition's NumPy columns whose
    intermediate arrays (kept rows, run starts, windows) every step shares: split, each step would
    hand a dozen arrays on (timings in bench/NOTES.md)."""
    win_ms = max(1, round(window_s * 1000))
    n_sl = len(slices)
    sl: np.ndarray | None = None
    sl0 = 0
    keep: np.ndarray | None = None
    t_lo, t_hi = (int(ts.min()), int(ts.max())) if len(ts) else (0, 0)
    whole = [i for i, (lo, hi) in enumerate(slices) if lo <= t_lo and t_hi < hi]
    if whole:  # the usual case: a partition's rows all fall in one slice, no per-row test
        sl0 = whole[0]
    elif n_sl == 1:
        lo, hi = slices[0]
        keep = (ts >= lo) & (ts < hi)
    else:
        sl = np.full(len(ts), -1, dtype="int64")
        for i, (lo, hi) in enumerate(slices):
            sl[(ts >= lo) & (ts < hi)] = i
        keep = sl >= 0
    raw_keys = [c for c, _r, _u in keys]
    raw_labels = {k: c for k, (c, _r, _u) in labels.items()}
    if keep is not None and not keep.all():
        ts, fid, value = ts[keep], fid[keep], value[keep]
        sl = None if sl is None else sl[keep]
        n_keep = len(ts)
        raw_keys = [_take(c, keep, n_keep) for c in raw_keys]
        raw_labels = {k: _take(c, keep, n_keep) for k, c in raw_labels.items()}
        t_lo, t_hi = (int(ts.min()), int(ts.max())) if n_keep else (0, 0)
    if not len(ts):
        return None
    w0 = t_lo // win_ms
    if t_hi - w0 * win_ms < 2**31:  # int32 division is several times cheaper than int64 (or float)
        win = (ts - w0 * win_ms).astype("int32") // np.int32(win_ms)
    else:
        win = (ts - w0 * win_ms) // win_ms
    varying = [c for c in (*raw_keys, *raw_labels.values()) if not _is_const(c)]
    starts = _run_starts(win, fid, *varying, *([] if sl is None else [sl]))
    zero = value == 0.0
    if starts is None:  # every row a run
        at: Any = slice(None)
        total, count, t_min, t_max = value, np.ones(len(ts), dtype="int64"), ts, ts
        zeros = zero.astype("int64")
    else:
        at = starts
        total = np.add.reduceat(value, starts)
        count = np.diff(np.r_[starts, np.int64(len(ts))])
        zeros = (np.add.reduceat(zero.view("uint8"), starts, dtype="int64") if np.count_nonzero(zero)
                 else np.zeros(len(starts), dtype="int64"))
        t_min, t_max = np.minimum.reduceat(ts, starts), np.maximum.reduceat(ts, starts)
    # field id -> metric per run (out-of-range ids clip onto the -1 slots at both ends); runs of
    # fields that are not windowed (temperature, clocks...) are dropped here, not row by row
    metric = _FID_LUT.take(fid[at], mode="clip").astype("int64")
    known: Any = slice(None) if not len(metric) or metric.min() >= 0 else np.flatnonzero(metric >= 0)
    if not isinstance(known, slice):
        if not len(known):
            return None
        at = known if starts is None else starts[known]
        metric, total, count, zeros = metric[known], total[known], count[known], zeros[known]
        t_min, t_max = t_min[known], t_max[known]
    n_runs = len(total)

    def codes(c: np.ndarray, remap: np.ndarray) -> np.ndarray:
        return remap[c[at]] if not _is_const(c) else np.broadcast_to(remap[c[:1]], (n_runs,))

    return _Runs(keys=[(codes(c, r), u) for c, (_c, r, u) in zip(raw_keys, keys, strict=True)],
                 labels={k: (codes(raw_labels[k], r), u) for k, (_c, r, u) in labels.items()},
                 win=np.asarray(win[at], dtype="int64") + w0, metric=metric,
                 sl=sl0 if sl is None else sl[at], total=total, count=count, zeros=zeros, t_min=t_min, t_max=t_max)


def _take(c: np.ndarray, keep: np.ndarray, n: int) -> np.ndarray:
    return np.broadcast_to(c[:1], (n,)) if _is_const(c) and len(c) else c[keep]


def _group_runs(runs: list[_Runs], window_s: float, n_sl: int) -> list[WindowPartials | None]:
    """Tabulate runs into partials per slice: group = (key codes, window, slice) in mixed radix
    (dense integers, sorted like the keys), cells = group × metric summed with ``np.bincount``
    in run order (the same runs in the same order give the same bits on every engine).

    One piece because the group codes, cell sums and per-slice partials are one tabulation over
    shared arrays, on the scan's hot path (bench/NOTES.md)."""
    if not runs:
        return [None] * n_sl
    win_ms = max(1, round(window_s * 1000))
    k = len(_KEY_KEEP)
    keys = [_unify([r.keys[i][1] for r in runs], [r.keys[i][0] for r in runs]) for i in range(k)]
    lab_names = [lab for lab in LABEL_COLUMNS if all(lab in r.labels for r in runs)]
    labels = {lab: _unify([r.labels[lab][1] for r in runs], [r.labels[lab][0] for r in runs]) for lab in lab_names}

    def cat(name: str) -> np.ndarray:
        return np.concatenate([np.broadcast_to(getattr(r, name), (len(r.total),)) for r in runs])

    win, metric, sl = cat("win"), cat("metric"), cat("sl")
    count = cat("count")
    w0 = int(win.min())
    n_win = int(win.max()) - w0 + 1
    radix = [len(u) + 1 for _c, u in keys] + [n_win, n_sl]
    parts = [c for c, _u in keys] + [win - w0, sl]
    space = 1
    for r in radix:
        space *= r
    n_runs = len(win)
    if space <= max(_DENSE_MAX, 4 * n_runs):
        code = np.zeros(n_runs, dtype="int64")
        for c, r in zip(parts, radix, strict=True):
            code *= r
            code += c
        present = np.bincount(code, minlength=space) > 0
        gcode = np.flatnonzero(present)
        lut = np.cumsum(present) - 1
        gid, n_g = lut[code], len(gcode)
        dec = gcode
        g_parts: list[np.ndarray] = [np.empty(0)] * len(parts)
        for i in range(len(parts) - 1, -1, -1):
            dec, g_parts[i] = np.divmod(dec, radix[i])
    else:
        gid, n_g = _group_codes(parts)
        rep = np.full(n_g, n_runs, dtype="int64")
        np.minimum.at(rep, gid, np.arange(n_runs))
        g_parts = [np.asarray(p)[rep] for p in parts]
    n_m = len(METRICS)
    cell = gid * n_m + metric
    size = n_g * n_m
    sums = np.bincount(cell, weights=cat("total"), minlength=size).reshape(n_g, n_m)
    cnts = np.rint(np.bincount(cell, weights=count, minlength=size)).astype("int64").reshape(n_g, n_m)
    zeros = np.rint(np.bincount(cell, weights=cat("zeros"), minlength=size)).astype("int64").reshape(n_g, n_m)
    first = np.full(n_g, np.iinfo("int64").max, dtype="int64")
    last = np.full(n_g, np.iinfo("int64").min, dtype="int64")
    np.minimum.at(first, gid, cat("t_min"))
    np.maximum.at(last, gid, cat("t_max"))
    tops = {lab: _top_labels(lc, gid, n_g, count) for lab, lc in labels.items()}
    g_sl = g_parts[-1]
    out: list[WindowPartials | None] = []
    for s in range(n_sl):
        rows = np.flatnonzero(g_sl == s)
        if not len(rows):
            out.append(None)
            continue
        out.append(WindowPartials(
            uniques=tuple(u for _c, u in keys),
            codes=np.stack([np.asarray(g_parts[i][rows], dtype="int64") for i in range(k)], axis=1),
            window_start=(g_parts[k][rows] + w0) * win_ms, sums=sums[rows], counts=cnts[rows], zeros=zeros[rows],
            first_ts=first[rows], last_ts=last[rows], window_s=float(window_s),
            labels={lab: (top[rows], labels[lab][1], top_n[rows]) for lab, (top, top_n) in tops.items()}))
    return out
