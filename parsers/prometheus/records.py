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
NO_GPU = ("sample has no GPU identity (no gpu, UUID, uuid or gpu_uuid label): it cannot be placed on a GPU; "
          "scrape the exporter with its GPU labels (dcgm-exporter sets gpu and UUID) or drop the line "
          "(docs/formulas.md#inputs)")
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
    announced: tuple[set[bytes], set[bytes]] = field(default_factory=lambda: (set(), set()))  # HELP, TYPE seen
    help_scrapes: int = 0  # scrapes begun by a repeated # HELP/# TYPE line so far


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


def _why(h: Heads, i: int, unknown: bool, numeric: bool, overflow: bool, value: Any, ts: Any,
         no_gpu: bool = False) -> str:
    if unknown:
        return f"unknown DCGM field {h.name[i].as_py()!r}"
    if no_gpu:
        return NO_GPU
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
    no_gpu = no_gpu_identity(h)[hidx]
    overflow = bad_timestamps(ts_s)
    bad = unknown | no_gpu | ~numeric | overflow | off_scale(ts_s, overflow)
    for i in np.flatnonzero(bad):
        rejected.append(Rejected(path, int(nos[i]), _why(h, int(hidx[i]), bool(unknown[i]), bool(numeric[i]),
                                                         bool(overflow[i]), value_s[int(i)].as_py(),
                                                         ts_s[int(i)].as_py(), bool(no_gpu[i]))))
    return value_all, ~bad


def no_gpu_identity(h: Heads) -> np.ndarray:
    """Per head: neither a ``gpu`` index nor a UUID label (docs/formulas.md#inputs, "GPU identity")."""
    none = pc.and_(pc.is_null(h.labels["gpu"]), pc.is_null(h.labels["uuid"]))
    return bool_mask(none) if len(none) else np.zeros(0, dtype=bool)


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


_HELP = np.frombuffer(b"# HELP ", dtype=np.uint8)
_TYPE = np.frombuffer(b"# TYPE ", dtype=np.uint8)
_BLANK_TEXT = r"^[ \t]*\r?$"
_META_TEXT = r"^# (HELP|TYPE) "


def boundary_lines(data: pa.Array | bytes | memoryview, offset: int) -> tuple[np.ndarray, list[tuple[int, bytes]]]:
    """The chunk's blank lines (1-based numbers) and its ``# HELP``/``# TYPE`` lines as
    ``(number, b"HELP name")``: where a scrape of concatenated ``curl`` output can begin."""
    if isinstance(data, (bytes, memoryview)):
        arr = np.frombuffer(data, dtype=np.uint8)
        starts = np.r_[0, np.flatnonzero(arr == 10) + 1]  # every line's first byte (one past the end: blank)
        first = np.append(arr, np.uint8(10))[starts]
        blank = np.flatnonzero((first == 10) | (first == 13))
        hashes = np.flatnonzero(first == 35)  # '#': "# HELP " / "# TYPE " compared byte by byte
        pad = np.append(arr, np.zeros(8, dtype=np.uint8))
        head = pad[starts[hashes][:, None] + np.arange(7)]
        meta = hashes[(head == _HELP).all(axis=1) | (head == _TYPE).all(axis=1)]
        buf = bytes(data) if len(meta) else b""
        names = [(int(i) + offset + 1, _meta_key(buf, int(starts[i]))) for i in meta.tolist()]
        return blank.astype("int64") + offset + 1, names
    blank = np.flatnonzero(bool_mask(pc.match_substring_regex(data, _BLANK_TEXT))).astype("int64")
    metas = np.flatnonzero(bool_mask(pc.match_substring_regex(data, _META_TEXT)))
    lines = data.take(pa.array(metas, pa.int64())).to_pylist() if len(metas) else []
    named = [(int(i) + offset + 1, _meta_key(str(t).encode(), 0)) for i, t in zip(metas.tolist(), lines, strict=True)]
    return blank + offset + 1, named


def _meta_key(buf: bytes, at: int) -> bytes:
    """``b"HELP name"`` / ``b"TYPE name"`` of the ``# HELP name ...`` line starting at ``at``."""
    end = buf.find(b"\n", at)
    words = buf[at + 2 : end if end >= 0 else len(buf)].split(None, 2)
    return b" ".join(words[:2])


def help_events(named: list[tuple[int, bytes]], state: State) -> np.ndarray:
    """Line numbers where a repeated ``# HELP``/``# TYPE`` line begins a scrape: the family was
    already announced (HELP, or TYPE) since the current scrape began (carried across chunks)."""
    out: list[int] = []
    helps, types = state.announced
    for line, key in named:
        kind, _, name = key.partition(b" ")
        seen = helps if kind == b"HELP" else types
        if name in seen:
            out.append(line)
            helps.clear()
            types.clear()
        seen.add(name)
    return np.array(out, dtype="int64")


def move_to_boundaries(scrape: np.ndarray, inv: np.ndarray, nos: np.ndarray, bounds: np.ndarray,
                       final: bool = True) -> np.ndarray:
    """Scrape indices with each new scrape begun at a blank line before the repeat that revealed
    it (docs/formulas.md#inputs, "Scrapes"): the first blank line
    after the last row of the previous scrape whose series is again in the new one (and after that
    scrape's first row); the rows from it to the repeat belong to the new scrape (their series are
    not in it yet). ``nos``: the rows' line numbers (ascending); ``final``: the chunk is the file's
    last (else its last scrape may go on in the next chunk, where a repeat of a moved series could
    not be seen: that scrape's start is left where it is). Vectorised over the chunk's scrapes."""
    inc = np.flatnonzero(np.diff(scrape) > 0) + 1  # first row of each scrape begun in the chunk
    if not final:
        inc = inc[:-1]
    if not len(inc) or not len(bounds):
        return scrape
    n = len(scrape)
    runs = np.r_[0, inc, n]  # run q = rows [runs[q], runs[q+1]); scrape q+1 begins at inc[q]
    run = np.searchsorted(inc, np.arange(n), side="right")  # each row's run
    # the next row of the same series (n where none), and whether it lies in the following run
    order = np.lexsort((np.arange(n), inv))
    nxt = np.full(n, n, dtype="int64")
    same = inv[order[1:]] == inv[order[:-1]]
    nxt[order[:-1][same]] = order[1:][same]
    follow_end = runs[np.minimum(run + 2, len(runs) - 1)]
    again = (run < len(inc)) & (nxt >= runs[np.minimum(run + 1, len(runs) - 1)]) & (nxt < follow_end)
    # per increment q: the line after which its boundary must lie
    prev_first = runs[:-2]  # first row of the run before each increment
    last_again = np.full(len(inc), -1, dtype="int64")
    rows = np.flatnonzero(again)
    np.maximum.at(last_again, run[rows], rows)
    after = nos[np.where(last_again >= 0, last_again, prev_first)]
    j = np.searchsorted(bounds, after, side="right")
    ok = j < len(bounds)
    line = bounds[np.minimum(j, len(bounds) - 1)]
    ok &= line < nos[inc]
    lo = np.searchsorted(nos, line, side="right")
    ok &= lo < inc
    if not ok.any():
        return scrape
    out: np.ndarray = np.array(scrape, copy=True)
    for q in np.flatnonzero(ok).tolist():  # disjoint ranges, one slice assignment each
        out[lo[q]:inc[q]] = scrape[inc[q]]
    return out


def _scrapes(h: Heads, hidx: np.ndarray, state: State, nos: np.ndarray | None = None,
             bounds: np.ndarray | None = None, final: bool = True,
             events: np.ndarray | None = None) -> np.ndarray:
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
    scrape = number_scrapes(inv, uniq, idents, state)
    if nos is not None and events is not None and len(events):
        # a repeated # HELP/# TYPE line begins a scrape at once (prefix-stable: only earlier lines decide)
        bump = state.help_scrapes + np.searchsorted(events, nos, side="right")
        scrape = np.maximum.accumulate(np.maximum(scrape, bump))
        state.help_scrapes += len(events)
        state.max_scrape = max(state.max_scrape, int(scrape[-1]))
    if nos is not None and bounds is not None:
        scrape = move_to_boundaries(scrape, inv, nos, bounds, final)
    return scrape


def _columns(h: Heads, hidx: np.ndarray, value: pa.Array, ts_s: pa.Array, state: State,
             nos: np.ndarray | None = None, bounds: np.ndarray | None = None, final: bool = True,
             events: np.ndarray | None = None) -> pa.Table:
    """The rows' table (good lines only): ts_ms, scrape, field_id, field, value (canonical unit),
    missing, and the label columns dictionary-encoded by head. ``nos``/``bounds``: the rows' line
    numbers and the chunk's possible scrape starts (:func:`move_to_boundaries`)."""
    scrape = _scrapes(h, hidx, state, nos, bounds, final, events)
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
                rejected: list[Rejected], final: bool = True) -> tuple[pa.Table | None, int]:
    """(rows of one chunk, its number of lines); ``offset``: lines before the chunk; ``final``: no
    chunk follows. Rows: ts_ms, scrape, field_id, field, value, missing and the label columns."""
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
    nos = c_no[ok][good]
    # scrapes told apart by repetition (no explicit times): a scrape begins at its blank line or
    # # HELP/# TYPE block, not at the first repeated series (values of two scrapes never mixed)
    bounds = events = None
    if ts_s.null_count == len(ts_s) and len(ts_s):
        bounds, named = boundary_lines(data, offset)
        events = help_events(named, state)
    return _columns(h, hidx_k, value_all, ts_s, state, nos, bounds, final, events), n_lines
