"""Nsight Systems SQLite export (``nsys export --type sqlite``), any 3.x schema, to the events table.

Tables and columns are probed from ``sqlite_master``/``PRAGMA table_info`` (a table exists only
when the capture had that data; missing = zero rows), never assumed by version. Read: kernel,
memcpy and memset activity, CUDA runtime/driver calls, CUPTI synchronisation records, NVTX
push/pop and start/end ranges; ``StringIds`` resolves names (in SQL), ``TARGET_INFO_GPU`` GPU names.
Rules: ``docs/formulas.md#timelines``.

This module probes the export and builds the queries (:func:`queries`, :func:`parse_with`); the
format's parser is :func:`rooftop.parsers.nsys.columns.parse`, which reads each table with one query
of only the columns it has, straight into NumPy and Arrow columns (no per-row Python objects beyond
what ``sqlite3`` returns); :mod:`rooftop.parsers.nsys.sqlite_ref` is the plain reference it is
tested against.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rooftop.errors import InputError
from rooftop.parsers.model import InputAccounting, ParseResult, Rejected
from rooftop.parsers.source import Source
from rooftop.parsers.trace_io import NSYS_SQLITE, read_error

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
NVTX = "NVTX_EVENTS"
NVTX_RANGES = (59, 60)  # ENUM_NSYS_EVENT_TYPE: NvtxPushPopRange, NvtxStartEndRange
VERSION_SUFFIX = re.compile(r"_v\d+$")
# the event columns a table row fills, in SELECT order; device is read as the integer deviceId
SQL_COLUMNS = ("start_ns", "end_ns", "device", "stream", "pid", "tid", "correlation", "name",
               "grid_dim", "block_dim", "bytes")
TEXT_COLUMNS = ("name", "grid_dim", "block_dim")
MAX_REJECTED_LISTED = 100  # per table; all are counted
MMAP_BYTES = 256 << 20  # at most this much of the export is memory-mapped for the integrity check


class Db:
    """The open export with its table and column lists."""

    def __init__(self, file: str, path: str) -> None:
        self.path = path
        uri = Path(file).resolve().as_uri() + "?mode=ro&immutable=1"
        self.con = sqlite3.connect(uri, uri=True)
        try:
            rows = self.con.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table','view')").fetchall()
        except sqlite3.DatabaseError as exc:
            self.con.close()
            raise read_error(path, exc, "SQLite file") from exc
        self.tables = {r[0] for r in rows}
        self.views = {r[0] for r in rows if r[1] == "view"}
        self._cols: dict[str, set[str]] = {}
        self.uri = uri
        self.arrow: Any = None  # an ADBC connection of the columnar reader, when it opened one

    def check(self) -> None:
        """:class:`InputError` unless the export can be read whole and as written: a table rooftop
        reads that is a view (nsys writes none; a view can be endless, e.g. a recursive one), or
        damage SQLite's ``PRAGMA quick_check`` finds (a corrupt page can otherwise read as fewer
        rows without any error: read short, silently)."""
        read = sorted(v for v in self.views if v in (NVTX, "StringIds")
                      or v.startswith(("CUPTI_", "META_DATA_", "TARGET_INFO_", "ENUM_")))
        if read:
            raise InputError(self.path, f"{read[0]} is a view, not a table: not an Nsight Systems export as "
                             "nsys writes it (a view can be endless)", "export the report again with "
                             "`nsys export --type sqlite`")
        # the check reads every page: mapped, SQLite reads them in place instead of copying each (-1 ms of
        # 6.6 on a 2.7 MB export, bench/NOTES.md); where the map cannot be made SQLite reads as before
        self.con.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        verdict = self.con.execute("PRAGMA quick_check(1)").fetchone()
        if not verdict or verdict[0] != "ok":
            raise InputError(self.path, f"SQLite file is damaged: {str(verdict[0] if verdict else '')[:200]} "
                             "(PRAGMA quick_check)", "re-copy or re-export the file; it must be complete")

    def close(self) -> None:
        self.con.close()
        if self.arrow is not None:
            self.arrow.close()

    def cols(self, table: str) -> set[str]:
        if table not in self._cols:
            self._cols[table] = {r[1] for r in self.con.execute(f'PRAGMA table_info("{table}")')}
        return self._cols[table]

    def name_expr(self, table: str, alias: str, candidates: tuple[str, ...]) -> str:
        """SQL for the first non-null of ``candidates`` (string ids or inline text)."""
        parts = []
        strings = "StringIds" in self.tables
        for c in (c for c in candidates if c in self.cols(table)):
            # scalar subqueries: COALESCE stops at the first hit (no join per column)
            if strings:
                parts.append(f"(SELECT value FROM StringIds WHERE id = {alias}.{c})")
            parts.append(f"CASE WHEN typeof({alias}.{c}) = 'text' THEN {alias}.{c} END")
        return _coalesce(parts)


@dataclass(frozen=True)
class Query:
    """One table's rows as events: an SQL expression per :data:`SQL_COLUMNS` entry (absent: "NULL"),
    the packed global process/thread id and the launch-shape columns as raw SQL, and the FROM clause
    (alias ``a``, joins, filter)."""

    kind: str
    table: str
    source: str
    exprs: dict[str, str] = field(default_factory=dict)
    gid: str = "NULL"  # globalPid / globalTid: pid = bits 24-47, tid = bits 0-23 (``has_tid``)
    has_tid: bool = False
    shapes: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # grid_dim/block_dim: x, y, z

    def expr(self, col: str) -> str:
        """The SQL of one event column (the reference reader selects these)."""
        if col in self.shapes:
            x, y, z = self.shapes[col]
            return f"'(' || {x} || ', ' || {y} || ', ' || {z} || ')'"
        if col in ("pid", "tid") and self.gid != "NULL" and (col == "pid" or self.has_tid):
            return f"({self.gid} >> 24) & 16777215" if col == "pid" else f"{self.gid} & 16777215"
        return self.exprs.get(col, "NULL")


def _coalesce(parts: list[str]) -> str:
    return "NULL" if not parts else parts[0] if len(parts) == 1 else f"COALESCE({', '.join(parts)})"


def _col(db: Db, table: str, name: str) -> str:
    return f"a.{name}" if name in db.cols(table) else "NULL"


def _shape(db: Db, table: str, prefix: str) -> dict[str, tuple[str, str, str]]:
    cols = [f"{prefix}{a}" for a in "XYZ"]
    if not set(cols) <= db.cols(table):
        return {}
    return {f"{prefix}_dim": (f"a.{cols[0]}", f"a.{cols[1]}", f"a.{cols[2]}")}


def _mem_kinds(db: Db, table: str, cols: tuple[str, ...]) -> tuple[str, str]:
    """SQL for `` (Pinned -> Device)`` / `` (Device)`` from the memory-kind columns (labels of
    ``ENUM_CUDA_MEM_KIND``, as Kineto writes them), ``''`` when the export has none; and its joins."""
    if "ENUM_CUDA_MEM_KIND" not in db.tables or not set(cols) <= db.cols(table):
        return "''", ""
    joins = "".join(f" LEFT JOIN ENUM_CUDA_MEM_KIND m{i} ON m{i}.id = a.{c}" for i, c in enumerate(cols))
    text = " || ' -> ' || ".join(f"m{i}.label" for i in range(len(cols)))
    return f"COALESCE(' (' || {text} || ')', '')", joins


def _activity(db: Db, table: str, kind: str) -> Query:
    e = {"start_ns": "a.start", "end_ns": "a.end", "device": _col(db, table, "deviceId"),
         "stream": _col(db, table, "streamId"), "correlation": _col(db, table, "correlationId")}
    joins, shapes = "", {}
    if kind == "kernel":
        e["name"] = db.name_expr(table, "a", ("demangledName", "shortName", "mangledName"))
        shapes = {**_shape(db, table, "grid"), **_shape(db, table, "block")}
    elif kind == "memcpy":
        enum = "ENUM_CUDA_MEMCPY_OPER" in db.tables and "copyKind" in db.cols(table)
        joins = "LEFT JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = a.copyKind" if enum else ""
        kinds, more = _mem_kinds(db, table, ("srcKind", "dstKind"))
        joins += more
        e["name"] = (f"COALESCE('[CUDA memcpy ' || e.label || {kinds} || ']', '[CUDA memcpy]')" if enum
                     else "'[CUDA memcpy]'")
        e["bytes"] = _col(db, table, "bytes")
    else:
        kinds, joins = _mem_kinds(db, table, ("memKind",))
        e["name"] = f"'[CUDA memset' || {kinds} || ']'"
        e["bytes"] = _col(db, table, "bytes")
    return Query(kind, table, f"FROM {table} a {joins}", e, _col(db, table, "globalPid"), shapes=shapes)


def _runtime(db: Db) -> Query:
    e = {"start_ns": "a.start", "end_ns": "a.end", "correlation": _col(db, RUNTIME, "correlationId"),
         "name": db.name_expr(RUNTIME, "a", ("nameId", "name"))}
    return Query("runtime", RUNTIME, f"FROM {RUNTIME} a", e, _col(db, RUNTIME, "globalTid"), has_tid=True)


def _sync(db: Db) -> Query:
    has_type = "syncType" in db.cols(SYNC)
    enum = "ENUM_CUPTI_SYNC_TYPE" in db.tables and has_type
    joins = "LEFT JOIN ENUM_CUPTI_SYNC_TYPE e ON e.id = a.syncType" if enum else ""
    name = ("COALESCE(e.label, 'sync type ' || a.syncType)" if enum
            else "'sync type ' || a.syncType" if has_type else "'sync'")
    e = {"start_ns": "a.start", "end_ns": "a.end", "device": _col(db, SYNC, "deviceId"),
         "stream": _col(db, SYNC, "streamId"), "correlation": _col(db, SYNC, "correlationId"),
         "name": name}
    return Query("sync", SYNC, f"FROM {SYNC} a {joins}", e, _col(db, SYNC, "globalPid"))


def _nvtx(db: Db) -> Query:
    cols = db.cols(NVTX)
    parts = ["a.text"] if "text" in cols else []
    joins = ""
    if "textId" in cols and "StringIds" in db.tables:
        joins = "LEFT JOIN StringIds s ON s.id = a.textId"
        parts.append("s.value")
    where = f"WHERE a.eventType IN {NVTX_RANGES}" if "eventType" in cols else ""
    e = {"start_ns": "a.start", "end_ns": "a.end", "name": _coalesce(parts)}
    return Query("range", NVTX, f"FROM {NVTX} a {joins} {where}", e, _col(db, NVTX, "globalTid"), has_tid=True)


def queries(db: Db) -> list[Query]:
    """One :class:`Query` for every table this file has, in a fixed order."""
    out = [_activity(db, t, k) for k, t in (("kernel", KERNEL), ("memcpy", MEMCPY), ("memset", MEMSET))
           if t in db.tables]
    out += [build(db) for t, build in ((RUNTIME, _runtime), (SYNC, _sync), (NVTX, _nvtx)) if t in db.tables]
    return out


def read_meta(db: Db) -> dict[str, Any]:
    meta: dict[str, Any] = {"timeline": True}
    for t in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if t in db.tables and {"name", "value"} <= db.cols(t):
            kv = dict(db.con.execute(f"SELECT name, value FROM {t}").fetchall())
            meta["schema"] = kv.get("EXPORT_SCHEMA_VERSION")
            meta["product"] = kv.get("EXPORT_PRODUCT_VERSION")
            break
    gpus: dict[str, str] = {}
    if "TARGET_INFO_GPU" in db.tables and "name" in db.cols("TARGET_INFO_GPU"):
        key = "cuDevice" if "cuDevice" in db.cols("TARGET_INFO_GPU") else "id"
        for dev, name in db.con.execute(f"SELECT {key}, name FROM TARGET_INFO_GPU").fetchall():
            if dev is not None:
                gpus.setdefault(str(dev), name)
    meta["gpu_names"] = gpus
    meta["tables_used"] = {t: ("present" if t in db.tables else "absent")
                           for t in (KERNEL, MEMCPY, MEMSET, RUNTIME, SYNC, NVTX)}
    return meta


# reads every query of an open export: (events, rejected listed, rejected per table)
Reader = Callable[[Db, list[Query]], tuple[pd.DataFrame, list[Rejected], dict[str, int]]]


def parse_with(src: Source, reader: Reader) -> ParseResult:
    """Open, check and read the export with ``reader``; the accounting and metadata around it."""
    if src.limit is not None:
        raise InputError(src.path, "an nsys SQLite export cannot be read in part", "pass the whole file")
    db = Db(str(src.file), src.path)
    try:
        if not any(t.startswith("CUPTI_ACTIVITY_KIND_") or t in ("META_DATA_EXPORT", "StringIds", NVTX)
                   for t in db.tables):
            raise InputError(src.path, "is a SQLite file without Nsight Systems tables "
                             "(no CUPTI_ACTIVITY_KIND_*, StringIds or META_DATA_EXPORT)",
                             "export the report with `nsys export --type sqlite report.nsys-rep`")
        db.check()
        meta = read_meta(db)
        events, rejected, by_table = reader(db, queries(db))
    except sqlite3.DatabaseError as exc:
        raise read_error(src.path, exc, "SQLite file") from exc
    finally:
        db.close()
    if by_table:
        meta["rejected_by_table"] = by_table
    acc = InputAccounting(src.path, NSYS_SQLITE, records=len(events), rejected=sum(by_table.values()))
    return ParseResult(accounting=acc, events=events, rejected=rejected, meta=meta)


def rejected_rows(path: str, table: str, bad: np.ndarray) -> list[Rejected]:
    """The first :data:`MAX_REJECTED_LISTED` rows without start or end (1-based row of the query)."""
    return [Rejected(path, None, f"{table} row {i + 1}: no start or end time")
            for i in np.flatnonzero(bad)[:MAX_REJECTED_LISTED].tolist()]

