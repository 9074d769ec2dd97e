"""Prometheus exposition text from dcgm-exporter (``curl :9400/metrics``), one or many scrapes.

Vectorized: the file is read in chunks of whole lines (bounded memory); each chunk becomes an
Arrow string array and metric name, label block, value and timestamp come out of one
``pyarrow.compute.extract_regex`` pass; each label we need is one more regex over the label-block
column. Python only loops over *distinct* names/series, never over lines.

Line kinds:

* ``# HELP`` / ``# TYPE`` / other comments, blank lines, shell prompts, kubectl/curl noise,
  Markdown prose and fences: not samples, skipped.
* ``DCGM_FI_<NAME>{labels} value [timestamp_ms]`` (optionally behind a Markdown ``> `` quote):
  a sample. Missing when the value is ``NaN``/``±Inf`` or a DCGM blank sentinel
  (:func:`parsers.dcgm_fields.sentinel_mask`); rejected (with line and reason) when a line that
  starts like a DCGM metric does not parse, names a field rooftop does not know, or has a
  non-numeric value.
* Any other well-formed metric line (``go_*``, ``process_*``, ``DCGM_EXP_*``): not a DCGM field;
  skipped and counted in ``meta["other_metric_lines"]``.

Labels (drift handled): host ``Hostname``|``hostname``; uuid ``UUID``|``uuid``|``gpu_uuid``;
model ``modelName``|``model_name``; MIG ``GPU_I_ID``/``GPU_I_PROFILE``; workload
``exported_namespace``/``exported_pod``/``exported_container`` preferred over
``namespace``/``pod``/``container`` (Prometheus renames the exporter's labels that way when they
clash with target labels); job ``hpc_job``. Empty and ``<<<NULL>>>``-style values are null.
Values are taken as printed (ratios 0..1 even where HELP says "%"), except the NVML percentages
scaled by :data:`parsers.dcgm_fields.TO_CANONICAL`.

Timestamps: an explicit trailing millisecond timestamp (``promtool tsdb dump`` style) wins. One that
is an epoch time between 1990 and 2200 only in seconds, microseconds or nanoseconds is rescaled
(``meta["timestamps_rescaled_from"]`` counts them); one that is such a time in no scale is rejected
(docs/formulas.md#fleet-ingest, "Time scales").
Otherwise scrapes are told apart by repetition: scrape index of a line = running maximum of "how
many times this series appeared before" (a repeated series starts a new scrape; a series is the
field plus host/gpu/UUID/GPU-instance values, so label drift between scrapes does not hide it),
and scrape *k* is stamped ``start + k * interval``. ``interval`` is dcgm-exporter's default
collect interval, 30 s, unless ``ParseOptions.interval_s`` is set to something other than its
default; ``start`` is ``ParseOptions.start`` or the file's mtime minus ``n_scrapes * interval``.
``meta["interval_assumed"]`` says when the 30 s default was used.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rooftop.parsers import dcgm_fields as F
from rooftop.parsers.model import (
    SAMPLE_SCHEMA,
    InputAccounting,
    ParseResult,
    Rejected,
    drain_batches,
)
from rooftop.parsers.source import ParseOptions, Source
from rooftop.parsers.units import EPOCH_YEARS, epoch_ms_array

FORMAT = "prometheus-text"
CHUNK_BYTES = 8 << 20
BATCH_ROWS = 1 << 17  # rows per yielded batch (chunks joined up to this; ~20 MB as SAMPLE_SCHEMA)
DEFAULT_SCRAPE_INTERVAL_S = 30.0

_LINE = (
    r"^[ \t]*(?:>[ \t]*)?(?P<name>DCGM_FI_[A-Za-z0-9_]+)(?:\{(?P<labels>.*)\})?[ \t]+"
    r"(?P<value>[^ \t\r]+)(?:[ \t]+(?P<ts>-?[0-9]+))?[ \t\r]*$"
)
_CANDIDATE = r"^[ \t]*(?:>[ \t]*)?\**DCGM_FI_[A-Za-z0-9_]+(?:[{ \t\r]|$)"
_OTHER = (
    r"^[ \t]*[A-Za-z_:][A-Za-z0-9_:]*(?:\{.*\})?[ \t]+"
    r"[-+]?(?:[0-9.]+(?:[eE][-+]?[0-9]+)?|NaN|Inf)(?:[ \t]+-?[0-9]+)?[ \t\r]*$"
)
_NUMBER = r"^[-+]?(?:[0-9]+\.?[0-9]*(?:[eE][-+]?[0-9]+)?|\.[0-9]+(?:[eE][-+]?[0-9]+)?|NaN|nan|[Ii]nf|[Ii]nfinity)$"

# output column -> label names, first present wins
LABELS: dict[str, tuple[str, ...]] = {
    "host": ("Hostname", "hostname"),
    "gpu": ("gpu",),
    "uuid": ("UUID", "uuid", "gpu_uuid"),
    "model": ("modelName", "model_name"),
    "mig": ("GPU_I_ID",),
    "mig_profile": ("GPU_I_PROFILE",),
    "namespace": ("exported_namespace", "namespace"),
    "pod": ("exported_pod", "pod"),
    "container": ("exported_container", "container"),
    "job": ("hpc_job",),
}


def _label_regex(name: str) -> str:
    return r'(?:^|[,{ \t*])' + name + r'="(?P<v>(?:[^"\\]|\\.)*)"'


@dataclass
class _State:
    counts: dict[tuple[int, tuple[Any, ...]], int] = field(default_factory=dict)
    max_scrape: int = -1
    other: int = 0
    sentinels: int = 0
    label_sentinels: int = 0
    label_names: set[str] = field(default_factory=set)
    rescaled: dict[str, int] = field(default_factory=dict)  # explicit timestamps not in ms, by scale
    head_ids: dict[str, int] = field(default_factory=dict)  # distinct heads parsed so far
    heads: dict[str, Any] = field(default_factory=dict)  # their _parse_heads columns, in head_ids order


def _utf8(data: bytes) -> pa.Array:
    """One-element string array over ``data`` (validated in C; invalid bytes replaced only if any)."""
    try:
        return pa.array([data], pa.binary()).cast(pa.string())
    except pa.ArrowInvalid:
        return pa.array([data.decode("utf-8", "replace")], pa.string())


def _chunks(src: Source) -> Iterator[pa.Array | bytes | memoryview]:
    """The text of each whole-line chunk of the file.

    UTF-8 files give the raw bytes of each chunk (no trailing newline; split by :func:`_lines`),
    other encodings one array of lines.
    """
    if src.encoding != "utf-8":
        text = src.text()
        yield pc.split_pattern(pa.array([text]), "\n").flatten()
        return
    yield from src.line_blocks(CHUNK_BYTES)  # memoryviews: the fast path reads the bytes in place


_WS = np.zeros(256, dtype=bool)
_WS[[9, 10, 11, 12, 13, 32]] = True  # ASCII whitespace as ascii_rtrim_whitespace strips it


@dataclass
class _Fast:
    """Plain ``NAME{labels} value [ts]`` lines of a chunk, found by byte positions (no regex)."""

    no: np.ndarray  # 0-based line index within the chunk, ascending
    heads: pa.DictionaryArray  # ``name{labels}`` per line, dictionary-encoded
    value: pa.Array  # string
    ts: pa.Array  # string, null where the line has no timestamp


def _head_views(b: np.ndarray, buf: pa.Buffer, start: np.ndarray, length: np.ndarray) -> pa.Array:
    """A ``string_view`` array over the byte ranges ``[start, start + length)`` of ``buf``, all
    longer than 12 bytes (so stored out of line: length, 4-byte prefix, buffer 0, offset; zero copy)."""
    n = len(start)
    v = np.zeros((n, 4), dtype="<i4")
    v[:, 0] = length
    v[:, 1] = b[start[:, None] + np.arange(4)].view("<i4")[:, 0]
    v[:, 3] = start
    return pa.Array.from_buffers(pa.string_view(), n, [None, pa.py_buffer(v), buf])


def _slices(buf: pa.Buffer, start: np.ndarray, end: np.ndarray) -> pa.Array:
    """String array of the byte ranges ``[start, end)`` of ``buf`` (ascending, non-overlapping),
    copied out in C: the ranges and the gaps between them are one string array, the ranges its
    even elements."""
    n = len(start)
    if not n:
        return pa.array([], pa.string())
    off = np.empty(2 * n, dtype=np.int32)
    off[0::2] = start
    off[1::2] = end
    both = pa.Array.from_buffers(pa.string(), 2 * n - 1, [None, pa.py_buffer(off), buf])
    return both.take(pa.array(np.arange(0, 2 * n, 2, dtype=np.int64)))


def _lines(data: bytes | memoryview) -> tuple[pa.Array, np.ndarray, _Fast | None]:
    """(the chunk's other lines, their 0-based indices, the plain DCGM lines) of a UTF-8 chunk.

    A line goes the fast way when it starts with ``DCGM_FI_``, its last ``}`` is followed by
    exactly `` value`` or `` value ts`` (single spaces, no tab, ``ts`` ASCII digits) and nothing
    but an optional ``\r``: exactly the lines :func:`_extract` would split into the same head,
    value and timestamp. Every other line (and every line of a chunk that is not valid UTF-8)
    goes through :func:`_parse_chunk`'s general path unchanged.
    """
    b = np.frombuffer(data, dtype=np.uint8)
    buf = pa.py_buffer(data)
    nl = np.flatnonzero(b == 10)
    n = len(nl) + 1
    starts = np.empty(n, dtype=np.int64)
    starts[0] = 0
    starts[1:] = nl + 1
    ends = np.empty(n, dtype=np.int64)
    ends[:-1] = nl
    ends[-1] = len(b)
    try:  # one UTF-8 check over the chunk (zero copy); line slices of valid UTF-8 stay valid
        pa.Array.from_buffers(pa.string(), 1, [None, pa.py_buffer(np.array([0, len(b)], np.int32)),
                                               buf]).validate(full=True)
    except pa.ArrowInvalid:
        lines = pc.split_pattern(_utf8(bytes(data)), "\n").flatten()
        return lines, np.arange(len(lines)), None
    off = np.empty(2 * n, dtype=np.int32)  # line i is string 2i, the newline after it 2i + 1
    off[0::2] = starts
    off[1::2] = ends
    both = pa.Array.from_buffers(pa.string(), 2 * n - 1, [None, pa.py_buffer(off), buf])
    d = np.flatnonzero(_mask(pc.starts_with(both, "DCGM_FI_"))[0::2])
    s = starts[d]
    e = ends[d] - (b[ends[d] - 1] == 13)  # DCGM_FI_ lines are non-empty
    cl = np.flatnonzero(b == 125)  # "}"
    k = np.searchsorted(cl, e) - 1
    q = cl[np.maximum(k, 0)] if len(cl) else np.zeros(len(d), dtype=np.int64)
    ok = (k >= 0) & (q >= s + 12) & (e - q <= 64)  # heads longer than 12 bytes: out-of-line views
    # the tail after the last "}" (short): " value" or " value ts", single spaces, no tab
    f = np.flatnonzero(ok)
    tails = _slices(buf, q[f] + 1, e[f])
    toff = np.frombuffer(tails.buffers()[1], dtype=np.int32)[: len(f) + 1] if len(f) else np.zeros(1, np.int32)
    data_buf = tails.buffers()[2] if len(f) else None
    tail = np.frombuffer(data_buf, dtype=np.uint8)[: int(toff[-1])] if data_buf is not None else np.zeros(0, np.uint8)
    tlen = np.diff(toff)
    padded = np.append(tail, np.uint8(0))  # empty tails (line ends at "}") index the pad
    first = padded[toff[:-1]]
    last = padded[np.maximum(toff[1:] - 1, 0)]
    good = (tlen >= 2) & (first == 32) & ~_WS[last]
    seg = np.repeat(np.arange(len(f)), tlen)
    sp_pos = np.flatnonzero(tail == 32)
    nsp = np.bincount(seg[sp_pos], minlength=len(f))
    other_ws = np.flatnonzero((tail >= 9) & (tail <= 13))  # whitespace other than " " (rare)
    good &= (nsp == 1) | (nsp == 2)
    good[seg[other_ws]] = False
    # second space (the one before the timestamp), as an offset in the tail
    p2 = tlen.copy()
    two = np.flatnonzero(nsp == 2)
    if len(two):
        second = sp_pos[np.searchsorted(sp_pos, toff[two]) + 1] - toff[two]
        p2[two] = second
        good[two] &= (second > 1) & (second < tlen[two] - 1)
        # timestamp bytes must be ASCII digits
        ft = f[two]
        good[two] &= _mask(pc.ascii_is_decimal(_slices(buf, q[ft] + 2 + second, e[ft])))
    good &= p2 > 1
    g = np.flatnonzero(good)
    f, p2, has = f[g], p2[g].astype(np.int64), nsp[g] == 2
    s, q, e = s[f], q[f], e[f]
    value = _slices(buf, q + 2, q + 1 + p2)
    ts = _slices(buf, np.where(has, q + 2 + p2, e), e)
    if not has.all():
        ts = pa.Array.from_buffers(pa.string(), len(ts), [pa.array(has).buffers()[1], *ts.buffers()[1:]],
                                   null_count=int(len(has) - has.sum()))
    heads = pc.dictionary_encode(_head_views(b, buf, s, q + 1 - s))
    heads = pa.DictionaryArray.from_arrays(heads.indices, heads.dictionary.cast(pa.string()))
    fast_no = d[f]
    rest = np.ones(n, dtype=bool)
    rest[fast_no] = False
    rest_no = np.flatnonzero(rest)
    lines = both.take(pa.array(2 * rest_no, pa.int64())) if len(rest_no) else pa.array([], pa.string())
    return lines, rest_no, _Fast(fast_no, heads, value, ts)


def _label(labels: pa.Array, names: tuple[str, ...], state: _State) -> pa.Array:
    """One label's values over ``labels`` (a small array: the distinct label blocks of a chunk)."""
    out: pa.Array | None = None
    for name in names:
        got = pc.struct_field(pc.extract_regex(labels, _label_regex(name)), "v")
        if pc.any(pc.is_valid(got)).as_py():
            state.label_names.add(name)
        out = got if out is None else pc.coalesce(out, got)
    assert out is not None
    if pc.any(pc.match_substring(out, "\\")).as_py():
        out = pc.replace_substring_regex(out, r"\\(.)", r"\1")
    sent = pc.fill_null(pc.and_(pc.starts_with(out, "<<<"), pc.ends_with(out, ">>>")), False)
    empty = pc.or_(pc.fill_null(pc.equal(out, ""), False), sent)
    return pc.if_else(empty, pa.scalar(None, pa.string()), out)


def _count(mask: pa.Array) -> int:
    return int(pc.sum(pc.cast(mask, pa.int64())).as_py() or 0)


def _mask(arr: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(arr, False).to_numpy(zero_copy_only=False), dtype=bool)


_NAME_OK = re.compile(r"^DCGM_FI_[A-Za-z0-9_]+$")


def _take(arr: pa.Array, idx: np.ndarray) -> pa.Array:
    return arr.take(pa.array(idx, pa.int64()))


def _extract(c: pa.Array) -> tuple[pa.Array, pa.Array, pa.Array, np.ndarray]:
    """(head, value, ts, ok) for candidate lines; ``head`` is ``name{labels}`` (or ``name``).

    Fast path (plain ``NAME{labels} value [ts]`` lines): two string splits, no regex. Anything
    else (quote prefixes, tabs, odd spacing) goes through the full ``_LINE`` regex. Heads repeat
    across scrapes, so the caller dictionary-encodes them and parses each distinct head once.
    """
    x = pc.ascii_rtrim_whitespace(c)
    fast = _mask(pc.starts_with(x, "DCGM_FI_"))
    sp = pc.split_pattern(x, " ", max_splits=1, reverse=True)
    fast &= np.asarray(pc.list_value_length(sp).to_numpy(zero_copy_only=False)) == 2
    f_idx = np.flatnonzero(fast)
    sp_f = _take(sp, f_idx) if len(f_idx) < len(c) else sp
    head = pc.list_element(sp_f, 0)
    last = pc.list_element(sp_f, 1)
    bad_f = _mask(pc.ends_with(head, " ")) | _mask(pc.match_substring(last, "\t"))
    has_ts = ~_mask(pc.ends_with(head, "}"))
    if has_ts.any():
        h_idx = np.flatnonzero(has_ts)
        has_ts[h_idx[~_mask(pc.match_substring(_take(head, h_idx), " "))]] = False
    value, ts = last, pa.nulls(len(f_idx), pa.string())
    if has_ts.any():
        t_idx = np.flatnonzero(has_ts)
        sp2 = pc.split_pattern(_take(head, t_idx), " ", max_splits=1, reverse=True)
        two = np.asarray(pc.list_value_length(sp2).to_numpy(zero_copy_only=False)) == 2
        bad_f[t_idx[~two]] = True
        sp2 = pc.if_else(pa.array(two), sp2, pa.scalar(["", ""], sp2.type))
        mask = pa.array(has_ts)
        head = pc.replace_with_mask(head, mask, pc.list_element(sp2, 0))
        value = pc.replace_with_mask(last, mask, pc.list_element(sp2, 1))
        ts = pc.replace_with_mask(ts, mask, _take(last, t_idx))
        bad_f |= ~_mask(pc.match_substring_regex(pc.fill_null(ts, ""), r"^(-?[0-9]+)?$"))
        bad_f |= _mask(pc.ends_with(head, " "))
    ok = fast.copy()
    ok[f_idx[bad_f]] = False
    if bad_f.any():
        keep_f = pa.array(~bad_f)
        head, value, ts = (pc.filter(a, keep_f) for a in (head, value, ts))
    slow_idx = np.flatnonzero(~ok)
    if not len(slow_idx):
        return head, value, ts, ok
    parts = pc.extract_regex(_take(c, slow_idx), _LINE)
    s_ok = _mask(pc.is_valid(parts))
    good_f = np.flatnonzero(ok)
    ok[slow_idx[s_ok]] = True
    parts = parts.filter(pa.array(s_ok))
    labels = pc.struct_field(parts, "labels")
    s_head = pc.if_else(pc.equal(labels, ""), pc.struct_field(parts, "name"),
                        pc.binary_join_element_wise(pc.struct_field(parts, "name"), labels, "}", "{"))
    s_head = pc.binary_join_element_wise(s_head, "", "")  # plain string
    s_ts = pc.struct_field(parts, "ts")
    s_ts = pc.if_else(pc.equal(s_ts, ""), pa.scalar(None, pa.string()), s_ts)
    perm = np.argsort(np.concatenate([good_f, slow_idx[s_ok]]), kind="stable")
    out = [pa.concat_arrays([f.cast(pa.string()), s.cast(pa.string())]).take(pa.array(perm))
           for f, s in ((head, s_head), (value, pc.struct_field(parts, "value")), (ts, s_ts))]
    return out[0], out[1], out[2], ok


def _parse_heads(heads: pa.Array, state: _State) -> dict[str, Any]:
    """Split each distinct ``name{labels}`` head: name, field ID, label columns, validity."""
    brace = np.asarray(pc.find_substring(heads, "{").to_numpy(zero_copy_only=False)) >= 0
    sp = pc.split_pattern(heads, "{", max_splits=1)
    name = pc.list_element(sp, 0)
    sp = pc.if_else(pa.array(brace), sp, pa.scalar(["", "}"], sp.type))  # label-less: empty block
    labels = pc.utf8_slice_codeunits(pc.list_element(sp, 1), 0, -1)
    names = name.to_pylist()
    valid = np.array([bool(_NAME_OK.match(n or "")) for n in names], dtype=bool)
    valid &= ~brace | _mask(pc.ends_with(heads, "}"))
    fid = np.array([F.BY_NAME.get(n, -1) for n in names], dtype="int32")
    blocks = pc.dictionary_encode(labels)  # one label block per GPU, repeated for every field
    bidx = blocks.indices
    lcols = {col: _label(blocks.dictionary, lab_names, state).take(bidx) for col, lab_names in LABELS.items()}
    sentinels = np.asarray(pc.count_substring(blocks.dictionary, "<<<").to_numpy(zero_copy_only=False),
                           dtype="int64")[np.asarray(bidx, dtype="int64")]
    return {"name": name, "fid": fid, "valid": valid, "labels": lcols, "sentinels": sentinels}


def _heads_cached(heads: pa.Array, state: _State) -> dict[str, Any]:
    """:func:`_parse_heads` of a chunk's distinct heads; each head is parsed once per file (later
    chunks repeat the first chunk's heads) and its columns taken from ``state.heads``."""
    keys = heads.to_pylist()
    if not keys:
        return _parse_heads(heads, state)
    ids = state.head_ids
    new = [k for k in dict.fromkeys(keys) if k not in ids]
    if new:
        h = _parse_heads(pa.array(new, pa.string()), state)
        for k in new:
            ids[k] = len(ids)
        old = state.heads
        if not old:
            state.heads = h
        else:
            state.heads = {
                "name": pa.concat_arrays([old["name"], h["name"]]),
                "fid": np.concatenate([old["fid"], h["fid"]]),
                "valid": np.concatenate([old["valid"], h["valid"]]),
                "labels": {c: pa.concat_arrays([old["labels"][c], h["labels"][c]]) for c in LABELS},
                "sentinels": np.concatenate([old["sentinels"], h["sentinels"]]),
            }
    idx = np.fromiter((ids[k] for k in keys), dtype=np.int64, count=len(keys))
    c = state.heads
    take = pa.array(idx, pa.int64())
    return {"name": c["name"].take(take), "fid": c["fid"][idx], "valid": c["valid"][idx],
            "labels": {col: arr.take(take) for col, arr in c["labels"].items()}, "sentinels": c["sentinels"][idx]}


_INT64 = (-(2**63) + 1, 2**63 - 1)  # int64 min is NaT as a datetime64


def _bad_timestamps(ts_s: pa.Array) -> np.ndarray:
    """True where an explicit (integer-millisecond) timestamp does not fit int64 (or is its NaT value)."""
    bad = np.zeros(len(ts_s), dtype=bool)
    try:
        ok = pc.all(pc.greater(pc.cast(ts_s, pa.int64()), _INT64[0] - 1)).as_py() is not False
    except (pa.ArrowInvalid, OverflowError):
        ok = False
    if not ok:
        long_idx = np.flatnonzero(_mask(pc.greater(pc.utf8_length(ts_s), 18)))
        for i in long_idx:  # only 19+ digit strings can overflow: few
            v = int(ts_s[int(i)].as_py())
            bad[i] = not _INT64[0] <= v <= _INT64[1]
    return bad


def _off_scale(ts_s: pa.Array, overflow: np.ndarray) -> np.ndarray:
    """True where an explicit timestamp (fitting int64) is an epoch time between EPOCH_YEARS in no
    scale: ms as the exposition format says, or s/us/ns (docs/formulas.md#fleet-ingest)."""
    if ts_s.null_count == len(ts_s):
        return np.zeros(len(ts_s), dtype=bool)
    ok = pa.array(~overflow) if overflow.any() else None
    ts = pc.cast(ts_s.filter(ok) if ok is not None else ts_s, pa.int64())
    _ms, off, _counts = epoch_ms_array(pc.fill_null(ts, 1_700_000_000_000).to_numpy(zero_copy_only=False), "ms")
    out = np.zeros(len(ts_s), dtype=bool)
    out[np.flatnonzero(~overflow)] = off
    return out


def _to_ms(ts: pa.Array, state: _State) -> pa.Array:
    """Explicit timestamps (checked by :func:`_off_scale`) in milliseconds: seconds, microseconds and
    nanoseconds rescaled (counted in ``state.rescaled``); nulls (no timestamp) kept."""
    if ts.null_count == len(ts):
        return ts
    raw = pc.fill_null(ts, 1_700_000_000_000).to_numpy(zero_copy_only=False)
    ms, _off, counts = epoch_ms_array(raw, "ms")
    if not counts:
        return ts
    for k, n in counts.items():
        state.rescaled[k] = state.rescaled.get(k, 0) + n
    return pa.array(ms, pa.int64(), mask=np.asarray(pc.is_null(ts)))


def _candidates(lines: pa.Array, state: _State) -> np.ndarray:
    """Indices of the lines that look like DCGM samples (counts other metric lines in ``state``)."""
    # cheap prefix tests first; regexes only run on the few lines that need them
    hashed = _mask(pc.starts_with(lines, "#"))
    dcgm = _mask(pc.starts_with(lines, "DCGM_FI_"))
    odd = np.flatnonzero(~hashed & ~dcgm)  # quoted, indented or noise lines
    if len(odd):
        odd_lines = _take(lines, odd)
        sub = _mask(pc.match_substring(odd_lines, "DCGM_FI_"))
        cand = sub & _mask(pc.match_substring_regex(odd_lines, _CANDIDATE))
        dcgm[odd[cand]] = True
        # any other well-formed metric line (go_*, process_*, DCGM_EXP_*): counted, not a sample
        state.other += int(_mask(pc.match_substring_regex(_take(odd_lines, np.flatnonzero(~cand)), _OTHER)).sum())
    return np.flatnonzero(dcgm)


def _merge(fast: _Fast | None, slow_no: np.ndarray, slow: tuple[pa.Array, pa.Array, pa.Array, np.ndarray]
           ) -> tuple[np.ndarray, np.ndarray, pa.Array, pa.Array, pa.Array, pa.Array]:
    """Fast and general-path candidates in line order: (line index, ok, head index, heads, value, ts)."""
    head_s, value_s, ts_s, ok = slow
    dh = pc.dictionary_encode(head_s)
    if fast is None or not len(fast.no):
        return slow_no, ok, np.asarray(dh.indices, dtype="int64"), dh.dictionary, value_s, ts_s
    f_idx = np.asarray(fast.heads.indices, dtype="int64")
    if not len(slow_no):
        return fast.no, np.ones(len(fast.no), bool), f_idx, fast.heads.dictionary, fast.value, fast.ts
    both = pc.dictionary_encode(pa.concat_arrays([fast.heads.dictionary, dh.dictionary.cast(pa.string())]))
    remap = np.asarray(both.indices, dtype="int64")
    s_idx = remap[len(fast.heads.dictionary) + np.asarray(dh.indices, dtype="int64")]
    no = np.concatenate([fast.no, slow_no])
    order = np.argsort(no, kind="stable")
    ok_all = np.concatenate([np.ones(len(fast.no), bool), ok])[order]
    good = np.concatenate([np.ones(len(fast.no), bool), ok])
    rows = np.argsort(no[good], kind="stable")
    perm = pa.array(rows, pa.int64())
    hidx = np.concatenate([remap[f_idx], s_idx])[rows]
    value = pa.concat_arrays([fast.value, value_s.cast(pa.string())]).take(perm)
    ts = pa.concat_arrays([fast.ts, ts_s.cast(pa.string())]).take(perm)
    return no[order], ok_all, hidx, both.dictionary, value, ts


def _parse_chunk(data: pa.Array | bytes | memoryview, offset: int, state: _State, path: str,
                 rejected: list[Rejected]) -> tuple[pa.Table | None, int]:
    """(samples of one chunk, its number of lines); columns: ts_ms, scrape, field_id, field,
    value, missing and the label columns."""
    if isinstance(data, (bytes, memoryview)):
        lines, rest_no, fast = _lines(data)
        n_lines = len(lines) + (len(fast.no) if fast is not None else 0)
    else:
        lines, rest_no, fast = data, np.arange(len(data)), None
        n_lines = len(lines)
    if len(lines):
        d_idx = _candidates(lines, state)
        c_lines = _take(lines, d_idx) if len(d_idx) < len(lines) else lines
        slow_no = rest_no[d_idx]
        slow = _extract(c_lines) if len(d_idx) else (
            pa.array([], pa.string()), pa.array([], pa.string()), pa.array([], pa.string()), np.zeros(0, bool))
    else:
        slow_no = np.zeros(0, dtype="int64")
        slow = (pa.array([], pa.string()), pa.array([], pa.string()), pa.array([], pa.string()), np.zeros(0, bool))
    c_idx, ok, hidx, heads, value_s, ts_s = _merge(fast, slow_no, slow)
    if not len(c_idx):
        return None, n_lines
    c_no = c_idx + offset + 1
    h = _heads_cached(heads, state)
    ok_rows = np.flatnonzero(ok)
    bad_head = ~h["valid"][hidx]
    ok[ok_rows[bad_head]] = False
    for n in c_no[~ok]:
        rejected.append(Rejected(path, int(n), "DCGM metric line does not parse as 'name{labels} value [ts]'"))
    if not ok.any():
        return None, n_lines
    nos = c_no[ok]
    if bad_head.any():
        keep_h = pa.array(~bad_head)
        hidx = hidx[~bad_head]
        value_s, ts_s = pc.filter(value_s, keep_h), pc.filter(ts_s, keep_h)
    fid = h["fid"][hidx]
    unknown = fid < 0
    try:
        value_all = pc.cast(value_s, pa.float64())
        numeric = np.ones(len(fid), dtype=bool)
    except pa.ArrowInvalid:
        numeric = _mask(pc.match_substring_regex(value_s, _NUMBER))
        value_all = pc.cast(pc.if_else(pa.array(numeric), pc.replace_substring_regex(value_s, r"^\+", ""),
                                       pa.scalar("nan")), pa.float64())
    bad_ts = _bad_timestamps(ts_s)
    off_scale = _off_scale(ts_s, bad_ts)
    bad = unknown | ~numeric | bad_ts | off_scale
    if bad.any():
        names_l = np.asarray(h["name"].to_pylist(), dtype=object)[hidx]
        vals_l = np.asarray(value_s.to_numpy(zero_copy_only=False), dtype=object)
        for i in np.flatnonzero(bad):
            why = (f"unknown DCGM field {names_l[i]!r}" if unknown[i]
                   else f"value {str(vals_l[i])[:40]!r} is not a number" if not numeric[i]
                   else f"timestamp {str(ts_s[i].as_py())[:40]!r} ms is outside the 64-bit millisecond range"
                   if bad_ts[i] else f"timestamp {str(ts_s[i].as_py())[:40]!r} is not an epoch time between "
                   f"{EPOCH_YEARS[0]} and {EPOCH_YEARS[1]} in ms (nor s, us, ns) (docs/formulas.md#fleet-ingest)")
            rejected.append(Rejected(path, int(nos[i]), why))
    good = ~bad
    keep = pa.array(good)
    hidx_k = hidx[good]
    fid_k = fid[good]
    state.label_sentinels += int(h["sentinels"][hidx_k].sum())

    # scrape index from series repetition. A series is its field plus host/gpu/UUID/GPU-instance
    # values, so label drift between scrapes (Hostname -> hostname, pod churn) still repeats.
    lab = h["labels"]
    ident_rows = list(zip(*(lab[c].to_pylist() for c in ("host", "gpu", "uuid", "mig")), strict=True))
    ident_id: dict[tuple[Any, ...], int] = {}
    head_ident = np.array([ident_id.setdefault(t, len(ident_id)) for t in ident_rows], dtype="int64")
    idents = list(ident_id)
    m = max(1, len(idents))
    # series per distinct head (few), then per row by the head index (no sort of the rows' keys)
    uniq, inv_h = np.unique(h["fid"].astype("int64") * m + head_ident, return_inverse=True)
    inv = inv_h.reshape(-1)[hidx_k].astype(np.int16 if len(uniq) < 2**15 else np.int64)
    order = np.argsort(inv, kind="stable")  # radix sort for int16
    per = np.bincount(inv, minlength=len(uniq))
    starts = np.cumsum(per) - per
    cum = np.empty(len(inv), dtype="int64")
    cum[order] = np.arange(len(inv)) - starts[inv[order]]
    skeys = [(int(u) // m, idents[int(u) % m]) for u in uniq]
    prior = np.array([state.counts.get(k, 0) for k in skeys], dtype="int64")
    occ = prior[inv] + cum if len(inv) else np.zeros(0, "int64")
    scrape = np.maximum.accumulate(np.maximum(occ, state.max_scrape)) if len(occ) else occ
    if len(occ):
        state.max_scrape = int(scrape[-1])
        for k, c in zip(skeys, per.tolist(), strict=True):
            if c:
                state.counts[k] = state.counts.get(k, 0) + int(c)

    v = np.asarray((value_all.filter(keep) if not good.all() else value_all).to_numpy(zero_copy_only=False),
                   dtype="float64")
    # the canonical factor of each head's field name (DCGM 4.6.1 SI names converted), per sample
    factor = np.array([F.canonical_factor(n or "") for n in h["name"].to_pylist()], dtype="float64")[hidx_k]
    sentinel = F.sentinel_mask(v)
    state.sentinels += int(sentinel.sum())
    missing = sentinel | ~np.isfinite(v)
    ts_f = ts_s.filter(keep) if not good.all() else ts_s
    ts = pc.cast(ts_f, pa.int64()) if ts_f.null_count < len(ts_f) else pa.nulls(len(v), pa.int64())
    ts = _to_ms(ts, state)
    h_arr = pa.array(hidx_k, pa.int64())
    cols: dict[str, pa.Array] = {
        "ts_ms": ts,
        "scrape": pa.array(scrape, pa.int64()),
        "field_id": pa.array(fid_k, pa.int32()),
        "field": pa.DictionaryArray.from_arrays(h_arr, h["name"]),
        "value": pa.array(v * factor, pa.float64()),
        "missing": pa.array(missing),
    }
    for col, arr in lab.items():  # dictionary-encoded: one value per distinct head
        cols[col] = pa.DictionaryArray.from_arrays(h_arr, arr)
    return pa.table(cols), n_lines


def _stamp(ts_ms: pa.Array, scrape: np.ndarray, start_ms: int, interval_ms: int) -> pa.Array:
    explicit = np.asarray(pc.fill_null(ts_ms, 0).to_numpy(zero_copy_only=False), dtype="int64")
    has = np.asarray(pc.is_valid(ts_ms))
    out = np.where(has, explicit, start_ms + scrape * interval_ms)
    return pa.array(out.astype("datetime64[ms]"), pa.timestamp("ms")).cast(pa.timestamp("ms", tz="UTC"))


def assemble(parts: pa.Table, start_ms: int, interval_ms: int) -> pa.Table:
    """Stamp times and order columns as ``SAMPLE_SCHEMA`` (rows already filtered to records)."""
    scrape = np.asarray(parts["scrape"].to_numpy(), dtype="int64")
    cols = {
        "timestamp": _stamp(parts["ts_ms"].combine_chunks(), scrape, start_ms, interval_ms),
        **{c: parts[c] for c in SAMPLE_SCHEMA.names if c != "timestamp"},
    }
    return pa.table(cols).cast(SAMPLE_SCHEMA)


def default_start_ms(src: Source, opts: ParseOptions, n_steps: int, interval_s: float) -> int:
    """``opts.start`` or the file's mtime minus ``n_steps * interval``, in epoch milliseconds."""
    if opts.start is not None:
        st = opts.start if opts.start.tzinfo else opts.start.replace(tzinfo=timezone.utc)
        return round(st.timestamp() * 1000)
    mtime = os.stat(src.path).st_mtime
    return round((mtime - n_steps * interval_s) * 1000)


class _Held:
    """Record parts waiting for the scrape count (their times depend on it): in a list, or spilled
    to a temporary Arrow IPC stream (lz4) so that holding them costs disk, not memory."""

    def __init__(self, spill: bool) -> None:
        self.spill = spill
        self.rows = 0
        self._tables: list[pa.Table] = []
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._writer: pa.ipc.RecordBatchStreamWriter | None = None
        self._schema: pa.Schema | None = None

    def add(self, part: pa.Table) -> None:
        self.rows += part.num_rows
        if not self.spill:
            self._tables.append(part)
            return
        if self._writer is None:
            self._dir = tempfile.TemporaryDirectory(prefix="rooftop-prom-")
            self._schema = part.schema
            self._writer = pa.ipc.new_stream(os.path.join(self._dir.name, "held.arrows"), part.schema,
                                             options=pa.ipc.IpcWriteOptions(compression="lz4"))
        assert self._schema is not None
        self._writer.write_table(part if part.schema.equals(self._schema) else part.cast(self._schema))

    def drain(self) -> Iterator[pa.Table]:
        if not self.spill:
            tables, self._tables = self._tables, []
            tables.reverse()
            while tables:  # each part released once handed out
                yield tables.pop()
            return
        if self._writer is None or self._dir is None:
            return
        self._writer.close()
        with pa.ipc.open_stream(os.path.join(self._dir.name, "held.arrows")) as reader:
            for batch in reader:
                yield pa.Table.from_batches([batch])

    def close(self) -> None:
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
        if self._dir is not None:
            self._dir.cleanup()
        self._tables.clear()


def _coalesce(parts: Iterator[pa.Table], rows: int) -> Iterator[pa.Table]:
    """Consecutive parts joined until they hold at least ``rows`` rows (the last may hold fewer)."""
    buf: list[pa.Table] = []
    n = 0
    for t in parts:
        buf.append(t)
        n += t.num_rows
        if n >= rows:
            yield pa.concat_tables(buf, promote_options="permissive")
            buf, n = [], 0
    if buf:
        yield pa.concat_tables(buf, promote_options="permissive")


def parse_batches(src: Source, opts: ParseOptions, *, spill: bool = True
                  ) -> Generator[pa.Table, None, ParseResult]:
    """Yield the samples in file order, ``SAMPLE_SCHEMA``, about :data:`BATCH_ROWS` rows per batch
    (several chunks joined); return the whole file's :class:`ParseResult` with empty ``samples``.

    Samples with explicit timestamps, or any when ``opts.start`` is given, go out as their chunks
    are parsed. Scrape-stamped samples without ``opts.start`` need the file's scrape count (the
    start is the mtime minus ``n_scrapes * interval``): from the first such chunk on, record parts
    are held (``spill``: in a temporary lz4 Arrow stream; else in memory) and stamped at the end.
    """
    state = _State()
    rejected: list[Rejected] = []
    default_interval = ParseOptions.__dataclass_fields__["interval_s"].default
    assumed = opts.interval_s == default_interval
    interval_s = DEFAULT_SCRAPE_INTERVAL_S if assumed else float(opts.interval_s)
    interval_ms = round(interval_s * 1000)
    given = default_start_ms(src, opts, 0, interval_s) if opts.start is not None else None
    held = _Held(spill)
    records = missing = 0
    explicit_all = True
    any_parts = False
    ready: list[pa.Table] = []  # record parts whose times are known, not yet handed out
    ready_rows = 0
    try:
        offset = 0
        for data in _chunks(src):
            t, n_lines = _parse_chunk(data, offset, state, src.path, rejected)
            offset += n_lines
            if t is None or not t.num_rows:
                continue
            any_parts = True
            miss = np.asarray(t["missing"].to_numpy(), dtype=bool)
            n_miss = int(miss.sum())
            missing += n_miss
            records += len(miss) - n_miss
            explicit = t["ts_ms"].null_count == 0
            explicit_all &= explicit
            rec = t.filter(pa.array(~miss)) if n_miss else t
            if not rec.num_rows:
                continue
            if held.rows or not (explicit or given is not None):
                held.add(rec)
                continue
            ready.append(rec)
            ready_rows += rec.num_rows
            if ready_rows >= BATCH_ROWS:
                yield assemble(pa.concat_tables(ready, promote_options="permissive"), given or 0, interval_ms)
                ready, ready_rows = [], 0
        if ready:
            yield assemble(pa.concat_tables(ready, promote_options="permissive"), given or 0, interval_ms)
            ready = []
        n_scrapes = state.max_scrape + 1
        start_ms = given if given is not None else default_start_ms(src, opts, n_scrapes, interval_s)
        for part in _coalesce(held.drain(), BATCH_ROWS):
            yield assemble(part, start_ms, interval_ms)
    finally:
        held.close()
    acc = InputAccounting(src.path, FORMAT, records=records, missing=missing, rejected=len(rejected))
    meta: dict[str, Any] = {
        "other_metric_lines": state.other,
        "scrapes": n_scrapes,
        "interval_s": interval_s,
        "interval_assumed": assumed,
        "sentinels": state.sentinels,
        "label_sentinels": state.label_sentinels,
        "label_names": sorted(state.label_names),
    }
    if state.rescaled:  # explicit timestamps in s/us/ns, not the format's ms: rescaled, said here
        meta["timestamps_rescaled_from"] = dict(sorted(state.rescaled.items()))
    if any_parts:
        meta["explicit_timestamps"] = bool(explicit_all)
        if explicit_all:
            meta["interval_assumed"] = False
        else:  # the time of scrape 0 (what a later ingest of the grown file reuses)
            meta["start"] = datetime.fromtimestamp(start_ms / 1000, tz=timezone.utc).isoformat()
    return ParseResult(accounting=acc, rejected=rejected, meta=meta)


def parse(src: Source, opts: ParseOptions) -> ParseResult:
    """The whole file at once: :func:`parse_batches` drained (held parts in memory) and joined."""
    return drain_batches(parse_batches(src, opts, spill=False))
