"""The vectorised timeline steps (analyzer/timeline/metrics.py, steps.py) against the plain reference
implementations in analyzer/timeline/reference.py, on hypothesis-drawn intervals, ranges and calls
(docs/formulas.md#timelines)."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from rooftop.analyzer.timeline import arrays, steps
from rooftop.analyzer.timeline.metrics import gap_stats, union
from rooftop.analyzer.timeline.reference import (
    exclusive_group_cummax_reference,
    group_codes_reference,
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
    fast = steps.launch_times(a["start_ns"].to_numpy(dtype=np.int64), arrays.ints(a["correlation"]),
                              arrays.ints(a["pid"]), r["start_ns"].to_numpy(dtype=np.int64),
                              arrays.ints(r["correlation"]), arrays.ints(r["pid"]))
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


_span = st.tuples(st.integers(0, 60), st.integers(0, 25)).map(lambda t: (t[0], t[0] + t[1]))


def _u(spans: list[tuple[int, int]]) -> Any:
    return union(np.array([s for s, _ in spans], dtype=np.int64), np.array([e for _, e in spans], dtype=np.int64))


def _set(u: Any) -> set[int]:
    return {t for s, e in zip(u.starts.tolist(), u.ends.tolist(), strict=True) for t in range(s, e)}


@settings(max_examples=300, deadline=None)
@given(st.lists(_span, max_size=12), st.lists(_span, max_size=12))
def test_intersect_and_subtract_equal_the_ns_sets(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> None:
    from rooftop.analyzer.timeline.intervals import complement, intersect, subtract
    from rooftop.analyzer.timeline.reference import set_algebra_reference

    both, only = set_algebra_reference(a, b)
    assert _set(intersect(_u(a), _u(b))) == both and _set(subtract(_u(a), _u(b))) == only
    assert _set(complement(_u(a), 5, 50)) == set(range(5, 50)) - _set(_u(a))


@settings(max_examples=300, deadline=None)
@given(st.lists(_span, max_size=10), st.lists(_span, max_size=6),
       st.lists(st.tuples(st.integers(0, 4), _span), max_size=12), st.integers(1, 12))
def test_idle_split_equals_the_ns_walk(busy: list[tuple[int, int]], sync: list[tuple[int, int]],
                                       host: list[tuple[int, tuple[int, int]]], short: int) -> None:
    """Idle by cause and the host part by category (first match) against one ns at a time."""
    from rooftop.analyzer.timeline import causes
    from rooftop.analyzer.timeline.reference import idle_split_reference

    u = _u(busy)
    gs, ge = u.ends[:-1], u.starts[1:]
    cat = np.array([c for c, _ in host], dtype=np.int64)
    start = np.array([s for _, (s, _) in host], dtype=np.int64)
    end = np.array([e for _, (_, e) in host], dtype=np.int64)
    n = len(host)
    order = sorted(range(n), key=lambda i: (start[i], -end[i]))
    own = start.copy()  # each event's part after every earlier event of its category
    for k, i in enumerate(order):
        own[i] = max([start[i], *(end[j] for j in order[:k] if cat[j] == cat[i])])
    act = causes.HostActivity(start, end, cat, np.zeros(n, dtype=np.int64), own, np.arange(n, dtype=np.int64),
                              pa.array([f"op{i}" for i in range(n)]))
    old = causes.GAP_SHORT_NS
    try:
        causes.GAP_SHORT_NS = short
        got = causes.split_idle(gs, ge, _u(sync), act)
    finally:
        causes.GAP_SHORT_NS = old
    cats = [[sp for c, sp in host if c == i] for i in range(len(causes.HOST_CATEGORIES))]
    gaps = list(zip(gs.tolist(), ge.tolist(), strict=True))
    n_sync, n_launch, n_host, by, untraced = idle_split_reference(gaps, sync, cats, short)
    assert (got.sync, got.launch, got.host) == (n_sync, n_launch, n_host)
    want = {causes.HOST_CATEGORIES[i]: v for i, v in enumerate(by) if v}
    if untraced:
        want[causes.UNTRACED] = untraced
    assert got.host_by == want
    for c, names in got.top.items():  # events' own parts inside the category's part, by name
        assert sum(ns for _, ns in names) <= got.host_by[c]
        if len(names) < causes.TOP_NAMES:  # every name listed: they add up
            assert sum(ns for _, ns in names) == got.host_by[c]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.one_of(_t, _big, st.just(-(2**63) + 1)), st.integers(0, 80)), max_size=120))
def test_exclusive_group_cummax_both_paths_equal_the_plain_scan(rows: list[tuple[int, int]]) -> None:
    values = np.array([v for v, _ in rows], dtype=np.int64)
    groups = np.array([g for _, g in rows], dtype=np.int64)
    want = exclusive_group_cummax_reference(values.tolist(), groups.tolist())
    assert arrays.exclusive_group_cummax(values, groups).tolist() == want  # few groups: per-group runs (or many)
    order = np.argsort(groups, kind="stable")
    assert arrays._ranked_group_cummax(values, order, groups[order]).tolist() == want  # the many-groups path
    if len(groups):
        assert arrays._masked_group_cummax(values, groups).tolist() == want  # the one-mask-per-code path
        spread = groups * (arrays.MASK_LOOP_MAX + 1)  # the same groups, codes too far apart for masks
        assert arrays.exclusive_group_cummax(values, spread).tolist() == want


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.one_of(_t, _big, st.just(arrays.NA)), st.one_of(_opt, st.just(arrays.NA))), max_size=60))
def test_group_codes_equal_np_unique(rows: list[tuple[int, int | None]]) -> None:
    a = np.array([x for x, _ in rows], dtype=np.int64)
    b = np.array([arrays.NA if y is None else y for _, y in rows], dtype=np.int64)
    assert arrays.group_codes(a, b).tolist() == group_codes_reference(a, b).tolist()
    assert arrays.group_codes(a).tolist() == group_codes_reference(a).tolist()
    # unsorted: the same groups, numbered by first appearance
    want = pd.factorize(group_codes_reference(a, b))[0].tolist()
    assert arrays.group_codes(a, b, sort=False).tolist() == want
