"""The vectorised timeline steps (analyzer/timeline/metrics.py, steps.py) against the plain reference
implementations in analyzer/timeline/reference.py, on hypothesis-drawn intervals, ranges and calls
(docs/formulas.md#timelines)."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from rooftop.analyzer.timeline import steps
from rooftop.analyzer.timeline.metrics import gap_stats, union
from rooftop.analyzer.timeline.reference import (
    launch_times_reference,
    top_level_ranges_reference,
    union_reference,
)

_t = st.integers(-3, 60)
_big = st.integers(1_700_000_000_000_000_000, 1_700_000_000_000_000_040)  # epoch ns: 19 digits
_opt = st.one_of(st.none(), st.integers(0, 3))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.one_of(_t, _big), st.integers(-5, 30)), max_size=40))
def test_union_and_gaps_equal_the_plain_sweep(spans: list[tuple[int, int]]) -> None:
    start = [s for s, _ in spans]
    end = [s + d for s, d in spans]
    u = union(np.array(start, dtype=np.int64), np.array(end, dtype=np.int64))
    ref = union_reference(start, end)
    assert list(zip(u.starts.tolist(), u.ends.tolist(), strict=True)) == ref
    assert u.busy == sum(e - s for s, e in ref)
    gaps = [b[0] - a[1] for a, b in pairwise(ref)]
    assert u.gaps.tolist() == gaps and all(g > 0 for g in gaps)
    g = gap_stats(u.gaps)
    assert (g["count"], g["lt_10us"], g["10_to_100us"], g["gt_100us"]) == (
        len(gaps), sum(x < 10_000 for x in gaps), sum(10_000 <= x <= 100_000 for x in gaps),
        sum(x > 100_000 for x in gaps))


def _frame(rows: list[dict[str, Any]], cols: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.array([r[c] for r in rows], dtype=t) for c, t in cols.items()})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.fixed_dictionaries({"start_ns": _t, "correlation": _opt, "pid": _opt}), max_size=30),
       st.lists(st.fixed_dictionaries({"start_ns": _t, "correlation": _opt, "pid": _opt}), max_size=30))
def test_launch_times_equal_the_merge(act: list[dict[str, Any]], rt: list[dict[str, Any]]) -> None:
    cols = {"start_ns": "int64", "correlation": "Int64", "pid": "Int64"}
    a, r = _frame(act, cols), _frame(rt, cols)
    fast = steps.launch_times(a["start_ns"].to_numpy(dtype=np.int64), steps.ints(a["correlation"]),
                              steps.ints(a["pid"]), r["start_ns"].to_numpy(dtype=np.int64),
                              steps.ints(r["correlation"]), steps.ints(r["pid"]))
    assert fast.tolist() == launch_times_reference(a, r).tolist()


_names = st.sampled_from(["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#x", "fwd", "bwd", None])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.fixed_dictionaries({"name": _names, "start_ns": _t, "end_ns": _t, "pid": _opt,
                                       "tid": _opt}), max_size=40),
       st.integers(1, 4), st.integers(1, 4))
def test_top_level_ranges_equal_the_groupby(rows: list[dict[str, Any]], max_steps: int, max_ranges: int) -> None:
    cols = {"name": "string", "start_ns": "int64", "end_ns": "int64", "pid": "Int64", "tid": "Int64"}
    ranges = _frame(rows, cols)
    old = (steps.MAX_STEPS, steps.MAX_RANGES)
    import rooftop.analyzer.timeline.reference as ref

    try:  # small limits so that the cut-offs are exercised
        steps.MAX_STEPS, steps.MAX_RANGES = ref.MAX_STEPS, ref.MAX_RANGES = max_steps, max_ranges
        got, left = steps.top_level_ranges(ranges)
        want, want_left = top_level_ranges_reference(ranges)
    finally:
        steps.MAX_STEPS, steps.MAX_RANGES = ref.MAX_STEPS, ref.MAX_RANGES = old
    assert left == want_left
    pd.testing.assert_frame_equal(got, want)
