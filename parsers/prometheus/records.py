"""One chunk of Prometheus text to sample rows: line accounting, rejections, scrape numbering.

Every candidate line (:mod:`parsers.prometheus.scan` fast lines, :mod:`parsers.prometheus.grammar` general
ones) becomes a row or a :class:`Rejected` with its 1-based line number and reason: the line does
not parse as ``name{labels} value [ts]``, names a field rooftop does not know, has a non-numeric
value, or a timestamp out of range or in no epoch scale (:mod:`parsers.prometheus.times`). Rows carry
``missing`` for ``NaN``/``±Inf``, DCGM blank sentinels and a value whose unit cannot be told
(:func:`parsers.dcgm.fields.percent_or_ratio`). Values are converted to the field's
canonical unit (:func:`parsers.dcgm.fields.canonical_factor`). docs/formulas.md#inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rooftop.parsers.dcgm import fields as F
from rooftop.parsers.model import Rejected
from rooftop.parsers.prometheus.grammar import NUMBER, candidates, empty_parts, extract, merge
from rooftop.parsers.prometheus.heads import HeadCache, Heads
from rooftop.parsers.prometheus.scan import bool_mask, scan_chunk, take
from rooftop.parsers.prometheus.times import bad_timestamps, off_scale, to_ms
from rooftop.parsers.units import EPOCH_YEARS

UNPARSED = "DCGM metric line does not parse as 'name{labels} value [ts]'"
SERIES_LABELS = ("host", "gpu", "uuid", "mig")  # with the field: one series (label drift does not split it)


@dataclass
class State:
    """What one file's chunks share: series counts for scrape numbering, head cache, counters."""

    counts: dict[tuple[int, tuple[Any, ...]], int] = field(default_factory=dict)
    max_scrape: int = -1
    other: int = 0
    sentinels: int = 0
    label_sentinels: int = 0
    unit_ambiguous: int = 0  # values of a UNIT_BY_VALUE field that are exactly 1 (1 % or 100 %)
    rescaled: dict[str, int] = field(default_factory=dict)  # explicit timestamps not in ms, by scale
    heads: HeadCache = field(default_factory=HeadCache)


Located = tuple[np.ndarray, np.ndarray, np.ndarray, pa.Array, pa.Array, pa.Array]


def _locate(data: pa.Array | bytes | memoryview, state: State) -> tuple[int, Located]:
    """(number of lines, :func:`parsers.prometheus.grammar.merge` of the chunk's candidates)."""
    if isinstance(data, (bytes, memoryview)):
        lines, rest_no, fast = scan_chunk(data)
        n_lines = len(lines) + (len(fast.no) if fast is not None else 0)
    else:
        lines, rest_no, fast = data, np.arange(len(data)), None
        n_lines = len(lines)
    slow_no, slow = np.zeros(0, dtype="int64"), empty_parts()
    if len(lines):
        d_idx, other = candidates(lines)
        state.other += other
        slow_no = rest_no[d_idx]
        if len(d_idx):
            slow = extract(take(lines, d_idx) if len(d_idx) < len(lines) else lines)
    return n_lines, merge(fast, slow_no, slow)


def _why(h: Heads, i: int, unknown: bool, numeric: bool, overflow: bool, value: Any, ts: Any) -> str:
    if unknown:
        return f"unknown DCGM field {h.name[i].as_py()!r}"
    if not numeric:
        return f"value {str(value)[:40]!r} is not a number"
    if overflow:
        return f"timestamp {str(ts)[:40]!r} ms is outside the 64-bit millisecond range"
    return (f"timestamp {str(ts)[:40]!r} is not an epoch time between {EPOCH_YEARS[0]} and {EPOCH_YEARS[1]} "
            "in ms (nor s, us, ns) (docs/formulas.md#fleet-ingest)")


def _checked(h: Heads, hidx: np.ndarray, value_s: pa.Array, ts_s: pa.Array, nos: np.ndarray, path: str,
             rejected: list[Rejected]) -> tuple[pa.Array, np.ndarray]:
    """(values as float64, good mask) of parsed lines; the others rejected with their reason."""
    unknown = h.fid[hidx] < 0
    try:
        value_all = pc.cast(value_s, pa.float64())
        numeric = np.ones(len(hidx), dtype=bool)
    except pa.ArrowInvalid:
        numeric = bool_mask(pc.match_substring_regex(value_s, NUMBER))
        value_all = pc.cast(pc.if_else(pa.array(numeric), pc.replace_substring_regex(value_s, r"^\+", ""),
                                       pa.scalar("nan")), pa.float64())
    overflow = bad_timestamps(ts_s)
    bad = unknown | ~numeric | overflow | off_scale(ts_s, overflow)
    for i in np.flatnonzero(bad):
        rejected.append(Rejected(path, int(nos[i]), _why(h, int(hidx[i]), bool(unknown[i]), bool(numeric[i]),
                                                         bool(overflow[i]), value_s[int(i)].as_py(),
                                                         ts_s[int(i)].as_py())))
    return value_all, ~bad


def series_idents(h: Heads) -> tuple[np.ndarray, list[tuple[Any, ...]]]:
    """Each head's series identity (host/gpu/UUID/GPU-instance labels) as a code, and the identities."""
    ident_rows = list(zip(*(h.labels[c].to_pylist() for c in SERIES_LABELS), strict=True))
    ident_id: dict[tuple[Any, ...], int] = {}
    head_ident = np.array([ident_id.setdefault(t, len(ident_id)) for t in ident_rows], dtype="int64")
    return head_ident, list(ident_id)


def number_scrapes(inv: np.ndarray, uniq: np.ndarray, idents: list[tuple[Any, ...]], state: State) -> np.ndarray:
    """Scrape index of each row from its series code ``inv`` (positions in ``uniq``, the codes
    ``field_id * len(idents) + identity``): running maximum of the series' occurrences before it,
    carried across chunks in ``state``."""
    m = max(1, len(idents))
    order = np.argsort(inv, kind="stable")
    per = np.bincount(inv, minlength=len(uniq))
    cum = np.empty(len(inv), dtype="int64")  # occurrences of the row's series before it in the chunk
    cum[order] = np.arange(len(inv)) - (np.cumsum(per) - per)[inv[order]]
    skeys = [(int(u) // m, idents[int(u) % m]) for u in uniq]
    prior = np.array([state.counts.get(k, 0) for k in skeys], dtype="int64")
    scrape = np.maximum.accumulate(np.maximum(prior[inv] + cum, state.max_scrape))
    state.max_scrape = int(scrape[-1])
    for k, c in zip(skeys, per.tolist(), strict=True):
        if c:  # heads of other chunks have no rows here
            state.counts[k] = state.counts.get(k, 0) + int(c)
    return scrape


def _scrapes(h: Heads, hidx: np.ndarray, state: State) -> np.ndarray:
    """Scrape index of each row: running maximum of "how many times its series appeared before"
    (a repeated series starts a new scrape; a series is its field plus host/gpu/UUID/GPU-instance).

    Series are numbered per distinct head (a few hundred), rows get theirs by head index as int16
    (numpy's stable sort of int16 is a radix sort): 6-8 % less CPU than ``np.unique`` over every
    row (bench/prom_fastpath.py, bench/NOTES.md)."""
    if not len(hidx):
        return np.zeros(0, "int64")
    head_ident, idents = series_idents(h)
    m = max(1, len(idents))
    uniq, inv_h = np.unique(h.fid.astype("int64") * m + head_ident, return_inverse=True)
    inv = inv_h.reshape(-1)[hidx].astype(np.int16 if len(uniq) < 2**15 else np.int64)
    return number_scrapes(inv, uniq, idents, state)


def _columns(h: Heads, hidx: np.ndarray, value: pa.Array, ts_s: pa.Array, state: State) -> pa.Table:
    """The rows' table (good lines only): ts_ms, scrape, field_id, field, value (canonical unit),
    missing, and the label columns dictionary-encoded by head."""
    scrape = _scrapes(h, hidx, state)
    v = np.asarray(value.to_numpy(zero_copy_only=False), dtype="float64")
    # the canonical factor of each head's field name (DCGM 4.6.1 SI names converted), per sample
    names = h.name.to_pylist()
    factor = np.array([F.canonical_factor(n or "") for n in names], dtype="float64")[hidx]
    sentinel = F.sentinel_mask(v)
    state.sentinels += int(sentinel.sum())
    by_value = np.array([n in F.UNIT_BY_VALUE for n in names], dtype=bool)[hidx]
    if by_value.any():  # the unit is told by the value (dcgm_fields.percent_or_ratio)
        f, ambiguous = F.percent_or_ratio(v[by_value])
        factor[by_value] = f
        sentinel[by_value] |= ambiguous
        state.unit_ambiguous += int(ambiguous.sum())
    ts = pc.cast(ts_s, pa.int64()) if ts_s.null_count < len(ts_s) else pa.nulls(len(v), pa.int64())
    h_arr = pa.array(hidx, pa.int64())
    cols: dict[str, pa.Array] = {
        "ts_ms": to_ms(ts, state.rescaled),
        "scrape": pa.array(scrape, pa.int64()),
        "field_id": pa.array(h.fid[hidx], pa.int32()),
        "field": pa.DictionaryArray.from_arrays(h_arr, h.name),
        "value": pa.array(v * factor, pa.float64()),
        "missing": pa.array(sentinel | ~np.isfinite(v)),
    }
    for col, arr in h.labels.items():  # dictionary-encoded: one value per distinct head
        cols[col] = pa.DictionaryArray.from_arrays(h_arr, arr)
    return pa.table(cols)


def parse_chunk(data: pa.Array | bytes | memoryview, offset: int, state: State, path: str,
                rejected: list[Rejected]) -> tuple[pa.Table | None, int]:
    """(rows of one chunk, its number of lines); ``offset``: lines before the chunk. Rows: ts_ms,
    scrape, field_id, field, value, missing and the label columns."""
    n_lines, (c_idx, ok, hidx, heads, value_s, ts_s) = _locate(data, state)
    if not len(c_idx):
        return None, n_lines
    c_no = c_idx + offset + 1
    h = state.heads.lookup(heads)
    ok_rows = np.flatnonzero(ok)
    bad_head = ~h.valid[hidx]
    ok[ok_rows[bad_head]] = False
    rejected.extend(Rejected(path, int(n), UNPARSED) for n in c_no[~ok])
    if not ok.any():
        return None, n_lines
    if bad_head.any():
        keep_h = pa.array(~bad_head)
        hidx = hidx[~bad_head]
        value_s, ts_s = pc.filter(value_s, keep_h), pc.filter(ts_s, keep_h)
    value_all, good = _checked(h, hidx, value_s, ts_s, c_no[ok], path, rejected)
    hidx_k = hidx[good]
    state.label_sentinels += int(h.sentinels[hidx_k].sum())
    if not good.all():
        keep = pa.array(good)
        value_all, ts_s = value_all.filter(keep), ts_s.filter(keep)
    return _columns(h, hidx_k, value_all, ts_s, state), n_lines
