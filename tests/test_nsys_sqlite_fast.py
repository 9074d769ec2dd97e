"""The columnar nsys SQLite reader (parsers/nsys/columns.py, via ADBC and via sqlite3 rows) against
the plain reference reader (parsers/nsys/sqlite_ref.py): the same ParseResult on every corpus export,
the generated fixtures, and hypothesis-built exports with missing tables, columns and values."""

from __future__ import annotations

import importlib.util
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rooftop.parsers.model import ParseResult
from rooftop.parsers.nsys import columns as nsys_columns
from rooftop.parsers.nsys.columns import parse
from rooftop.parsers.nsys.sqlite import Db, queries
from rooftop.parsers.nsys.sqlite_ref import parse_reference
from rooftop.parsers.source import ParseOptions, Source
from tests.conftest import CORPUS, FIXTURES

HAS_ADBC = importlib.util.find_spec("adbc_driver_sqlite") is not None


def _same(a: ParseResult, b: ParseResult) -> None:
    pd.testing.assert_frame_equal(a.events, b.events)
    assert a.accounting == b.accounting
    assert a.rejected == b.rejected
    assert a.meta == b.meta


def _check(path: Path, monkeypatch: pytest.MonkeyPatch) -> ParseResult:
    """Both columnar paths equal the reference; returns the reference result."""
    ref = parse_reference(Source(path), ParseOptions())
    _same(parse(Source(path), ParseOptions()), ref)
    with monkeypatch.context() as m:
        m.setattr(nsys_columns, "_fetch_arrow", lambda *a: None)
        _same(parse(Source(path), ParseOptions()), ref)
    return ref


def _exports() -> list[Path]:
    return sorted((CORPUS / "trace").glob("*.sqlite")) if (CORPUS / "trace").is_dir() else []


@pytest.mark.corpus
@pytest.mark.parametrize("path", _exports() or [None], ids=lambda p: p.name if p else "absent")
def test_corpus_exports_read_the_same(path: Path | None, monkeypatch: pytest.MonkeyPatch) -> None:
    if path is None:
        pytest.skip("trace corpus absent")
    ref = _check(path, monkeypatch)
    assert len(ref.events) > 0


@pytest.mark.parametrize("schema", ["3.25.0", "3.16.1"])
def test_fixture_exports_read_the_same(schema: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("make_trace", FIXTURES / "make_trace.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ref = _check(mod.write_nsys(tmp_path / "t.sqlite", schema), monkeypatch)
    assert ref.accounting.rejected == (1 if schema == "3.25.0" else 0)


@pytest.mark.skipif(not HAS_ADBC, reason="adbc-driver-sqlite not installed")
def test_arrow_path_is_taken_and_falls_back_on_a_column_it_cannot_type(tmp_path: Path) -> None:
    p = tmp_path / "t.sqlite"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, bytes)")
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?, ?, ?, ?)", [(1, 2, 0, 8), (3, 4, 0, 2.5)])
    con.commit()
    con.close()
    db = Db(str(p), str(p))
    try:
        (q,) = queries(db)
        keys = [k for k, _ in nsys_columns._fetch_list(q)]
        sql = f"SELECT {', '.join(e for _, e in nsys_columns._fetch_list(q))} {q.source}"
        assert nsys_columns._fetch_arrow(db, sql, keys) is None  # bytes 2.5 is not an integer
        ok = sql.replace("IFNULL(a.bytes", "IFNULL(CAST(a.bytes AS INTEGER)")
        got = nsys_columns._fetch_arrow(db, ok, keys)
        assert got is not None and got["bytes"].tolist() == [8, 2]
    finally:
        db.close()


# ------------------------------------------------------------------ hypothesis-built exports
_ints = st.one_of(st.none(), st.integers(-5, 3_000_000_000))
_text = st.one_of(st.none(), st.sampled_from(["k_a", "void k<1>(int)", "cudaLaunchKernel_v7000",
                                              "cudaStreamSynchronize", "step 1", "ProfilerStep#3", ""]))
_name = st.one_of(st.none(), st.integers(1, 6), _text)  # a StringIds id (1-4 exist), inline text, null


@st.composite
def exports(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {"strings": draw(st.booleans()), "enums": draw(st.booleans())}
    for table, cols in (("CUPTI_ACTIVITY_KIND_KERNEL", ("deviceId", "streamId", "correlationId", "globalPid",
                                                        "demangledName", "shortName", "gridX", "gridY",
                                                        "gridZ", "blockX", "blockY", "blockZ")),
                        ("CUPTI_ACTIVITY_KIND_MEMCPY", ("deviceId", "streamId", "globalPid", "bytes", "copyKind")),
                        ("CUPTI_ACTIVITY_KIND_MEMSET", ("deviceId", "bytes")),
                        ("CUPTI_ACTIVITY_KIND_RUNTIME", ("globalTid", "correlationId", "nameId")),
                        ("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", ("deviceId", "globalPid", "syncType")),
                        ("NVTX_EVENTS", ("eventType", "text", "textId", "globalTid"))):
        if not draw(st.booleans()):
            continue
        have = [c for c in cols if draw(st.booleans())]
        rows = draw(st.lists(st.fixed_dictionaries(
            {"start": _ints, "end": _ints,
             **{c: (_name if c in ("demangledName", "shortName", "nameId", "text") else
                    st.one_of(st.none(), st.sampled_from([59, 60, 33])) if c == "eventType" else
                    st.one_of(st.none(), st.integers(0, 4)) if c in ("copyKind", "syncType", "textId") else
                    _ints) for c in have}}), max_size=12))
        spec[table] = (have, rows)
    if len(spec) == 2:
        spec["CUPTI_ACTIVITY_KIND_MEMSET"] = (["deviceId"], [{"start": 1, "end": 2, "deviceId": 0}])
    return spec


def _write(path: Path, spec: dict[str, Any]) -> None:
    con = sqlite3.connect(path)
    if spec["strings"]:
        con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
        con.executemany("INSERT INTO StringIds VALUES (?, ?)",
                        [(1, "gemm_v2"), (2, "cudaMemcpy_v3020"), (3, "range A"), (4, "nccl_v1")])
    if spec["enums"]:
        con.execute("CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER PRIMARY KEY, name TEXT, label TEXT)")
        con.execute("INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (1, 'HTOD', 'Host-to-Device'), (2, 'X', NULL)")
        con.execute("CREATE TABLE ENUM_CUPTI_SYNC_TYPE (id INTEGER PRIMARY KEY, name TEXT, label TEXT)")
        con.execute("INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES (1, 'EVENT', 'Event synchronize')")
    for table, value in spec.items():
        if not isinstance(value, tuple):
            continue
        have, rows = value
        cols = ["start", "end", *have]
        types = {c: "TEXT" if c == "text" else "INTEGER" for c in cols}
        types.update({c: "" for c in ("demangledName", "shortName")})  # nsys leaves these untyped
        con.execute(f"CREATE TABLE {table} ({', '.join(f'{c} {types[c]}' for c in cols)})")
        con.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' for _ in cols)})",
                        [tuple(r[c] for c in cols) for r in rows])
    con.commit()
    con.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=exports())
def test_any_export_reads_the_same(spec: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.sqlite"
        _write(path, spec)
        ref = _check(path, monkeypatch)
        assert ref.accounting.records + ref.accounting.rejected == sum(
            len([r for r in v[1] if spec_row_read(k, r)]) for k, v in spec.items() if isinstance(v, tuple))


def spec_row_read(table: str, row: dict[str, Any]) -> bool:
    """Whether the reader reads the row at all (NVTX: only push/pop and start/end ranges)."""
    return table != "NVTX_EVENTS" or "eventType" not in row or row["eventType"] in (59, 60)
