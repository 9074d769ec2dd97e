"""The ranges' metrics measured in one grouped pass (analyzer/timeline/batch.py) equal the plain
per-range path (``reference.step_members_reference`` + ``device_metrics`` of each member set) on
hypothesis-drawn activities and ranges and on every corpus trace (docs/formulas.md#timelines)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rooftop.analyzer.timeline.arrays import NA, ints
from rooftop.analyzer.timeline.batch import batch_metrics, range_members
from rooftop.analyzer.timeline.metrics import Acts, device_metrics
from rooftop.analyzer.timeline.reference import step_members_reference
from rooftop.parsers.model import ParseResult
from tests.conftest import corpus_dir

_t = st.one_of(st.integers(0, 60), st.integers(0, 40).map(lambda x: x * 10_000))  # ns and 10 µs steps: ties
_act = st.fixed_dictionaries({
    "kind": st.sampled_from(["kernel", "kernel", "memcpy", "memset"]),
    "name": st.sampled_from(["gemm", "ncclAllReduce", "copy", "b", "a", None]),
    "start": _t, "dur": st.sampled_from([-5, 0, 1, 5, 900, 9_999, 10_000, 30_000, 150_000]),
    "stream": st.sampled_from([None, 7, 3]), "device": st.sampled_from(["0", "1", None]),
    "pid": st.sampled_from([None, 1, 2]), "launch": _t,
})
_range = st.tuples(_t, st.one_of(st.integers(1, 60), st.integers(1, 30).map(lambda x: x * 10_000)),
                   st.sampled_from([None, 1, 2]))


def _acts(rows: list[dict[str, Any]]) -> tuple[Acts, np.ndarray, np.ndarray, np.ndarray]:
    frame = pd.DataFrame({
        "kind": pd.array([r["kind"] for r in rows], dtype="string"),
        "name": pd.array([r["name"] for r in rows], dtype="string"),
        "start_ns": np.array([r["start"] for r in rows], dtype=np.int64),
        "end_ns": np.array([r["start"] + r["dur"] for r in rows], dtype=np.int64),
        "stream": pd.array([r["stream"] for r in rows], dtype="Int64"),
    })
    dev = np.array([r["device"] for r in rows], dtype=object)
    pid = np.array([-1 if r["pid"] is None else r["pid"] for r in rows], dtype=np.int64)
    return Acts.from_frame(frame), dev, pid, np.array([r["launch"] for r in rows], dtype=np.int64)


def _check(acts: Acts, dev: np.ndarray, pid: np.ndarray | None, launch: np.ndarray,
           ranges: list[tuple[int, int, int | None]]) -> int:
    """Compare the batch with the plain path over every (range, device) member set; the sets compared."""
    dev_code, dev_names = pd.factorize(dev)
    lo = np.array([a for a, _, _ in ranges], dtype=np.int64)
    hi = np.array([b for _, b, _ in ranges], dtype=np.int64)
    rpid = np.array([NA if p is None else p for _, _, p in ranges], dtype=np.int64)
    sets = range_members(launch, pid, lo, hi, rpid, dev_code)
    want = []
    for r_i, (a, b, p) in enumerate(ranges):
        mask = step_members_reference(a, b, p, launch, pid)
        for code in sorted({int(c) for c in dev_code[mask] if c >= 0}):
            want.append(((r_i, code), np.flatnonzero(mask & (dev_code == code))))
    got = {(int(r), int(d)): i for i, (r, d) in enumerate(zip(sets.range_idx, sets.device, strict=True))}
    assert sorted(got) == [k for k, _ in want]
    dts = batch_metrics(acts, sets)
    for key, members in want:
        i = got[key]
        assert sorted(sets.of(i).tolist()) == members.tolist(), key
        ref = device_metrics(acts.subset(members), strip=False)
        assert dts[i].metrics == ref.metrics, (key, dev_names[key[1]])
        assert dts[i].busy.starts.tolist() == ref.busy.starts.tolist()
        assert dts[i].busy.ends.tolist() == ref.busy.ends.tolist()
        assert (dts[i].kernel_busy_ns, dts[i].short_busy_ns) == (ref.kernel_busy_ns, ref.short_busy_ns)
    return len(want)


@settings(max_examples=300, deadline=None)
@given(st.lists(_act, min_size=1, max_size=40), st.lists(_range, max_size=8), st.booleans())
def test_batch_equals_the_per_range_path(rows: list[dict[str, Any]], spans: list[tuple[int, int, int | None]],
                                         with_pid: bool) -> None:
    acts, dev, pid, launch = _acts(rows)
    ranges = [(a, a + d, p) for a, d, p in spans]
    _check(acts, dev, pid if with_pid else None, launch, ranges)


def test_a_hand_made_case() -> None:
    """Two ranges overlapping in time on two processes; one activity of unknown process counts in
    both. Range A [0, 100 µs) of pid 1 gets a 20 µs kernel, a 2 µs kernel 28 µs after it, a 5 ns set
    5 ns after that, and the pid-less 5 µs copy; range B [50, 200 µs) of pid 2 gets the copy and its
    own 40 µs kernel."""
    rows = [
        {"kind": "kernel", "name": "gemm", "start": 10_000, "dur": 20_000, "stream": 7, "device": "0", "pid": 1,
         "launch": 5_000},
        {"kind": "kernel", "name": "relu", "start": 58_000, "dur": 2_000, "stream": 7, "device": "0", "pid": 1,
         "launch": 6_000},
        {"kind": "memset", "name": None, "start": 60_005, "dur": 5, "stream": 7, "device": "0", "pid": 1,
         "launch": 7_000},
        {"kind": "memcpy", "name": "copy", "start": 70_000, "dur": 5_000, "stream": 3, "device": "0", "pid": None,
         "launch": 60_000},
        {"kind": "kernel", "name": "gemm", "start": 120_000, "dur": 40_000, "stream": 7, "device": "0", "pid": 2,
         "launch": 90_000},
    ]
    acts, dev, pid, launch = _acts(rows)
    sets = range_members(launch, pid, np.array([0, 50_000]), np.array([100_000, 200_000]),
                         np.array([1, 2]), pd.factorize(dev)[0])
    assert [sorted(sets.of(i).tolist()) for i in range(len(sets))] == [[0, 1, 2, 3], [3, 4]]
    a, b = batch_metrics(acts, sets)
    assert (a.metrics["kernels"], a.metrics["memcpy"], a.metrics["memset"], a.busy.busy) == (2, 1, 1, 27_005)
    assert a.metrics["gaps"] == {"count": 3, "lt_10us": 2, "10_to_100us": 1, "gt_100us": 0, "le_5ns": 1,
                                 "max_s": 28e-6}  # 30->58 µs, 60 µs->+5 ns, 60.01->70 µs
    assert a.metrics["short_kernels"]["count"] == 1 and a.metrics["streams"] == ["3", "7"]
    assert [t["name"] for t in a.metrics["top_kernels"]] == ["gemm", "relu"]
    assert (b.metrics["kernels"], b.busy.busy, b.metrics["span_s"]) == (1, 45_000, 9e-5)  # 70-75 µs, 120-160 µs
    assert _check(acts, dev, pid, launch, [(0, 100_000, 1), (50_000, 200_000, 2)]) == 2


def _corpus_timelines() -> Iterator[ParseResult]:
    """Every corpus trace that parses as a timeline with events (the folder's notes are not traces)."""
    import rooftop.analyzer.timeline as tl
    from rooftop.parsers import parse_path

    for f in sorted(corpus_dir("trace").iterdir()):
        if f.name.endswith((".sqlite", ".json.gz")):
            r = parse_path(f)
            if tl.is_timeline(r) and not r.meta.get("summary_only"):
                yield r


@pytest.mark.corpus
def test_every_corpus_trace_s_ranges() -> None:
    """Every top-level range of every corpus timeline: the batch equals the plain path."""
    from rooftop.analyzer.timeline.steps import launch_times, top_level_ranges

    compared = 0
    for r in _corpus_timelines():
        ev = r.events
        kind = ev["kind"]
        act = ev[kind.isin(("kernel", "memcpy", "memset")).fillna(False)]
        ranges, _ = top_level_ranges(ev.loc[(kind == "range").to_numpy(dtype=bool, na_value=False),
                                            ["name", "start_ns", "end_ns", "pid", "tid"]])
        rt = ev[(kind == "runtime").to_numpy(dtype=bool, na_value=False)]
        act_pid = ints(act["pid"])
        launch = launch_times(act["start_ns"].to_numpy(dtype=np.int64), ints(act["correlation"]), act_pid,
                              rt["start_ns"].to_numpy(dtype=np.int64), ints(rt["correlation"]), ints(rt["pid"]))
        member = np.where(act_pid == NA, -1, act_pid) if (act_pid != NA).any() else None
        spans = [(int(a), int(b), None if pd.isna(p) else int(p)) for a, b, p in
                 zip(ranges["start_ns"], ranges["end_ns"], ranges["pid"], strict=True)]
        compared += _check(Acts.from_frame(act), act["device"].to_numpy(dtype=object, na_value=None), member,
                           launch, spans)
    assert compared > 100


def _same_acts(a: Acts, b: Acts) -> None:
    for f in ("kind", "start", "end", "name", "names", "name_rank", "nccl", "stream", "streams"):
        assert getattr(a, f).tolist() == getattr(b, f).tolist(), f


def test_acts_from_encoded_names_equal_acts_from_strings() -> None:
    """Acts built from the input's encoded kinds and names (EventNames) equal those built by hashing
    the strings again: null names and kinds, repeats, an empty name (docs/formulas.md#timelines)."""
    from rooftop.analyzer.timeline.names import EventNames

    ev = pd.DataFrame({"kind": pd.array(["range", "kernel", "memcpy", None, "kernel", "memset", "kernel"],
                                        dtype="string"),
                       "name": pd.array(["step", "b", None, "x", "ncclKernel", "", "b"], dtype="string"),
                       "start_ns": np.arange(7, dtype=np.int64), "end_ns": np.arange(7, dtype=np.int64) + 3,
                       "stream": pd.array([None, 7, 3, None, 7, None, 3], dtype="Int64")})
    rows = np.array([1, 2, 3, 4, 5, 6])
    act = ev.iloc[rows]
    _same_acts(Acts.from_frame(act), Acts.from_frame(act, EventNames.of(ev).take(rows)))


@pytest.mark.corpus
def test_acts_from_encoded_names_on_every_corpus_trace() -> None:
    from rooftop.analyzer.timeline.names import EventNames

    seen = 0
    for r in _corpus_timelines():
        names = EventNames.of(r.events)
        rows = names.rows("kernel", "memcpy", "memset")
        act = r.events.iloc[rows]
        _same_acts(Acts.from_frame(act), Acts.from_frame(act, names.take(rows)))
        seen += 1
    assert seen >= 10


def test_encoded_names_read_back_as_text() -> None:
    """EventNames.text gives each row's name back (None for a null), also when every name is null."""
    from rooftop.analyzer.timeline.names import EventNames

    ev = pd.DataFrame({"kind": pd.array(["range"] * 4, dtype="string"),
                       "name": pd.array(["b", None, "a", "b"], dtype="string")})
    assert EventNames.of(ev).text(np.array([3, 1, 0, 2])) == ["b", None, "b", "a"]
    none = pd.DataFrame({"kind": pd.array(["range"] * 2, dtype="string"), "name": pd.array([None, None], dtype="string")})
    assert EventNames.of(none).text(np.array([1, 0])) == [None, None]
