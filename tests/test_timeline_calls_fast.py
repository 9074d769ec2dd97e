"""``calls.call_keys`` (the pattern tested once per distinct call name) equals ``call_keys_ref`` (tested
on every row): generated event tables with nulls, repeats and non-runtime rows, and every corpus trace."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rooftop.analyzer.timeline.calls import ASYNC_COPY, GRAPH_LAUNCH, call_keys, call_keys_ref
from rooftop.errors import InputError
from rooftop.parsers import parse_path
from tests.conftest import corpus_dir

NAMES = [None, "cudaMemcpyAsync", "cudaMemcpy", "cuMemcpyHtoDAsync_v2", "cudaGraphLaunch", "cuGraphLaunch",
         "hipGraphLaunch", "cudaLaunchKernel", "", "CUDAGRAPHLAUNCH"]
ROW = st.tuples(st.sampled_from(["runtime", "kernel", "range", None]), st.sampled_from(NAMES),
                st.one_of(st.none(), st.integers(0, 20)), st.one_of(st.none(), st.integers(1, 3)))


@settings(max_examples=200, deadline=None)
@given(st.lists(ROW, max_size=40))
def test_call_keys_equals_reference_on_generated_tables(rows: list[tuple[object, ...]]) -> None:
    ev = pd.DataFrame({"kind": pd.array([r[0] for r in rows], dtype="string[pyarrow]"),
                       "name": pd.array([r[1] for r in rows], dtype="string[pyarrow]"),
                       "correlation": pd.array([r[2] for r in rows], dtype="Int64"),
                       "pid": pd.array([r[3] for r in rows], dtype="Int64")})
    for pattern in (ASYNC_COPY, GRAPH_LAUNCH):
        assert call_keys(ev, pattern) == call_keys_ref(ev, pattern)


@pytest.mark.corpus
def test_call_keys_equals_reference_on_the_corpus() -> None:
    checked = 0
    for f in sorted(corpus_dir("trace").iterdir()):
        if f.suffix not in (".sqlite", ".gz", ".json") or f.name == "TRUTH.json":
            continue
        try:
            ev = parse_path(f).events
        except InputError:
            continue
        for pattern in (ASYNC_COPY, GRAPH_LAUNCH):
            assert call_keys(ev, pattern) == call_keys_ref(ev, pattern), (f.name, pattern)
        checked += 1
    assert checked >= 13
