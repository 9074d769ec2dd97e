"""Nsight Systems SQLite export (``nsys export --type sqlite``), any 3.x schema, to the events table.

Tables and columns are probed from ``sqlite_master``/``PRAGMA table_info`` (a table exists only
when the capture had that data; missing = zero rows), never assumed by version. Read: kernel,
memcpy and memset activity, CUDA runtime/driver calls, CUPTI synchronisation records, NVTX
push/pop and start/end ranges; ``StringIds`` resolves names, ``TARGET_INFO_GPU`` GPU names.
Rules: ``docs/formulas.md#timelines``.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rooftop.parsers.model import (
    EVENT_COLUMNS,
    InputAccounting,
    InputError,
    ParseResult,
    Rejected,
)
from rooftop.parsers.source import ParseOptions, Source
from rooftop.parsers.trace_io import NSYS_SQLITE, read_error

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
NVTX = "NVTX_EVENTS"
NVTX_RANGES = (59, 60)  # ENUM_NSYS_EVENT_TYPE: NvtxPushPopRange, NvtxStartEndRange
_VERSION_SUFFIX = re.compile(r"_v\d+$")


class _Db:
    """The open export with its table and column lists."""

    def __init__(self, file: str, path: str) -> None:
        self.path = path
        uri = Path(file).resolve().as_uri() + "?mode=ro&immutable=1"
        self.con = sqlite3.connect(uri, uri=True)
        try:
            rows = self.con.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')").fetchall()
        except sqlite3.DatabaseError as exc:
            self.con.close()
            raise read_error(path, exc, "SQLite file") from exc
        self.tables = {r[0] for r in rows}
        self._cols: dict[str, set[str]] = {}

    def cols(self, table: str) -> set[str]:
        if table not in self._cols:
            self._cols[table] = {r[1] for r in self.con.execute(f'PRAGMA table_info("{table}")')}
        return self._cols[table]

    def frame(self, sql: str) -> pd.DataFrame:
        cur = self.con.execute(sql)
        names = [d[0] for d in cur.description]
        return pd.DataFrame.from_records(cur.fetchall(), columns=names)

    def name_expr(self, table: str, alias: str, candidates: tuple[str, ...]) -> tuple[str, str]:
        """SQL for the first non-null of ``candidates`` (string ids or inline text) and its joins."""
        have = [c for c in candidates if c in self.cols(table)]
        if not have:
            return "NULL", ""
        parts = []
        strings = "StringIds" in self.tables
        for c in have:  # scalar subqueries: COALESCE stops at the first hit (no join per column)
            if strings:
                parts.append(f"(SELECT value FROM StringIds WHERE id = {alias}.{c})")
            parts.append(f"CASE WHEN typeof({alias}.{c}) = 'text' THEN {alias}.{c} END")
        return _coalesce(parts), ""


def _coalesce(parts: list[str]) -> str:
    return "NULL" if not parts else parts[0] if len(parts) == 1 else f"COALESCE({', '.join(parts)})"


def _col(db: _Db, table: str, alias: str, name: str) -> str:
    return f"{alias}.{name}" if name in db.cols(table) else "NULL"


def _activity_sql(db: _Db, table: str, kind: str) -> str:
    t = "a"
    if kind == "kernel":
        name, joins = db.name_expr(table, t, ("demangledName", "shortName", "mangledName"))
        grid = ("'(' || a.gridX || ', ' || a.gridY || ', ' || a.gridZ || ')'"
                if {"gridX", "gridY", "gridZ"} <= db.cols(table) else "NULL")
        block = ("'(' || a.blockX || ', ' || a.blockY || ', ' || a.blockZ || ')'"
                 if {"blockX", "blockY", "blockZ"} <= db.cols(table) else "NULL")
        nbytes = "NULL"
    elif kind == "memcpy":
        enum = "ENUM_CUDA_MEMCPY_OPER" in db.tables and "copyKind" in db.cols(table)
        joins = "LEFT JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = a.copyKind" if enum else ""
        name = "'[CUDA memcpy ' || e.label || ']'" if enum else "'[CUDA memcpy]'"
        name = f"COALESCE({name}, '[CUDA memcpy]')"
        grid = block = "NULL"
        nbytes = _col(db, table, t, "bytes")
    else:
        name, joins, grid, block = "'[CUDA memset]'", "", "NULL", "NULL"
        nbytes = _col(db, table, t, "bytes")
    gpid = _col(db, table, t, "globalPid")
    return (f"SELECT a.start AS start_ns, a.end AS end_ns, {_col(db, table, t, 'deviceId')} AS device, "
            f"{_col(db, table, t, 'streamId')} AS stream, ({gpid} >> 24) & 16777215 AS pid, NULL AS tid, "
            f"{_col(db, table, t, 'correlationId')} AS correlation, {name} AS name, {grid} AS grid_dim, "
            f"{block} AS block_dim, {nbytes} AS bytes FROM {table} a {joins}")


def _runtime_sql(db: _Db) -> str:
    name, joins = db.name_expr(RUNTIME, "a", ("nameId", "name"))
    gtid = _col(db, RUNTIME, "a", "globalTid")
    return (f"SELECT a.start AS start_ns, a.end AS end_ns, NULL AS device, NULL AS stream, "
            f"({gtid} >> 24) & 16777215 AS pid, {gtid} & 16777215 AS tid, "
            f"{_col(db, RUNTIME, 'a', 'correlationId')} AS correlation, {name} AS name, NULL AS grid_dim, "
            f"NULL AS block_dim, NULL AS bytes FROM {RUNTIME} a {joins}")


def _sync_sql(db: _Db) -> str:
    enum = "ENUM_CUPTI_SYNC_TYPE" in db.tables and "syncType" in db.cols(SYNC)
    joins = "LEFT JOIN ENUM_CUPTI_SYNC_TYPE e ON e.id = a.syncType" if enum else ""
    name = "COALESCE(e.label, 'sync type ' || a.syncType)" if enum else (
        "'sync type ' || a.syncType" if "syncType" in db.cols(SYNC) else "'sync'")
    gpid = _col(db, SYNC, "a", "globalPid")
    return (f"SELECT a.start AS start_ns, a.end AS end_ns, {_col(db, SYNC, 'a', 'deviceId')} AS device, "
            f"{_col(db, SYNC, 'a', 'streamId')} AS stream, ({gpid} >> 24) & 16777215 AS pid, NULL AS tid, "
            f"{_col(db, SYNC, 'a', 'correlationId')} AS correlation, {name} AS name, NULL AS grid_dim, "
            f"NULL AS block_dim, NULL AS bytes FROM {SYNC} a {joins}")


def _nvtx_sql(db: _Db) -> str:
    cols = db.cols(NVTX)
    parts = ["a.text"] if "text" in cols else []
    joins = ""
    if "textId" in cols and "StringIds" in db.tables:
        joins = "LEFT JOIN StringIds s ON s.id = a.textId"
        parts.append("s.value")
    name = _coalesce(parts)
    gtid = _col(db, NVTX, "a", "globalTid")
    where = f"WHERE a.eventType IN {NVTX_RANGES}" if "eventType" in cols else ""
    return (f"SELECT a.start AS start_ns, a.end AS end_ns, NULL AS device, NULL AS stream, "
            f"({gtid} >> 24) & 16777215 AS pid, {gtid} & 16777215 AS tid, NULL AS correlation, "
            f"{name} AS name, NULL AS grid_dim, NULL AS block_dim, NULL AS bytes FROM {NVTX} a {joins} {where}")


def _queries(db: _Db) -> list[tuple[str, str, str]]:
    """(kind, table, SQL) for every table this file has."""
    out = [(k, t, _activity_sql(db, t, k)) for k, t in (("kernel", KERNEL), ("memcpy", MEMCPY),
                                                        ("memset", MEMSET)) if t in db.tables]
    if RUNTIME in db.tables:
        out.append(("runtime", RUNTIME, _runtime_sql(db)))
    if SYNC in db.tables:
        out.append(("sync", SYNC, _sync_sql(db)))
    if NVTX in db.tables:
        out.append(("range", NVTX, _nvtx_sql(db)))
    return out


def _meta(db: _Db) -> dict[str, Any]:
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


def parse(src: Source, opts: ParseOptions) -> ParseResult:
    """Every activity, API, sync and NVTX-range row as an event; rows without start or end are
    rejected with the table and rowid. ``docs/formulas.md#timelines``."""
    del opts
    if src.limit is not None:
        raise InputError(src.path, "an nsys SQLite export cannot be read in part", "pass the whole file")
    db = _Db(str(src.file), src.path)
    try:
        if not any(t.startswith("CUPTI_ACTIVITY_KIND_") or t in ("META_DATA_EXPORT", "StringIds", NVTX)
                   for t in db.tables):
            raise InputError(src.path, "is a SQLite file without Nsight Systems tables "
                             "(no CUPTI_ACTIVITY_KIND_*, StringIds or META_DATA_EXPORT)",
                             "export the report with `nsys export --type sqlite report.nsys-rep`")
        meta = _meta(db)
        frames, rejected = [], []
        for kind, table, sql in _queries(db):
            df = db.frame(sql)
            bad = df["start_ns"].isna() | df["end_ns"].isna()
            for i in np.flatnonzero(bad.to_numpy())[:100].tolist():
                rejected.append(Rejected(src.path, None, f"{table} row {i + 1}: no start or end time"))
            meta.setdefault("rejected_by_table", {})[table] = int(bad.sum())
            df = df[~bad]
            df.insert(0, "kind", kind)
            frames.append(df)
    except sqlite3.DatabaseError as exc:
        raise read_error(src.path, exc, "SQLite file") from exc
    finally:
        db.con.close()
    events = _finish(frames, src.path)
    n_rej = sum(meta.get("rejected_by_table", {}).values())
    acc = InputAccounting(src.path, NSYS_SQLITE, records=len(events), rejected=n_rej)
    return ParseResult(accounting=acc, events=events, rejected=rejected, meta=meta)


def _finish(frames: list[pd.DataFrame], path: str) -> pd.DataFrame:
    from rooftop.parsers.model import empty_events

    frames = [f for f in frames if len(f)]
    if not frames:
        return empty_events().assign(input=pd.array([], dtype="string"))
    df = pd.concat(frames, ignore_index=True)
    df["input"] = path
    df["device"] = df["device"].map(lambda v: None if v is None or v != v else str(int(v)))
    run = df["kind"] == "runtime"
    if run.any():
        df.loc[run, "name"] = df.loc[run, "name"].astype(object).map(
            lambda s: _VERSION_SUFFIX.sub("", s) if isinstance(s, str) else s)
    for col, dtype in EVENT_COLUMNS.items():
        df[col] = df[col].astype(dtype)
    return df[list(EVENT_COLUMNS)].reset_index(drop=True)
