"""PyTorch profiler / Kineto Chrome-trace JSON (plain or gzip; 2021 and newer layouts; NVIDIA and
AMD) to the events table, streamed in bounded memory.

Streaming: ``ijson`` (C backend) yields one event dict at a time, numbers as ``int`` or exact
``Decimal``, so ``ts``/``dur`` (µs, up to 16 significant digits) become integer ns exactly by
``round_half_even(value * 1000)`` (``docs/formulas.md#timelines``; the corpus METHOD.md §2). Without
ijson the file is loaded whole with ``json`` and ``parse_float=Decimal`` (same numbers, not bounded).
A document nesting deeper than :data:`parsers.json_depth.MAX_DEPTH` is refused before ijson sees it
(its memory grows with the square of the depth).
"""

from __future__ import annotations

import json
import zlib
from collections import Counter
from collections.abc import Iterator
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

from rooftop.parsers.json_depth import DepthGuard
from rooftop.parsers.kineto.ops import ARG_KEYS, COMM_KEYS, OpBuilder, canon, collective
from rooftop.parsers.kineto.whole import MISSING, decode_arg, read_whole
from rooftop.parsers.model import InputAccounting, ParseResult, Rejected
from rooftop.parsers.numbers import INT_NULL
from rooftop.parsers.source import ParseOptions, Source
from rooftop.parsers.trace_io import (
    KINETO_JSON,
    EventBuilder,
    dims,
    head_text,
    open_stream,
    read_error,
)

GPU_KINDS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "memcpy": "memcpy", "gpu_memset": "memset",
             "memset": "memset"}
RUNTIME_CATS = {"cuda_runtime", "runtime", "cuda_driver"}
SYNC_CATS = {"cuda_sync"}
RANGE_CATS = {"user_annotation"}
OP_CATS = {"cpu_op", "operator"}  # host ops (2021 layout: "Operator"), the op table
_THOUSAND = Decimal(1000)
MAX_REJECTED_LISTED = 100

try:  # optional: bounded memory for multi-GB traces (pyproject extra "trace")
    import ijson

    HAVE_IJSON = True
    _JSON_ERRORS: tuple[type[Exception], ...] = (ijson.JSONError, ValueError)
except ImportError:  # pragma: no cover - exercised only without the extra
    HAVE_IJSON = False
    _JSON_ERRORS = (ValueError,)
_READ_ERRORS: tuple[type[Exception], ...] = (*_JSON_ERRORS, EOFError, OSError, zlib.error)


def to_ns(v: Any) -> int:
    """µs (int or exact Decimal) -> integer ns, round half to even; ``ValueError`` otherwise."""
    if type(v) is int:
        return v * 1000
    if isinstance(v, Decimal):
        return int((v * _THOUSAND).to_integral_value(rounding=ROUND_HALF_EVEN))
    if isinstance(v, str):
        whole, dot, frac = v.partition(".")
        if dot and whole.lstrip("-").isdigit() and frac.isdigit() and len(frac) <= 3:
            ns = int(whole) * 1000 + int(frac.ljust(3, "0")) * (-1 if whole.startswith("-") else 1)
            return ns
        if not dot and v.lstrip("-").isdigit():
            return int(v) * 1000
        try:
            return to_ns(Decimal(v.strip()))
        except InvalidOperation as exc:
            raise ValueError(f"not a number: {v!r}") from exc
    if isinstance(v, float):  # only from a caller that already parsed floats
        return to_ns(Decimal(repr(v)))
    raise ValueError(f"not a number: {v!r}")


_I64 = 2**63  # ids and times are kept in 64-bit columns (-2**63 marks a missing value)


def _int(v: Any) -> int | None:
    """An integer id (``7``, ``"stream 7"``, ``7.0``); ``None`` when absent, not an integer or
    outside the 64-bit range the events table holds."""
    if type(v) is int:
        out: int | None = v
    elif isinstance(v, str):
        digits = v.rsplit(" ", 1)[-1]  # 2021 layout: tid "stream 7"
        out = int(digits) if digits.lstrip("-").isdigit() else None
    elif isinstance(v, Decimal) and v.is_finite() and v == v.to_integral_value():
        out = int(v)
    else:
        return None
    return out if out is not None and -_I64 < out < _I64 else None


def _prefix(src: Source) -> str:
    """``traceEvents.item`` for the object layout, ``item`` for a bare event list."""
    return "item" if head_text(src, 4096).lstrip("\ufeff \t\r\n").startswith("[") else "traceEvents.item"


def _header(src: Source) -> dict[str, Any]:
    """Top-level keys before ``traceEvents`` (deviceProperties, versions...), read from the stream
    head only; values after the events are not seen here (``_late_properties``)."""
    out: dict[str, Any] = {}
    if not HAVE_IJSON:
        return out
    with open_stream(src) as fh:
        try:
            for key, value in ijson.kvitems(_until_events(DepthGuard(fh, src.path)), ""):
                out[key] = value
        except _READ_ERRORS:
            pass  # the head ends at traceEvents by construction
    return out


class _until_events:
    """A byte stream that ends just before the ``"traceEvents"`` key (bounded: 64 MiB)."""

    LIMIT = 64 << 20

    def __init__(self, fh: Any) -> None:
        self.fh, self.done, self.seen = fh, False, 0
        self.tail = b""

    def read(self, n: int = -1) -> bytes:
        if self.done or n == 0:  # ijson sniffs bytes-vs-str with read(0)
            return b""
        data: bytes = self.fh.read(65536 if n is None or n < 0 else n)
        self.seen += len(data)
        buf = self.tail + data
        cut = buf.find(b'"traceEvents"')
        if cut >= 0 or not data or self.seen > self.LIMIT:
            self.done = True
            if cut < 0:
                return data  # no traceEvents key in reach: the parser stops at the cut
            # close the object where the events would start, so the head is valid JSON
            return buf[len(self.tail):cut] + b'"traceEvents": []}' if cut >= len(self.tail) else b""
        self.tail = buf[-16:]
        return data


def _events(src: Source) -> Iterator[dict[str, Any]]:
    with open_stream(src) as fh:
        if HAVE_IJSON:
            yield from ijson.items(DepthGuard(fh, src.path), _prefix(src))  # ijson: memory ~ depth²
            return
        doc = json.loads(fh.read(), parse_float=Decimal)  # pragma: no cover
        yield from (doc.get("traceEvents", []) if isinstance(doc, dict) else doc)  # pragma: no cover


def _gpu_names(header: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key in ("deviceProperties", "computeProperties"):
        for p in header.get(key) or []:
            if isinstance(p, dict) and "id" in p and isinstance(p.get("name"), str):
                out.setdefault(str(p["id"]), p["name"])
    return out


def parse(src: Source, opts: ParseOptions) -> ParseResult:
    """Kernels, copies, sets (GPU rows), runtime/driver calls, ``cuda_sync`` and ``user_annotation``
    / ``ProfilerStep#N`` ranges into the events table; ``cpu_op`` events with their arguments into the
    op table. Events of other categories are counted in ``meta`` (not read). An event of a read kind
    without a usable ``ts`` is rejected, with its position."""
    del opts
    header = _header(src)
    b = EventBuilder(src.path)
    ob = OpBuilder(src.path)
    rejected: list[Rejected] = []
    n_rej = 0
    skipped: Counter[str] = Counter()
    position = 0
    whole = read_whole(src)
    try:
        for position, e in enumerate(whole.events if whole else _events(src), start=1):
            if whole:
                cat, ph, name = e.cat, e.ph, e.name
            elif type(e) is dict:
                cat, ph, name = e.get("cat"), e.get("ph"), e.get("name")
            else:
                skipped["(not an object)"] += 1
                continue
            kind = _kind_of(cat)  # the category test first: most events are of kinds not read
            if kind == "op" and type(name) is str and name.startswith("ProfilerStep#"):
                kind = None  # a step (an "Operator" in the 2021 layout) is a range, not an op
            if kind is None and not (ph == "X" and type(name) is str and name.startswith("ProfilerStep#")
                                     and cat != "gpu_user_annotation"):
                skipped[cat if isinstance(cat, str) else f"{ph}"] += 1
                continue
            if ph != "X":
                skipped[f"{cat}/{ph}"] += 1
                continue
            if kind == "op":
                why = _add_struct_op(ob, cat, name, e) if whole else _add_dict_op(ob, cat, name, e)
            else:
                why = _add(b, kind or "range", cat, name, *(_struct_fields(e) if whole else _dict_fields(e)))
            if why is not None:
                n_rej += 1
                if len(rejected) < MAX_REJECTED_LISTED:
                    rejected.append(Rejected(src.path, None, f"event {position}: {why}"))
    except _READ_ERRORS as exc:
        raise read_error(src.path, exc, f"Kineto JSON (after event {position})") from exc
    if whole and "deviceProperties" not in header and len(b):
        header["deviceProperties"] = whole.device_properties
    elif "deviceProperties" not in header and len(b):
        header.update(_late_properties(src))
    meta: dict[str, Any] = {
        "timeline": True,
        "gpu_names": _gpu_names(header),
        "vendor": "AMD" if any(k.startswith(("roctracer", "hip_")) for k in header) else None,
        "skipped_by_category": dict(skipped),
        "events_in_file": position,
        "distributed": header.get("distributedInfo"),
    }
    acc = InputAccounting(src.path, KINETO_JSON, records=len(b) + len(ob), rejected=n_rej)
    return ParseResult(accounting=acc, events=b.frame(), ops=ob.frame(), rejected=rejected, meta=meta)


def _late_properties(src: Source) -> dict[str, Any]:
    """deviceProperties written after traceEvents: one more pass that keeps only that list."""
    if not HAVE_IJSON:
        return {}
    with open_stream(src) as fh:
        try:
            return {"deviceProperties": list(ijson.items(DepthGuard(fh, src.path), "deviceProperties.item"))}
        except _READ_ERRORS:
            return {}


_KIND_BY_CAT: dict[Any, str | None] = {}


def _kind_of(cat: Any) -> str | None:
    """The event kind a category is read as (cached per distinct spelling), else ``None``."""
    try:
        return _KIND_BY_CAT[cat]
    except KeyError:
        pass
    except TypeError:  # an unhashable cat
        return None
    lcat = cat.lower() if isinstance(cat, str) else ""
    kind = GPU_KINDS.get(lcat) or ("runtime" if lcat in RUNTIME_CATS else "sync" if lcat in SYNC_CATS
                                   else "range" if lcat in RANGE_CATS else "op" if lcat in OP_CATS else None)
    _KIND_BY_CAT[cat] = kind
    return kind


_Fields = tuple[Any, Any, Any, Any, Any, Any, Any, Any, Any, Any]  # ts dur pid tid + 6 args
_NO_ARGS = (MISSING, MISSING, None, None, None, None)


def _dict_fields(e: dict[str, Any]) -> _Fields:
    """ts, dur, pid, tid and args device, stream, correlation, grid, block, bytes of an event dict
    (``MISSING`` for an absent device or stream; a non-object ``args`` counts as empty)."""
    a = e.get("args")
    if not isinstance(a, dict):
        a = {}
    return (e.get("ts"), e.get("dur", 0), e.get("pid"), e.get("tid"), a.get("device", MISSING),
            a.get("stream", MISSING), a.get("correlation"), a.get("grid"), a.get("block"), a.get("bytes"))


def _struct_fields(e: Any) -> _Fields:
    """The same fields of a :mod:`rooftop.parsers.kineto.whole` event struct."""
    a = e.args
    args = _NO_ARGS if a is None else (a.device, a.stream, a.correlation, a.grid, a.block, a.bytes)
    return (e.ts, 0 if e.dur is MISSING else e.dur, e.pid, e.tid, *args)


def _op_span(cat: Any, name: Any, ts: Any, dur: Any) -> tuple[int, int] | str:
    """An op's (start, end) ns, or why it is rejected."""
    try:
        start = to_ns(ts)
        end = start + (to_ns(dur) if dur else 0)
    except (ValueError, OverflowError) as exc:
        return f"{cat} {name!r}: ts/dur {exc}"
    if not (-_I64 < start < _I64 and -_I64 < end < _I64):
        return f"{cat} {name!r}: ts/dur beyond the 64-bit ns range ({start}, {end})"
    return start, end


def _add_dict_op(ob: OpBuilder, cat: Any, name: Any, e: dict[str, Any]) -> str | None:
    """Add one ``cpu_op`` event dict (the streamed reader); ``None`` when added, else why not."""
    span = _op_span(cat, name, e.get("ts"), e.get("dur", 0))
    if isinstance(span, str):
        return span
    a = e.get("args")
    if not isinstance(a, dict):
        a = {}
    sig = (name if type(name) is str else str(name), canon(a.get(ARG_KEYS[0])), canon(a.get(ARG_KEYS[1])),
           canon(a.get(ARG_KEYS[2])), canon(a.get(ARG_KEYS[3])), collective(tuple(a.get(k) for k in COMM_KEYS)))
    code = ob.code(sig)
    ob.add(ob.new_code(sig, sig) if code is None else code, *span, _int(e.get("pid")), _int(e.get("tid")),
           _int(a.get("External id")))
    return None


def _add_struct_op(ob: OpBuilder, cat: Any, name: Any, e: Any) -> str | None:
    """Add one ``cpu_op`` struct (:mod:`rooftop.parsers.kineto.whole`): arguments keyed by their raw
    bytes, turned into text once per distinct signature."""
    ts, dur = e.ts, e.dur
    if type(ts) is int and type(dur) is int and -_I64 < ts * 1000 < _I64 and -_I64 < (ts + dur) * 1000 < _I64:
        start, end = ts * 1000, (ts + dur) * 1000  # integer µs: the common case, exact
    else:
        span = _op_span(cat, name, ts, 0 if dur is MISSING else dur)
        if isinstance(span, str):
            return span
        start, end = span
    a = e.args
    name = name if type(name) is str else str(name)
    if a is None:
        key: tuple[Any, ...] = (name,)
        ext = None
    else:
        d, t, s, c = a.input_dims, a.input_types, a.input_strides, a.concrete_inputs
        key = (name, d if d is None else bytes(d), t if t is None else bytes(t), s if s is None else bytes(s),
               c if c is None else bytes(c))
        if a.coll_name is not None:
            key += (collective((a.coll_name, a.coll_in, a.coll_out, a.coll_group, a.coll_dtype)),)
        ext = a.external_id
    code = ob.codes.get(key)
    if code is None:
        texts = [None if k is None else canon(decode_arg(k)) for k in key[1:5]] or [None] * 4
        code = ob.new_code(key, (name, texts[0], texts[1], texts[2], texts[3], key[5] if len(key) > 5 else None))
    pid, tid = e.pid, e.tid
    pid = pid if type(pid) is int else _int(pid)
    tid = tid if type(tid) is int else _int(tid)
    ext = ext if type(ext) is int else _int(ext)
    ob.rows.extend((start, end, INT_NULL if pid is None else pid, INT_NULL if tid is None else tid,
                    INT_NULL if ext is None else ext, code))  # OpBuilder.add, inlined: the hot path
    return None


def _add(b: EventBuilder, kind: str, cat: Any, name: Any, ts: Any, dur: Any, pid: Any, tid: Any,
         device: Any, stream: Any, corr: Any, grid: Any, block: Any, nbytes: Any) -> str | None:
    """Add one complete event of ``kind``; ``None`` when added, else why it is rejected."""
    try:
        start = to_ns(ts)
        end = start + (to_ns(dur) if dur else 0)
    except (ValueError, OverflowError) as exc:  # OverflowError: an infinite value
        return f"{cat} {name!r}: ts/dur {exc}"
    if not (-_I64 < start < _I64 and -_I64 < end < _I64):
        return f"{cat} {name!r}: ts/dur beyond the 64-bit ns range ({start}, {end})"
    name = name if type(name) is str else str(name)
    corr = corr if type(corr) is int else _int(corr)
    grid = None if grid is None else dims(grid)
    block = None if block is None else dims(block)
    nbytes = None if nbytes is None else _int(nbytes)
    if kind == "runtime" or kind == "range":  # host rows: pid/tid are the process and thread
        if grid is None and block is None and nbytes is None:
            b.add_host(kind, name, start, end, _int(pid), _int(tid), corr)
        else:  # a launch call with its kernel's shape (HIP)
            b.add(kind, name, start, end, pid=_int(pid), tid=_int(tid), correlation=corr,
                  grid_dim=grid, block_dim=block, nbytes=nbytes)
        return None
    d = pid if device is MISSING else device  # GPU rows: pid is the device, tid the stream
    di = d if type(d) is int else _int(d)
    b.add(kind, name, start, end, device=str(di if di is not None else d),
          stream=_int(tid if stream is MISSING else stream), correlation=corr, grid_dim=grid, block_dim=block,
          nbytes=nbytes)
    return None
