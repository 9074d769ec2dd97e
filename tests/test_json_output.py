"""JSON writing through orjson: the same strictness as ``json`` (non-finite -> null, numpy values,
non-str keys, the fallback for what orjson refuses) and safe embedding in HTML."""

from __future__ import annotations

import json
from datetime import datetime

import numpy as np

from rooftop.reports.escape import dumps, dumps_bytes, script_json
from rooftop.reports.json_report import COMPACT_ABOVE, render_json, render_json_bytes
from tests.regen_golden import empty_document


def test_nonfinite_and_numpy_nested() -> None:
    doc = {"a": [np.float64("nan"), {"b": np.float32(1.5), "c": np.int64(7)}], "d": np.array([1.0, np.inf]),
           "e": float("-inf"), 3: "int key"}
    assert json.loads(dumps(doc)) == {"a": [None, {"b": 1.5, "c": 7}], "d": [1.0, None], "e": None, "3": "int key"}


def test_default_and_fallback_paths() -> None:
    # datetimes go through str() as with json's default; a >64-bit int and a lone surrogate are
    # refused by orjson and written by json instead, still as valid UTF-8
    assert json.loads(dumps({"t": datetime(2026, 1, 2, 3, 4, 5)})) == {"t": "2026-01-02 03:04:05"}
    assert json.loads(dumps({"big": 2**70, "x": float("nan")})) == {"big": 2**70, "x": None}
    raw = dumps_bytes({"s": "a\udcffb"})
    raw.decode("utf-8")  # valid UTF-8
    assert json.loads(raw) == {"s": "a\udcffb"}


def test_bytes_end_with_newline_and_match_text() -> None:
    doc = empty_document(kernels=[{"name": "é ≥"}], x=1e-05)
    b = render_json_bytes(doc)
    assert b.endswith(b"}\n") and b.decode("utf-8") == render_json(doc)
    assert "é ≥" in render_json(doc)  # UTF-8 kept, not \u-escaped
    assert json.loads(b) == doc


def test_indent_only_for_small_documents() -> None:
    small = empty_document(kernels=[{"i": 1}])
    assert render_json(small).startswith('{\n  "schema_version"')
    big = empty_document(kernels=[{"i": i} for i in range(COMPACT_ABOVE + 1)])
    assert "\n" not in render_json(big).rstrip("\n")


def test_script_json_cannot_close_the_element() -> None:
    out = script_json({"n": "</script><b>&\u2028\u2029"})
    assert "<" not in out and ">" not in out and "&" not in out and "\u2028" not in out and "\u2029" not in out
    assert json.loads(out) == {"n": "</script><b>&\u2028\u2029"}
