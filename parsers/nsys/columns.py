"""The columnar reader of an nsys SQLite export, the ``nsys-sqlite`` format's parser (:func:`parse`;
the tables and queries are :mod:`rooftop.parsers.nsys.sqlite`'s): each table's query fetched once, straight into NumPy and
Arrow columns. With ``adbc-driver-sqlite`` (extra ``trace``) SQLite fills Arrow arrays itself;
without it, or where it cannot type a column, ``sqlite3`` rows are transposed column by column.
Same result as the plain reference :mod:`rooftop.parsers.nsys.sqlite_ref` (tested). Rules:
``docs/formulas.md#timelines``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from rooftop.errors import InputError
from rooftop.parsers.model import EVENT_COLUMNS, ParseResult, Rejected
from rooftop.parsers.nsys.sqlite import (
    SQL_COLUMNS,
    TEXT_COLUMNS,
    VERSION_SUFFIX,
    Db,
    Query,
    parse_with,
    rejected_rows,
)
from rooftop.parsers.numbers import INT_NULL, int_column
from rooftop.parsers.source import ParseOptions, Source


def _fetch_list(q: Query) -> list[tuple[str, str]]:
    """(key, SQL) of what the columnar reader fetches: each column once, integers never null."""
    out = [(c, e if c in TEXT_COLUMNS else f"IFNULL({e}, {INT_NULL})") for c, e in q.exprs.items() if e != "NULL"]
    if q.gid != "NULL":
        out.append(("gid", f"IFNULL({q.gid}, {INT_NULL})"))
    out += [(f"{col}.{i}", f"IFNULL({e}, {INT_NULL})") for col, xyz in q.shapes.items() for i, e in enumerate(xyz)]
    return out


def read_columns(db: Db, qs: list[Query]) -> tuple[pd.DataFrame, list[Rejected], dict[str, int]]:
    """Every query's rows as columns; rows without start or end counted, listed and left out."""
    parts: list[_Part] = []
    rejected: list[Rejected] = []
    by_table: dict[str, int] = {}
    for q in qs:
        fetch = _fetch_list(q)
        sql = f"SELECT {', '.join(e for _, e in fetch)} {q.source}"
        keys = [k for k, _ in fetch]
        raw = _fetch_arrow(db, sql, keys) or _fetch_rows(db, q.table, sql, keys)
        bad = (raw["start_ns"] == INT_NULL) | (raw["end_ns"] == INT_NULL)
        by_table[q.table] = int(bad.sum())
        rejected += rejected_rows(db.path, q.table, bad)
        if bad.any():
            keep = ~bad
            raw = {c: a[keep] if isinstance(a, np.ndarray) else a.filter(pa.array(keep)) for c, a in raw.items()}
        arrays = _derived(q, raw)
        if q.kind == "runtime" and "name" in arrays:
            arrays["name"] = _map_text(arrays["name"], lambda s: VERSION_SUFFIX.sub("", s))
        parts.append((q.kind, len(arrays["start_ns"]), arrays))
    return events_frame(db.path, [p for p in parts if p[1]]), rejected, by_table


def _fetch_rows(db: Db, table: str, sql: str, keys: list[str]) -> dict[str, Any]:
    """``sqlite3`` rows transposed into one array per key."""
    rows = db.con.execute(sql).fetchall()
    cols = zip(*rows, strict=True) if rows else (() for _ in keys)
    return {k: _text(v) if k in TEXT_COLUMNS else _ints(db.path, table, k, v) for k, v in zip(keys, cols, strict=True)}


def _fetch_arrow(db: Db, sql: str, keys: list[str]) -> dict[str, Any] | None:
    """The query as Arrow columns through ADBC, or ``None`` (not installed, or a column it typed
    otherwise than int64 / text: the ``sqlite3`` path then reads it, and says what is wrong)."""
    try:
        import adbc_driver_manager
        import adbc_driver_sqlite.dbapi
    except ImportError:
        return None
    try:
        if db.arrow is None:
            db.arrow = adbc_driver_sqlite.dbapi.connect(db.uri)
        with db.arrow.cursor() as cur:
            cur.execute(sql)
            table = cur.fetch_arrow_table()
    except (adbc_driver_manager.Error, OSError, pa.ArrowException):
        return None
    out: dict[str, Any] = {}
    for k, col in zip(keys, table.columns, strict=True):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        if k in TEXT_COLUMNS:
            if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
                out[k] = col.cast(pa.large_string())
            elif col.null_count == len(col):  # no value at all: typed int64 by default
                out[k] = pa.nulls(len(col), type=pa.large_string())
            else:
                return None
        elif pa.types.is_int64(col.type) and col.null_count == 0:
            out[k] = col.to_numpy()
        else:
            return None
    return out


def _derived(q: Query, raw: dict[str, Any]) -> dict[str, Any]:
    """pid/tid from the packed id and the ``"(x, y, z)"`` shapes, as :meth:`Query.expr` computes them."""
    out = {k: v for k, v in raw.items() if k != "gid" and "." not in k}
    if "gid" in raw:
        g = raw["gid"]
        missing = g == INT_NULL
        out["pid"] = np.where(missing, INT_NULL, (g >> 24) & 16777215)
        if q.has_tid:
            out["tid"] = np.where(missing, INT_NULL, g & 16777215)
    for col in q.shapes:
        out[col] = _shape_text(raw[f"{col}.0"], raw[f"{col}.1"], raw[f"{col}.2"])
    return out


def _shape_text(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> pa.Array:
    """``"(x, y, z)"`` per row, formatted once per distinct shape; null when a part is null."""
    missing = (x == INT_NULL) | (y == INT_NULL) | (z == INT_NULL)
    key = np.zeros(len(x), dtype=np.int64)
    for col in (x, y, z):  # mixed-radix code of the three per-column codes (< rows**3 distinct)
        code, vals = pd.factorize(col)  # hash codes: the dictionary's order is cast away below
        key = key * len(vals) + code
    inv, keys = pd.factorize(key)
    first = np.zeros(len(keys), dtype=np.int64)
    first[inv[::-1]] = np.arange(len(inv) - 1, -1, -1)  # a row of each shape (its first)
    labels = pa.array([f"({a}, {b}, {c})" for a, b, c in zip(x[first].tolist(), y[first].tolist(),
                                                                  z[first].tolist(), strict=True)],
                      type=pa.large_string())
    idx = pa.array(inv.astype(np.int32), mask=missing)
    return pa.DictionaryArray.from_arrays(idx, labels).cast(pa.large_string())


def _ints(path: str, table: str, col: str, values: Any) -> np.ndarray:
    try:
        return np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InputError(path, f"{table}: a {col} value is not an integer ({exc})",
                         "re-export the report with `nsys export --type sqlite`") from exc


def _text(values: Any) -> pa.Array:
    try:
        return pa.array(values, type=pa.large_string())
    except (pa.ArrowTypeError, pa.ArrowInvalid):  # a number where text was expected: as text
        return pa.array([None if v is None else str(v) for v in values], type=pa.large_string())


def _map_text(arr: pa.Array, fn: Callable[[str], str]) -> pa.Array:
    """``fn`` applied to each distinct value once (nulls stay null)."""
    enc = arr.dictionary_encode()
    values = [None if v is None else fn(v) for v in enc.dictionary.to_pylist()]
    return pa.DictionaryArray.from_arrays(enc.indices, pa.array(values, type=pa.large_string())).cast(pa.large_string())


def _constant_text(value: str | None, n: int) -> pa.Array:
    """``value`` ``n`` times, built from its buffers (the bytes repeated, offsets a multiple of its length):
    a dictionary cast copied them one by one at twice the cost."""
    if value is None:
        return pa.nulls(n, type=pa.large_string())
    data = value.encode()
    offsets = np.arange(n + 1, dtype=np.int64) * len(data)
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data * n))


def _device_text(dev: np.ndarray) -> pa.Array:
    """Integer device ids as their decimal text (the missing marker as null)."""
    missing = dev == INT_NULL
    inv, uniq = pd.factorize(np.where(missing, 0, dev))  # hash codes: the dictionary is cast away below
    idx = pa.array(inv.astype(np.int32), mask=missing)
    return pa.DictionaryArray.from_arrays(idx, pa.array([str(int(u)) for u in uniq], type=pa.large_string())
                                          ).cast(pa.large_string())


_Part = tuple[str, int, dict[str, Any]]  # kind, rows, column -> int64 ndarray | Arrow text


def events_frame(path: str, parts: list[_Part]) -> pd.DataFrame:
    """The :data:`EVENT_COLUMNS` table of the parts, in order; absent columns null."""
    from rooftop.parsers.model import empty_events

    if not parts:
        return empty_events().assign(input=pd.array([], dtype="string"))
    n = sum(p[1] for p in parts)
    ints = {c: np.concatenate([p[2].get(c, np.full(p[1], INT_NULL, dtype=np.int64)) for p in parts])
            for c in SQL_COLUMNS if c not in TEXT_COLUMNS}
    text = {c: pa.concat_arrays([p[2].get(c, _constant_text(None, p[1])) for p in parts]) for c in TEXT_COLUMNS}
    text["kind"] = pa.concat_arrays([_constant_text(p[0], p[1]) for p in parts])
    text["input"] = _constant_text(path, n)
    text["device"] = _device_text(ints.pop("device"))
    data: dict[str, Any] = {}
    for col, dtype in EVENT_COLUMNS.items():
        if col in text:
            data[col] = _canonical_strings(pd.arrays.ArrowStringArray(text[col]))
        else:
            data[col] = int_column(ints[col], dtype)
    return pd.DataFrame(data)


def parse(src: Source, opts: ParseOptions) -> ParseResult:
    """Every activity, API, sync and NVTX-range row as an event; rows without start or end are
    rejected with the table and row. ``docs/formulas.md#timelines``."""
    del opts
    return parse_with(src, read_columns)


def _canonical_strings(arr: pd.arrays.ArrowStringArray) -> Any:
    """The canonical ``"string"`` dtype (Arrow-backed on pandas 3, so this is free; python-backed on
    pandas 2.x, as the reference reader gives). Text that is not valid UTF-8 (a corrupt page, which
    the integrity check refuses afterwards) stays as Arrow read it."""
    try:
        return arr.astype("string", copy=False)
    except pa.ArrowException:
        return arr
