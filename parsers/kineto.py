"""PyTorch profiler / Kineto Chrome-trace JSON (plain or gzip; 2021 and newer layouts; NVIDIA and
AMD) to the events table, streamed in bounded memory.

Streaming: ``ijson`` (C backend) yields one event dict at a time, numbers as ``int`` or exact
``Decimal``, so ``ts``/``dur`` (µs, up to 16 significant digits) become integer ns exactly by
``round_half_even(value * 1000)`` (``docs/formulas.md#timelines``; the corpus METHOD.md §2). Without
ijson the file is loaded whole with ``json`` and ``parse_float=Decimal`` (same numbers, not bounded).
"""

from __future__ import annotations

import json
import zlib
from collections import Counter
from collections.abc import Iterator
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

from rooftop.parsers.model import InputAccounting, ParseResult, Rejected
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


def _int(v: Any) -> int | None:
    if type(v) is int:
        return v
    if isinstance(v, str):
        digits = v.rsplit(" ", 1)[-1]  # 2021 layout: tid "stream 7"
        return int(digits) if digits.lstrip("-").isdigit() else None
    if isinstance(v, Decimal) and v == v.to_integral_value():
        return int(v)
    return None


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
            for key, value in ijson.kvitems(_until_events(fh), ""):
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
        data = self.fh.read(65536 if n is None or n < 0 else n)
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
            yield from ijson.items(fh, _prefix(src))
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
    / ``ProfilerStep#N`` ranges. Events of other categories are counted in ``meta`` (not read).
    An event of a read kind without a usable ``ts`` is rejected, with its position."""
    del opts
    header = _header(src)
    b = EventBuilder(src.path)
    rejected: list[Rejected] = []
    n_rej = 0
    skipped: Counter[str] = Counter()
    position = 0
    try:
        for position, e in enumerate(_events(src), start=1):
            if not isinstance(e, dict):
                skipped["(not an object)"] += 1
                continue
            why = _add(b, e)
            if why is None:
                continue
            if why.startswith("skip:"):
                skipped[why[5:]] += 1
                continue
            n_rej += 1
            if len(rejected) < MAX_REJECTED_LISTED:
                rejected.append(Rejected(src.path, None, f"event {position}: {why}"))
    except _READ_ERRORS as exc:
        raise read_error(src.path, exc, f"Kineto JSON (after event {position})") from exc
    if "deviceProperties" not in header and len(b):
        header.update(_late_properties(src))
    meta: dict[str, Any] = {
        "timeline": True,
        "gpu_names": _gpu_names(header),
        "vendor": "AMD" if any(k.startswith(("roctracer", "hip_")) for k in header) else None,
        "skipped_by_category": dict(skipped),
        "events_in_file": position,
        "distributed": header.get("distributedInfo"),
    }
    acc = InputAccounting(src.path, KINETO_JSON, records=len(b), rejected=n_rej)
    return ParseResult(accounting=acc, events=b.frame(), rejected=rejected, meta=meta)


def _late_properties(src: Source) -> dict[str, Any]:
    """deviceProperties written after traceEvents: one more pass that keeps only that list."""
    if not HAVE_IJSON:
        return {}
    with open_stream(src) as fh:
        try:
            return {"deviceProperties": list(ijson.items(fh, "deviceProperties.item"))}
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
                                   else "range" if lcat in RANGE_CATS else None)
    _KIND_BY_CAT[cat] = kind
    return kind


def _add(b: EventBuilder, e: dict[str, Any]) -> str | None:
    """Add one event; ``None`` when added, ``"skip:<cat>"`` when not a kind read, else why rejected."""
    cat = e.get("cat")
    kind = _kind_of(cat)
    name = e.get("name")
    ph = e.get("ph")
    if kind is None:
        if not (ph == "X" and type(name) is str and name.startswith("ProfilerStep#")
                and cat != "gpu_user_annotation"):
            return f"skip:{cat if isinstance(cat, str) else ph}"
        kind = "range"
    if ph != "X":
        return f"skip:{cat}/{ph}"
    try:
        start = to_ns(e.get("ts"))
        dur = e.get("dur", 0)
        end = start + (to_ns(dur) if dur else 0)
    except ValueError as exc:
        return f"{cat} {name!r}: ts/dur {exc}"
    args = e.get("args")
    if not isinstance(args, dict):
        args = {}
    dev = stream = pid = tid = None
    if kind == "runtime" or kind == "range":  # host rows: pid/tid are the process and thread
        pid, tid = _int(e.get("pid")), _int(e.get("tid"))
    else:  # GPU rows: pid is the device, tid the stream
        d = args.get("device", e.get("pid"))
        di = _int(d)
        dev = str(di if di is not None else d)
        stream = _int(args.get("stream", e.get("tid")))
    b.add(kind, name if type(name) is str else str(name), start, end, device=dev, stream=stream,
          pid=pid, tid=tid, correlation=_int(args.get("correlation")),
          grid_dim=dims(args["grid"]) if "grid" in args else None,
          block_dim=dims(args["block"]) if "block" in args else None,
          nbytes=_int(args["bytes"]) if "bytes" in args else None)
    return None
