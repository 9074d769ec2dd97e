"""Timeline inputs: content detection, transparent gzip, and the columnar events-table builder.

Formats (``docs/formulas.md#timelines``): ``nsys-sqlite`` (``nsys export --type sqlite``),
``nsys-rep`` (binary ``.nsys-rep``/``.qdrep``), ``kineto-json`` (PyTorch profiler / Kineto
Chrome trace, plain or gzip), ``nsys-stats-csv`` and ``nsys-stats-console`` (summary only).
"""

from __future__ import annotations

import gzip
import re
import zlib
from array import array
from collections.abc import Callable
from typing import IO

import numpy as np
import pandas as pd
import pyarrow as pa

from rooftop.errors import InputError
from rooftop.parsers.model import EVENT_COLUMNS
from rooftop.parsers.numbers import INT_NULL, int_column
from rooftop.parsers.source import Source

NSYS_SQLITE = "nsys-sqlite"
NSYS_REP = "nsys-rep"
KINETO_JSON = "kineto-json"
NSYS_STATS_CSV = "nsys-stats-csv"
NSYS_STATS_CONSOLE = "nsys-stats-console"
TRACE_FORMATS = (NSYS_SQLITE, NSYS_REP, KINETO_JSON, NSYS_STATS_CSV, NSYS_STATS_CONSOLE)

GZIP_MAGIC = b"\x1f\x8b"
SQLITE_MAGIC = b"SQLite format 3\x00"
_NSYS_REP_MARKS = (b"Tegra Profiler Report", b"QuadD", b"Nsight Systems")
_STATS_CSV = re.compile(r'^\ufeff?"?Time \(%\)"?,"?Total Time \(ns\)"?,"?(Instances|Count|Num Calls)"?,', re.M)
_STATS_CONSOLE = re.compile(r"Executing '(cuda_gpu_kern_sum|gpukernsum|cuda_api_sum|osrt_sum)'|"
                            r"^[ \t]*\*\* CUDA GPU Kernel Summary", re.M)
_CHROME = re.compile(r'"traceEvents"\s*:|^\s*\[\s*\{[^\n]{0,400}"ph"\s*:', re.S)


def head_text(src: Source, size: int = 64 * 1024) -> str:
    """The first ``size`` decoded characters, gunzipped when the file is gzip."""
    head = src.head_bytes
    if head.startswith(GZIP_MAGIC):
        try:
            head = zlib.decompressobj(wbits=31).decompress(head, size)
        except zlib.error:
            return ""
        return head.decode("utf-8", errors="replace").lstrip("\ufeff")
    return src.head_text(size)


def detect_trace(src: Source) -> str | None:
    """One of :data:`TRACE_FORMATS`, or ``None``: from the content, never the file name."""
    head = src.head_bytes
    if head.startswith(SQLITE_MAGIC):
        return NSYS_SQLITE  # the parser says so when it holds no Nsight Systems tables
    if src.is_binary and any(m in head[:512] for m in _NSYS_REP_MARKS):
        return NSYS_REP
    if not head.startswith(GZIP_MAGIC) and src.is_binary:
        return None
    text = head_text(src)
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith(("{", "[")) and _CHROME.search(stripped[:65536]):
        return KINETO_JSON
    if _STATS_CSV.search(text):
        return NSYS_STATS_CSV
    if _STATS_CONSOLE.search(text):
        return NSYS_STATS_CONSOLE
    return None


def _is(name: str) -> Callable[[Source], bool]:
    def sniff(src: Source) -> bool:
        return detect_trace(src) == name

    sniff.__name__ = f"is_{name.replace('-', '_')}"
    return sniff


def register_trace_formats() -> None:
    """Add the timeline formats to the registry (:mod:`parsers.formats`), sniffed before the others:
    the binary exports before the ncu report sniffer, the text ones before the JSON and CSV ones."""
    from rooftop.parsers.formats import Format, register

    first = "ncu-rep"
    register(Format(NSYS_SQLITE, "events", "rooftop.parsers.nsys.columns:parse", "nsys SQLite export",
                    binary=True, reads_file=True), _is(NSYS_SQLITE), before=first)
    register(Format(NSYS_REP, "events", "rooftop.parsers.nsys.rep:parse", "Nsight Systems report (.nsys-rep)",
                    binary=True, reads_file=True), _is(NSYS_REP), before=first)
    register(Format(KINETO_JSON, "events", "rooftop.parsers.kineto.reader:parse", "PyTorch profiler (Kineto) JSON"),
             _is(KINETO_JSON), before=first)
    register(Format(NSYS_STATS_CSV, "events", "rooftop.parsers.nsys.stats:parse_csv", "nsys stats CSV/console"),
             _is(NSYS_STATS_CSV), before=first)
    register(Format(NSYS_STATS_CONSOLE, "events", "rooftop.parsers.nsys.stats:parse_console",
                    "nsys stats CSV/console"), _is(NSYS_STATS_CONSOLE), before=first)


def open_stream(src: Source) -> IO[bytes]:
    """The file's bytes, gunzipped when it starts with the gzip magic (``.gz`` is transparent)."""
    raw = src.open_bytes()
    if src.head_bytes.startswith(GZIP_MAGIC):
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    return raw


def read_error(path: str, exc: BaseException, what: str) -> InputError:
    """A damaged input (truncated gzip or JSON, corrupt SQLite) as one line with the fix."""
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return InputError(path, f"{what} is damaged or truncated: {reason}",
                      "re-copy or re-export the file; it must be complete")




class EventBuilder:
    """Events collected column by column in compact arrays (8 bytes per integer, names interned),
    then one :data:`EVENT_COLUMNS` DataFrame: bounded by the events kept, not the input size."""

    INT_COLS = ("start_ns", "end_ns", "stream", "pid", "tid", "correlation", "bytes")
    STR_COLS = ("device", "kind", "name", "grid_dim", "block_dim")

    def __init__(self, input_path: str) -> None:
        self.input = input_path
        self.ints: dict[str, array[int]] = {c: array("q") for c in self.INT_COLS}
        self.codes: dict[str, array[int]] = {c: array("l") for c in self.STR_COLS}
        self.values: dict[str, dict[str | None, int]] = {c: {None: 0} for c in self.STR_COLS}

    def __len__(self) -> int:
        return len(self.ints["start_ns"])

    def _code(self, col: str, value: str | None) -> int:
        table = self.values[col]
        code = table.get(value)
        if code is None:
            code = table[value] = len(table)
        return code

    def add(self, kind: str, name: str | None, start: int, end: int, *, device: str | None = None,
            stream: int | None = None, pid: int | None = None, tid: int | None = None,
            correlation: int | None = None, grid_dim: str | None = None, block_dim: str | None = None,
            nbytes: int | None = None) -> None:
        ints, codes, code = self.ints, self.codes, self._code
        ints["start_ns"].append(start)
        ints["end_ns"].append(end)
        ints["stream"].append(INT_NULL if stream is None else stream)
        ints["pid"].append(INT_NULL if pid is None else pid)
        ints["tid"].append(INT_NULL if tid is None else tid)
        ints["correlation"].append(INT_NULL if correlation is None else correlation)
        ints["bytes"].append(INT_NULL if nbytes is None else nbytes)
        codes["device"].append(code("device", device))
        codes["kind"].append(code("kind", kind))
        codes["name"].append(code("name", name))
        codes["grid_dim"].append(code("grid_dim", grid_dim))
        codes["block_dim"].append(code("block_dim", block_dim))

    def add_host(self, kind: str, name: str | None, start: int, end: int, pid: int | None, tid: int | None,
                 correlation: int | None) -> None:
        """:meth:`add` of a host row (no device, stream, shapes or bytes), with fewer lookups."""
        ints, codes = self.ints, self.codes
        ints["start_ns"].append(start)
        ints["end_ns"].append(end)
        ints["stream"].append(INT_NULL)
        ints["pid"].append(INT_NULL if pid is None else pid)
        ints["tid"].append(INT_NULL if tid is None else tid)
        ints["correlation"].append(INT_NULL if correlation is None else correlation)
        ints["bytes"].append(INT_NULL)
        codes["device"].append(0)  # code 0 is None in every column
        codes["kind"].append(self._code("kind", kind))
        codes["name"].append(self._code("name", name))
        codes["grid_dim"].append(0)
        codes["block_dim"].append(0)

    def frame(self) -> pd.DataFrame:
        n = len(self)
        data: dict[str, object] = {"input": string_column([self.input], np.zeros(n, np.int64))}
        for col in self.STR_COLS:
            codes = np.frombuffer(self.codes[col], dtype=np.dtype("l")) if n else np.zeros(0, np.int64)
            data[col] = string_column(list(self.values[col]), codes)
        for col in self.INT_COLS:
            vals = np.frombuffer(self.ints[col], dtype=np.int64) if n else np.zeros(0, np.int64)
            data[col] = int_column(vals, EVENT_COLUMNS[col])
        return pd.DataFrame(data)[list(EVENT_COLUMNS)]


def string_column(values: list[str | None], codes: np.ndarray) -> pd.api.extensions.ExtensionArray:
    """A ``string`` column from distinct values and one code per row, decoded by Arrow (a dictionary
    array cast to strings: ~2.5x faster than building it from a Python object array, the same column)."""
    dictionary = pa.DictionaryArray.from_arrays(pa.array(codes, pa.int64()), pa.array(values, pa.large_string()))
    return pd.arrays.ArrowStringArray(dictionary.cast(pa.large_string()))


_DIMS: dict[tuple[object, ...], str | None] = {}


def dims(v: object) -> str | None:
    """``[x, y, z]`` (Kineto) or three numbers as ncu prints launch shapes: ``"(x, y, z)"``
    (formatted once per distinct shape)."""
    if not isinstance(v, (list, tuple)) or len(v) != 3:
        return None
    key = (type(v[0]), v[0], type(v[1]), v[1], type(v[2]), v[2])
    try:
        return _DIMS[key]
    except (KeyError, TypeError):
        pass
    out = f"({v[0]}, {v[1]}, {v[2]})" if all(isinstance(x, int) for x in v) else None
    try:
        if len(_DIMS) < 65536:
            _DIMS[key] = out
    except TypeError:  # an unhashable part
        pass
    return out
