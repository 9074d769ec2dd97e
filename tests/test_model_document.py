"""Canonical table schema checks, the document builder and atomic output writes."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rooftop.analyzer.document import build_document, jsonable, kernel_records
from rooftop.atomic import write_atomic
from rooftop.errors import InputError, OutputError, SchemaError
from rooftop.parsers.model import (
    IDENTITY_COLUMNS,
    InputAccounting,
    normalize_kernels,
    validate_kernels,
)


def _kernels() -> pd.DataFrame:
    return pd.DataFrame(
        {"input": ["a.csv", "a.csv"], "index": [0, 1], "name": ["k<&>\"", "k2"],
         "duration_s": [1e-6, 2e-6], "dram__bytes.sum": ["1024", 2048]}
    )


def test_normalize_then_validate() -> None:
    df = validate_kernels(normalize_kernels(_kernels()))
    assert list(df.columns[: len(IDENTITY_COLUMNS)]) == list(IDENTITY_COLUMNS)
    assert df["dram__bytes.sum"].tolist() == [1024.0, 2048.0]
    assert df["name"].iloc[0] == 'k<&>"'


def test_normalize_adds_missing_identity_columns_including_duration() -> None:
    df = normalize_kernels(pd.DataFrame({"input": ["a"], "index": [0], "name": ["k"]}))
    assert math.isnan(df["duration_s"].iloc[0]) and df["cc"].isna().all()
    validate_kernels(df)


def test_validate_rejects_duplicates_and_negative_durations() -> None:
    dup = normalize_kernels(_kernels().assign(index=[0, 0]))
    with pytest.raises(SchemaError, match="repeats"):
        validate_kernels(dup)
    neg = normalize_kernels(_kernels().assign(duration_s=[-1.0, 1.0]))
    with pytest.raises(SchemaError, match="negative"):
        validate_kernels(neg)
    with pytest.raises(SchemaError, match="lacks column 'cc'"):
        validate_kernels(normalize_kernels(_kernels()).drop(columns=["cc"]))
    with pytest.raises(SchemaError, match="'input' is"):
        validate_kernels(_kernels())


def test_accounting_and_input_error_text() -> None:
    acc = InputAccounting("f.csv", "ncu-raw-csv", records=3, missing=1, rejected=2)
    assert acc.total == 6
    assert acc.as_dict()["format"] == "ncu-raw-csv"
    err = InputError("f.csv", "holds no kernel data", "re-run ncu with --csv", line=3)
    assert str(err) == "f.csv:3: holds no kernel data (re-run ncu with --csv)"


def test_jsonable() -> None:
    out = jsonable({"a": np.float64("nan"), "b": np.int64(3), "c": [math.inf, 1.5], "d": pd.NA,
                    "e": pd.Timestamp("2026-01-01T00:00:00Z")})
    assert out == {"a": None, "b": 3, "c": [None, 1.5], "d": None, "e": "2026-01-01T00:00:00Z"}
    json.dumps(out, allow_nan=False)


def test_kernel_records_nest_contract_fields() -> None:
    results = pd.DataFrame(
        {"index": [0], "input": ["a.csv"], "name": ["k"], "sol_compute_pct": [91.5],
         "sol_memory_pct": [np.nan], "bytes_dram": [1e9], "flops_tensor": [2e12], "label": [None],
         "evidence": [["x"]], "binding_level": ["dram"]}
    )
    rec = kernel_records(results)[0]
    assert rec["sol"] == {"compute_pct": 91.5, "memory_pct": None}
    assert rec["bytes"]["dram"] == 1e9 and rec["flops_by_class"]["tensor"] == 2e12
    assert rec["label"] == "unknown" and rec["limiter"] == "unknown"
    assert rec["ncu_rules"] == [] and rec["evidence"] == ["x"]
    assert rec["extra"] == {"binding_level": "dram"}


def test_build_document_has_contract_keys(tmp_path: Path) -> None:
    f = tmp_path / "in.csv"
    f.write_text("x")
    doc = build_document(kind="analyze", inputs=[InputAccounting(str(f), "ncu-raw-csv", 1).as_dict()],
                         rejected=[], devices=[], command="rooftop analyze in.csv")
    for key in ("schema_version", "tool", "inputs", "rejected", "devices", "kernels", "findings",
                "windows", "lint"):
        assert key in doc
    assert doc["schema_version"] == 1 and doc["tool"]["name"] == "rooftop"
    # sha256 of b"x"
    assert doc["run"]["input_sha256"][str(f)].startswith("2d711642b726b044")


def test_write_atomic_replaces_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "r.html"
    write_atomic(target, "old")
    write_atomic(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]  # no temporary left behind


def test_write_atomic_uses_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        target = write_atomic(tmp_path / "r.md", "x")
    finally:
        os.umask(old)
    assert target.stat().st_mode & 0o777 == 0o644


def test_write_atomic_failure_keeps_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "r.json"
    write_atomic(target, "old")

    def boom(*_a: object, **_k: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OutputError, match="No space left on device"):
        write_atomic(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_write_atomic_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="does not exist"):
        write_atomic(tmp_path / "nope" / "r.html", "x")
