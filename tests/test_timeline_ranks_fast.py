"""``ranks.collectives`` (NumPy over each participant's NCCL kernels) equals ``collectives_ref`` (pandas
group-bys and filters): generated inputs (ranks or none, repeated ranks, devices with gaps and nulls,
start-time ties, several kernel names) and the corpus traces, one by one and all together."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rooftop.analyzer.timeline import analyze_timelines
from rooftop.analyzer.timeline.ranks import NcclKernels, collectives, collectives_ref
from rooftop.errors import InputError
from rooftop.parsers import parse_path
from rooftop.parsers.model import InputAccounting, ParseResult
from tests.conftest import corpus_dir

ROW = st.tuples(st.sampled_from(["0", "1", "10", "2", None, pd.NA]),  # a frame's missing device reads pd.NA
                st.sampled_from(["ncclKernel_AllReduce_RING", "ncclDevKernel_Broadcast", "ncclKernel_SendRecv"]),
                st.integers(0, 20), st.integers(0, 50))
INPUT = st.tuples(st.one_of(st.none(), st.integers(0, 3)), st.sampled_from(["a/r0.json", "b/r1.json", "r0.json"]),
                  st.lists(ROW, max_size=25))


def _input(rank: int | None, path: str, rows: list[tuple[object, ...]]) -> tuple[ParseResult, NcclKernels]:
    r = ParseResult(accounting=InputAccounting(path, "kineto-json"),
                    meta={"distributed": {"rank": rank}} if rank is not None else {})
    start = np.array([x[2] for x in rows], dtype=np.int64)
    return r, NcclKernels(np.array([x[0] for x in rows], dtype=object), np.array([x[1] for x in rows], dtype=object),
                          start, start + np.array([x[3] for x in rows], dtype=np.int64))


@settings(max_examples=200, deadline=None)
@given(st.lists(INPUT, max_size=4))
def test_collectives_equal_reference_on_generated_inputs(inputs: list[tuple[int | None, str, list[tuple[object, ...]]]]) -> None:
    given_inputs = [_input(*i) for i in inputs]
    assert collectives(given_inputs) == collectives_ref(given_inputs)


@pytest.mark.corpus
def test_collectives_equal_reference_on_the_corpus() -> None:
    everything = []
    checked = 0
    for f in sorted(corpus_dir("trace").iterdir()):
        if f.suffix not in (".sqlite", ".gz", ".json") or f.name == "TRUTH.json":
            continue
        try:
            nccl = analyze_timelines([parse_path(f)]).nccl
        except InputError:
            continue
        assert collectives(nccl) == collectives_ref(nccl), f.name
        everything += nccl
        checked += 1
    assert checked >= 13
    assert collectives(everything) == collectives_ref(everything)
