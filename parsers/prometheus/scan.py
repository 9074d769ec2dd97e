"""The byte scanner of the Prometheus text parser: the plain DCGM sample lines of one chunk.

``parsers/prometheus/text.py`` reads a file in chunks of whole lines. :func:`scan_chunk` finds, with numpy
over the chunk's bytes (no per-line Python), the lines that are exactly::

    DCGM_FI_<rest of head>} <value>[ <timestamp>][\\r]

i.e. a line that starts with ``DCGM_FI_`` and whose last ``}`` is followed by a single space, a value
without whitespace, optionally a single space and ASCII digits, and nothing else but one optional
``\\r`` (the ``}`` and the *tail* after it at most :data:`MAX_TAIL_BYTES` bytes, the ``\\r`` not
counted); the head is ``name{labels}``, everything up to and including that ``}``. These are
exactly the lines the general path (``prom_grammar.extract``) would split into the same head, value
and timestamp; every other line goes that general way. A chunk that is not valid UTF-8 has no fast
lines. Heads are copied out and dictionary-encoded (zero-copy ``string_view`` heads measured no
faster: bench/NOTES.md, "Prometheus text, fast path re-measured").

``tests/prom_scan_reference.py`` keeps a plain per-line reference implementation and
``tests/test_prom_scan.py`` checks, with hypothesis, that both agree (docs/formulas.md#inputs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

METRIC_PREFIX = "DCGM_FI_"  # a fast line starts with this
NEWLINE = 0x0A  # b"\n": lines end here
CARRIAGE_RETURN = 0x0D  # b"\r": one before the newline is dropped (CRLF files)
CLOSE_BRACE = 0x7D  # b"}": the head ends at the line's last one
SPACE = 0x20  # the one separator allowed in the tail
CONTROL_WS = (0x09, 0x0D)  # \t \n \v \f \r: whitespace other than space, never in a fast tail
MAX_TAIL_BYTES = 64  # "} value ts" (without "\r"); longer tails go the general way

@dataclass
class Fast:
    """Plain ``NAME{labels} value [ts]`` lines of a chunk, found by byte positions (no regex)."""

    no: np.ndarray  # 0-based line index within the chunk, ascending
    heads: pa.DictionaryArray  # ``name{labels}`` per line, dictionary-encoded
    value: pa.Array  # string
    ts: pa.Array  # string, null where the line has no timestamp


def bool_mask(arr: pa.Array) -> np.ndarray:
    """A boolean Arrow array as numpy, nulls as False."""
    return np.asarray(pc.fill_null(arr, False).to_numpy(zero_copy_only=False), dtype=bool)


def take(arr: pa.Array, idx: np.ndarray) -> pa.Array:
    return arr.take(pa.array(idx, pa.int64()))


def utf8(data: bytes) -> pa.Array:
    """One-element string array over ``data`` (validated in C; invalid bytes replaced only if any)."""
    try:
        return pa.array([data], pa.binary()).cast(pa.string())
    except pa.ArrowInvalid:
        return pa.array([data.decode("utf-8", "replace")], pa.string())


def interleaved(buf: pa.Buffer, start: np.ndarray, end: np.ndarray) -> pa.Array:
    """The byte ranges ``[start, end)`` of ``buf`` (ascending, non-overlapping) and the gaps between
    them as one zero-copy string array: range i is element 2i."""
    off = np.empty(2 * len(start), dtype=np.int32)
    off[0::2] = start
    off[1::2] = end
    return pa.Array.from_buffers(pa.string(), max(2 * len(start) - 1, 0), [None, pa.py_buffer(off), buf])


def slices(buf: pa.Buffer, start: np.ndarray, end: np.ndarray) -> pa.Array:
    """String array of the byte ranges ``[start, end)`` of ``buf`` (ascending, non-overlapping),
    copied out in C: the even elements of :func:`interleaved`."""
    n = len(start)
    if not n:
        return pa.array([], pa.string())
    return interleaved(buf, start, end).take(pa.array(np.arange(0, 2 * n, 2, dtype=np.int64)))


def encode_heads(buf: pa.Buffer, start: np.ndarray, end: np.ndarray) -> pa.DictionaryArray:
    """The heads ``[start, end)`` of ``buf``, dictionary-encoded (they repeat in every scrape)."""
    return pc.dictionary_encode(slices(buf, start, end))


def _line_bounds(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First byte and end (the newline's offset, or the chunk's end) of every line."""
    nl = np.flatnonzero(b == NEWLINE)
    starts = np.concatenate([np.zeros(1, np.int64), nl + 1])
    ends = np.concatenate([nl, np.array([len(b)], np.int64)])
    return starts, ends


def _valid_utf8(buf: pa.Buffer, n: int) -> bool:
    """One UTF-8 check over the chunk (zero copy); line slices of valid UTF-8 stay valid."""
    try:
        pa.Array.from_buffers(pa.string(), 1, [None, pa.py_buffer(np.array([0, n], np.int32)), buf]
                              ).validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _last_brace(b: np.ndarray, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Offset of the last ``}`` before each line end ``e``, and whether it lies in the line starting
    at ``s`` with a short enough tail after it."""
    cl = np.flatnonzero(b == CLOSE_BRACE)
    k = np.searchsorted(cl, e) - 1
    q = cl[np.maximum(k, 0)] if len(cl) else np.zeros(len(s), dtype=np.int64)
    return q, (k >= 0) & (q >= s) & (e - q <= MAX_TAIL_BYTES)


def _check_tails(buf: pa.Buffer, q: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each tail ``(q, e)`` (the bytes after the ``}`` at ``q``): is it `` value`` or
    `` value ts`` (single spaces, no other whitespace, ``ts`` ASCII digits)? Also the offset of
    its second space (its length when there is none) and whether it has one."""
    n = len(q)
    tails = slices(buf, q + 1, e)
    toff = np.frombuffer(tails.buffers()[1], dtype=np.int32)[: n + 1] if n else np.zeros(1, np.int32)
    data_buf = tails.buffers()[2] if n else None
    tail = np.frombuffer(data_buf, dtype=np.uint8)[: int(toff[-1])] if data_buf is not None else np.zeros(0, np.uint8)
    tlen = np.diff(toff)
    first = np.append(tail, np.uint8(0))[toff[:-1]]  # empty tails (line ends at "}") index the pad
    good = (tlen >= 2) & (first == SPACE)
    seg = np.repeat(np.arange(n), tlen)
    sp_pos = np.flatnonzero(tail == SPACE)
    nsp = np.bincount(seg[sp_pos], minlength=n)
    good &= (nsp == 1) | (nsp == 2)
    good[seg[np.flatnonzero((tail >= CONTROL_WS[0]) & (tail <= CONTROL_WS[1]))]] = False  # rare
    p2 = tlen.copy()  # offset of the second space in the tail
    two = np.flatnonzero(nsp == 2)
    if len(two):
        second = sp_pos[np.searchsorted(sp_pos, toff[two]) + 1] - toff[two]
        p2[two] = second
        good[two] &= (second > 1) & (second < tlen[two] - 1)
        good[two] &= bool_mask(pc.ascii_is_decimal(slices(buf, q[two] + 2 + second, e[two])))
    return good, p2.astype(np.int64), nsp == 2


def _with_nulls(ts: pa.Array, has: np.ndarray) -> pa.Array:
    """``ts`` with nulls where ``has`` is False (those elements are empty strings)."""
    if has.all():
        return ts
    return pa.Array.from_buffers(pa.string(), len(ts), [pa.array(has).buffers()[1], *ts.buffers()[1:]],
                                 null_count=int(len(has) - has.sum()))


def scan_chunk(data: bytes | memoryview) -> tuple[pa.Array, np.ndarray, Fast | None]:
    """(the chunk's other lines, their 0-based indices, its fast lines) of a UTF-8 chunk (see the
    module docstring); lines are split at ``\\n`` only (a chunk has no trailing newline)."""
    b = np.frombuffer(data, dtype=np.uint8)
    buf = pa.py_buffer(data)
    starts, ends = _line_bounds(b)
    if not _valid_utf8(buf, len(b)):
        lines = pc.split_pattern(utf8(bytes(data)), "\n").flatten()
        return lines, np.arange(len(lines)), None
    both = interleaved(buf, starts, ends)  # line i is string 2i, the newline after it 2i + 1
    d = np.flatnonzero(bool_mask(pc.starts_with(both, METRIC_PREFIX))[0::2])
    s = starts[d]
    e = ends[d] - (b[ends[d] - 1] == CARRIAGE_RETURN)  # DCGM_FI_ lines are non-empty
    q, ok = _last_brace(b, s, e)
    f = np.flatnonzero(ok)
    good, p2, has = _check_tails(buf, q[f], e[f])
    g = np.flatnonzero(good)
    f, p2, has = f[g], p2[g], has[g]
    s, q, e = s[f], q[f], e[f]
    value = slices(buf, q + 2, q + 1 + p2)
    ts = _with_nulls(slices(buf, np.where(has, q + 2 + p2, e), e), has)
    heads = encode_heads(buf, s, q + 1)
    fast_no = d[f]
    rest = np.ones(len(starts), dtype=bool)
    rest[fast_no] = False
    rest_no = np.flatnonzero(rest)
    lines = take(both, 2 * rest_no) if len(rest_no) else pa.array([], pa.string())
    return lines, rest_no, Fast(fast_no, heads, value, ts)
