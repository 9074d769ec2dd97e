"""The whole-document Kineto reader (parsers/kineto/whole.py, msgspec) against the streamed one
(ijson, the reference): the same ParseResult on every corpus trace, the fixtures, and
hypothesis-built documents with odd field types, missing keys and exact decimals."""

from __future__ import annotations

import gzip
import importlib.util
import json
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rooftop.parsers.kineto import reader as kineto
from rooftop.parsers.kineto import whole as kineto_whole
from rooftop.parsers.model import ParseResult
from rooftop.parsers.source import ParseOptions, Source
from tests.conftest import CORPUS, FIXTURES

pytestmark = pytest.mark.skipif(importlib.util.find_spec("msgspec") is None, reason="msgspec not installed")


def _both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ParseResult, ParseResult]:
    whole = kineto.parse(Source(path), ParseOptions())
    with monkeypatch.context() as m:
        m.setattr(kineto, "read_whole", lambda src: None)
        streamed = kineto.parse(Source(path), ParseOptions())
    return whole, streamed


def _same(a: ParseResult, b: ParseResult) -> None:
    pd.testing.assert_frame_equal(a.events, b.events)
    pd.testing.assert_frame_equal(a.ops, b.ops)
    assert (a.accounting, a.rejected, a.meta) == (b.accounting, b.rejected, b.meta)


def _traces() -> list[Path]:
    found = sorted((CORPUS / "trace").glob("*.json*")) if (CORPUS / "trace").is_dir() else []
    return [p for p in found if p.name != "TRUTH.json"] + sorted((FIXTURES / "trace").glob("*.json"))


@pytest.mark.parametrize("path", _traces(), ids=lambda p: p.name[-60:])
def test_traces_read_the_same_whole_and_streamed(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    real = kineto_whole.read_whole
    monkeypatch.setattr(kineto, "read_whole", lambda src: seen.append(True) or real(src))
    assert kineto_whole.read_whole(Source(path)) is not None  # these fit the structs: the fast path runs
    _same(*_both(path, monkeypatch))


def test_a_document_over_the_size_cap_is_streamed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2,
                                              "pid": 0, "tid": 7}] * 50}))
    monkeypatch.setattr(kineto_whole, "WHOLE_MAX_BYTES", 100)
    assert kineto_whole.read_whole(Source(p)) is None
    monkeypatch.setattr(kineto_whole, "WHOLE_MAX_BYTES", 1 << 20)
    assert kineto_whole.read_whole(Source(p)) is not None


class Raw:
    """A number written exactly as given (a decimal with more digits than a float holds)."""

    def __init__(self, text: str) -> None:
        self.text = text


def _dump(v: Any) -> str:
    if isinstance(v, Raw):
        return v.text
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {_dump(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_dump(x) for x in v) + "]"
    return json.dumps(v)


_num = st.one_of(st.integers(-5, 10**17), st.builds(lambda a, b: Raw(f"{a}.{b}"), st.integers(0, 10**13),
                                                    st.integers(0, 99999)))
_scalar = st.one_of(st.none(), st.booleans(), _num, st.sampled_from(["7", "stream 7", "x", "", "-3"]))
_value = st.one_of(_scalar, st.lists(st.integers(1, 4), min_size=3, max_size=3), st.lists(_scalar, max_size=3),
                   st.fixed_dictionaries({"a": _scalar}))
_args = st.one_of(st.none(), st.sampled_from(["text", 3]), st.dictionaries(
    st.sampled_from(["device", "stream", "correlation", "grid", "block", "bytes", "External id", "Input Dims",
                     "Input type", "Input Strides", "Concrete Inputs", "Collective name", "In msg nelems",
                     "Group size", "dtype"]), _value))
_cats = st.sampled_from(["kernel", "Kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver",
                         "cuda_sync", "user_annotation", "gpu_user_annotation", "cpu_op", "cpu_op", "ac2g", None, 5])
_event = st.one_of(st.dictionaries(st.sampled_from(["ph", "cat", "name", "ts", "dur", "pid", "tid", "args"]),
                                   _value, max_size=3),
                   st.fixed_dictionaries({"ph": st.sampled_from(["X", "X", "i", "f", None]), "cat": _cats,
                                          "name": st.one_of(st.sampled_from(["k", "ProfilerStep#2", "cudaLaunchKernel"]),
                                                            _scalar),
                                          "ts": _num, "pid": _scalar, "tid": _scalar, "args": _args},
                                         optional={"dur": st.one_of(_num, st.none())}))


@st.composite
def documents(draw: st.DrawFn) -> str:
    events = draw(st.lists(_event, max_size=15))
    props = draw(st.one_of(st.none(), st.just([{"id": 0, "name": "GPU A"}, {"id": 1, "name": 5}])))
    head = {"schemaVersion": 1, **({"deviceProperties": props} if props is not None and draw(st.booleans()) else {})}
    tail = {"deviceProperties": props} if props is not None and "deviceProperties" not in head else {}
    doc = {**head, "traceEvents": events, **tail}
    return _dump(doc)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=documents(), gz=st.booleans())
def test_any_document_reads_the_same_whole_and_streamed(doc: str, gz: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("t.json.gz" if gz else "t.json")
        path.write_bytes(gzip.compress(doc.encode()) if gz else doc.encode())
        _same(*_both(path, monkeypatch))


def test_a_time_beyond_64_bit_ns_is_rejected_not_a_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """9223372036854776 µs is 9.2e18 ns, past the int64 events column: the event is rejected with the
    reason (before, both readers raised OverflowError); an id past 64 bits counts as absent."""
    p = tmp_path / "t.json"
    p.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 9223372036854776, "dur": 1,'
                 ' "pid": 0, "tid": 7}, {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 5,'
                 ' "dur": 1, "pid": 99999999999999999999, "tid": 1}]}')
    for r in _both(p, monkeypatch):
        assert (r.accounting.records, r.accounting.rejected) == (1, 1)
        assert "beyond the 64-bit ns range" in r.rejected[0].reason
        assert r.events["pid"].isna().all() and r.events["tid"].tolist() == [1]


def test_op_arguments_come_through_both_readers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cpu_op's recorded arguments land in the op table as compact JSON, counted as records."""
    p = tmp_path / "t.json"
    p.write_text('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 10.5, "dur": 2,'
                 ' "pid": 1, "tid": 2, "args": {"External id": 7, "Input Dims": [[8, 16], [16, 4]],'
                 ' "Input type": ["float", "float"], "Input Strides": [[16, 1], [4, 1]],'
                 ' "Concrete Inputs": ["", ""]}}, {"ph": "X", "cat": "cpu_op", "name": "aten::empty",'
                 ' "ts": 11, "dur": 0.25, "pid": 1, "tid": 2}]}')
    for r in _both(p, monkeypatch):
        assert r.accounting.records == 2 and len(r.events) == 0
        first = r.ops.iloc[0]
        assert (first["name"], first["start_ns"], first["end_ns"], first["external_id"]) == ("aten::mm", 10500, 12500, 7)
        assert first["input_dims"] == "[[8,16],[16,4]]" and first["input_types"] == '["float","float"]'
        assert first["concrete_inputs"] == '["",""]' and first["input_strides"] == "[[16,1],[4,1]]"
        assert r.ops.iloc[1][["input_dims", "external_id"]].isna().all()


def test_a_collectives_sizes_come_through_both_readers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "t.json"
    p.write_text('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "ts": 1, "dur": 2,'
                 ' "pid": 1, "tid": 2, "args": {"Collective name": "allreduce", "In msg nelems": 2049000,'
                 ' "Out msg nelems": 2049000, "Group size": 2, "dtype": "Float", "Process Group Name": "0"}}]}')
    for r in _both(p, monkeypatch):
        assert r.ops.loc[0, "collective"] == ('{"Collective name":"allreduce","In msg nelems":2049000,'
                                              '"Out msg nelems":2049000,"Group size":2,"dtype":"Float"}')
