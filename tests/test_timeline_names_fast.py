"""The name passes of the timeline analysis that run once per distinct name (``names.EventNames``) equal
their plain per-row references: ``host_activity`` / ``host_activity_ref``, ``blocking_rows`` /
``blocking_rows_ref`` (with ``sync_exempt``), and the emit_nvtx suffix grouping against the regex
itself; on generated event tables (nulls, repeats, every kind, tricky suffixes) and every corpus trace."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rooftop.analyzer.timeline import blocking_rows, blocking_rows_ref
from rooftop.analyzer.timeline.causes import (
    _NVTX_SUFFIX,
    HostActivity,
    _grouped_names,
    host_activity,
    host_activity_ref,
)
from rooftop.analyzer.timeline.names import EventNames
from rooftop.errors import InputError
from rooftop.parsers import parse_path
from tests.conftest import corpus_dir

NAMES = [None, "", "cudaLaunchKernel", "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaMemcpy",
         "cudaMemcpyAsync", "Stream wait sync", "Event sync", "aten::to", "aten::to, seq = 3, op_id = 7",
         "aten::to, op_id = 8", "aten::add,seq=1", "aten::add, seq  = 2", "aten::mm, sizes = [[2, 3]]",
         "x, seq = 1\nnext, op_id = 2", "x, y, seq = 4", "y, sequence = 5", "ProfilerStep#3",
         "ProfilerStep#3, seq = 1", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
         "enumerate(DataLoader)#x.__next__, seq = 2", "enumerate(DataLoader)#a\nb.__next__",
         "Optimizer.step#Adam.step", "Optimizer.zero_grad#SGD.zero_grad, op_id = 9", "Optimizer.stepx",
         "[CUDA memcpy Host-to-Device]", "[CUDA memcpy Device-to-Host]", "Memcpy HtoD (Pageable -> Device)",
         "nccl, seq = 1", ", seq = 1", "é, op_id = 1", "ä,sizes = []", "Memcpy DtoH (Device -> Pageable)",
         "Memcpy DtoH (Device -> Pinned)", "cudaMemcpy2DAsync"]
KINDS = ["runtime", "range", "kernel", "memcpy", "memset", "sync", None]
ROW = st.tuples(st.sampled_from(KINDS), st.sampled_from(NAMES), st.integers(0, 60), st.integers(0, 30),
                st.one_of(st.none(), st.integers(1, 2)), st.one_of(st.none(), st.integers(0, 8)),
                st.one_of(st.none(), st.sampled_from([16, 65536, 65537, 1 << 20])))


def _events(rows: list[tuple[object, ...]]) -> pd.DataFrame:
    col = list(zip(*rows, strict=True)) if rows else [()] * 7
    start = np.array(col[2], dtype=np.int64)
    return pd.DataFrame({"kind": pd.array(col[0], dtype="string[pyarrow]"),
                         "name": pd.array(col[1], dtype="string[pyarrow]"),
                         "start_ns": start, "end_ns": start + np.array(col[3], dtype=np.int64),
                         "pid": pd.array(col[4], dtype="Int64"), "correlation": pd.array(col[5], dtype="Int64"),
                         "bytes": pd.array(col[6], dtype="Int64"), "device": pd.array([None] * len(rows), dtype="string[pyarrow]")})


def _ops(rows: list[tuple[object, ...]]) -> pd.DataFrame:
    start = np.array([r[2] for r in rows], dtype=np.int64)
    return pd.DataFrame({"name": pd.array([r[1] for r in rows], dtype="string[pyarrow]"), "start_ns": start,
                         "end_ns": start + np.array([r[3] for r in rows], dtype=np.int64),
                         "pid": pd.array([r[4] for r in rows], dtype="Int64")})


def _same(a: HostActivity, b: HostActivity) -> None:
    for f in ("start", "end", "cat", "pid", "own"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    assert a.labels.take(pa.array(a.code, type=pa.int64())).to_pylist() == \
        b.labels.take(pa.array(b.code, type=pa.int64())).to_pylist()


def _check(ev: pd.DataFrame, ops: pd.DataFrame | None) -> None:
    fast, ref = blocking_rows(ev), blocking_rows_ref(ev)
    assert np.array_equal(fast[0], ref[0]) and np.array_equal(fast[1], ref[1])
    _same(host_activity(ev, fast[0], ops, EventNames.of(ev)), host_activity_ref(ev, ref[0], ops))


@settings(max_examples=200, deadline=None)
@given(st.lists(ROW, max_size=40), st.lists(ROW, max_size=8))
def test_name_passes_equal_reference_on_generated_tables(rows: list[tuple[object, ...]],
                                                         ops: list[tuple[object, ...]]) -> None:
    _check(_events(rows), _ops(ops) if ops else None)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from([n for n in NAMES if n is not None]),
                          st.text(alphabet=", =seqopidsz_\n\t\fé", max_size=14)), max_size=30, unique=True))
def test_suffix_grouping_equals_the_regex(names: list[str]) -> None:
    for uniq in (pa.array(names, type=pa.large_string()),  # and as a slice: its buffers start before it
                 pa.array(["\u00e9, seq = 1", *names], type=pa.large_string()).slice(1)):
        code, labels = _grouped_names(uniq)
        expect = pc.replace_substring_regex(uniq, pattern=_NVTX_SUFFIX.pattern, replacement="").to_pylist()
        assert labels.take(pa.array(code, type=pa.int64())).to_pylist() == expect
        assert len(set(labels.to_pylist())) == len(labels)  # one code per label


@pytest.mark.corpus
def test_name_passes_equal_reference_on_the_corpus() -> None:
    checked = 0
    for f in sorted(corpus_dir("trace").iterdir()):
        if f.suffix not in (".sqlite", ".gz", ".json") or f.name == "TRUTH.json":
            continue
        try:
            r = parse_path(f)
        except InputError:
            continue
        _check(r.events, r.ops)
        checked += 1
    assert checked >= 13
