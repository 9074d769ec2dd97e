"""Steps: the per-device breakdown for each ``ProfilerStep#N`` and each top-level NVTX /
``record_function`` range (``docs/formulas.md#timelines``).

A GPU activity belongs to a range when the CUDA call that launched it (joined on correlation id,
and process where the file has one) started inside the range, on the same process; an activity
whose launch call is not in the file is placed by its own start time. Ranges nested inside
another range of the same thread are not listed (their parent is).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rooftop.analyzer.timeline.arrays import NA, exclusive_group_cummax, group_codes, ints
from rooftop.analyzer.timeline.causes import HostActivity
from rooftop.analyzer.timeline.labels import Verdict
from rooftop.analyzer.timeline.metrics import (
    Acts,
    DeviceTimeline,
    Union,
    covered_upto,
    device_metrics,
    gap_histogram,
    gap_stats,
)

MAX_STEPS = 200  # ProfilerStep ranges listed per input; the rest are counted (lint)
MAX_RANGES = 50  # other top-level ranges listed per input: the longest
PROFILER_STEP = re.compile(r"^ProfilerStep#\d+$")


def launch_times(own: np.ndarray, corr: np.ndarray, pid: np.ndarray, rt_start: np.ndarray,
                 rt_corr: np.ndarray, rt_pid: np.ndarray) -> np.ndarray:
    """Per activity: the start ns of its launching runtime call (the first call with its correlation
    id, and process where both sides have processes), else its own start ``own``. Integer columns
    carry :data:`NA` for missing."""
    if not len(rt_start) or (corr == NA).all():
        return own
    by_pid = (pid != NA).any() and (rt_pid != NA).any()
    left = [corr, pid] if by_pid else [corr]
    right = [rt_corr, rt_pid] if by_pid else [rt_corr]
    ok_r = np.logical_and.reduce([c != NA for c in right])
    ok_l = np.logical_and.reduce([c != NA for c in left])
    codes = group_codes(*(np.concatenate([lc, rc[ok_r]]) for lc, rc in zip(left, right, strict=True)), sort=False)
    lkey, rkey = codes[: len(own)], codes[len(own):]
    keys, first = np.unique(rkey, return_index=True)  # the first call of each key
    if not len(keys):
        return own
    i = np.minimum(np.searchsorted(keys, lkey), len(keys) - 1)
    hit = ok_l & (keys[i] == lkey)
    return np.where(hit, rt_start[ok_r][first[i]], own)


def profiler_steps(names: pd.Series) -> np.ndarray:
    """:data:`PROFILER_STEP` matches (Arrow compute; the regex only where the cheap prefix test holds)."""
    arr = pa.chunked_array([pa.array(names.array, type=pa.large_string())])
    out: np.ndarray = np.asarray(pc.starts_with(arr, "ProfilerStep#").fill_null(False).to_numpy(), dtype=bool)
    cand = np.flatnonzero(out)
    if len(cand):
        out[cand] = np.asarray(pc.match_substring_regex(arr.take(pa.array(cand)), PROFILER_STEP.pattern)
                               .fill_null(False).to_numpy(), dtype=bool)
    return out


def top_level(start: np.ndarray, end: np.ndarray, pid: np.ndarray, tid: np.ndarray,
              is_step: np.ndarray) -> tuple[np.ndarray, int]:
    """Positions of the ProfilerStep ranges (``is_step``; the first :data:`MAX_STEPS`), plus the
    :data:`MAX_RANGES` longest ranges not contained in an earlier range of the same thread; in start
    order, with the number left out. Integer columns carry :data:`NA` for missing."""
    pos = np.flatnonzero(end > start)
    order = pos[np.argsort(start[pos], kind="stable")]  # start ascending (traces come nearly sorted) ...
    if len(order) and (start[order][1:] == start[order][:-1]).any():  # ... then, at equal starts, end descending
        order = pos[np.lexsort((-end[pos], start[pos]))]
    prev_max = exclusive_group_cummax(end[order], group_codes(pid[order], tid[order], sort=False))
    step = is_step[order]
    top = ~step & (start[order] >= prev_max)
    steps, others = order[step], order[top]
    longest = others[np.argsort(-(end[others] - start[others]), kind="stable")[:MAX_RANGES]]
    sel = np.concatenate([steps[:MAX_STEPS], longest])
    return sel[np.lexsort((end[sel], start[sel]))], max(0, len(steps) - MAX_STEPS) + max(0, len(others) - MAX_RANGES)


def top_level_ranges(ranges: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """:func:`top_level` of a ranges table (``name``, ``start_ns``, ``end_ns``, ``pid``, ``tid``)."""
    if not len(ranges):
        return ranges, 0
    sel, left_out = top_level(ranges["start_ns"].to_numpy(dtype=np.int64), ranges["end_ns"].to_numpy(dtype=np.int64),
                              ints(ranges["pid"]), ints(ranges["tid"]), profiler_steps(ranges["name"]))
    return ranges.iloc[sel], left_out


INTERLEAVE_LABELS = ("idle", "overhead-bound")  # the verdicts other ranges' work can void
INTERLEAVED_SHARE = 0.1
"""A step whose idle time is at least this share filled by other ranges' GPU work is not idle."""


def _busy_within(u: Union, lo: int, hi: int) -> int:
    """ns of the merged intervals ``u`` inside ``[lo, hi)`` (by binary search: ``u`` may be a whole device's)."""
    before = covered_upto(u, np.array([lo, hi], dtype=np.int64))
    return int(before[1] - before[0])


SPAN_BOUND_LABELS = ("kernel-bound", "transfer-bound")  # verdicts about where the GPU time went
MIN_SPAN_SHARE = 0.1
"""A step whose own GPU activity spans less than this share of its wall time is not kernel- or
transfer-bound: its time went elsewhere (rooftop's threshold, docs/formulas.md#timelines)."""


def beyond_span(v: Verdict, own: Acts, wall_ns: int) -> Verdict:
    """A step's ``kernel-bound``/``transfer-bound`` verdict, unless its own GPU activity spans less
    than :data:`MIN_SPAN_SHARE` of its wall time: the verdict then describes only that span, the
    rest of the wall is host work or waiting on other GPU work, which the trace does not tell
    apart here, so the step is ``unknown`` (docs/formulas.md#timelines)."""
    if v.label not in SPAN_BOUND_LABELS or wall_ns <= 0 or not len(own.start):
        return v
    span = int(own.end.max()) - int(own.start.min())
    if span >= MIN_SPAN_SHARE * wall_ns:
        return v
    return Verdict("unknown", "unknown", [
        f"this range's own GPU activity spans {span / 1e9:.6f} s of its {wall_ns / 1e9:.6f} s wall time "
        f"({span / wall_ns:.1%}): '{v.label}' describes only that span; the rest is host work or waiting on "
        "other GPU work, which the range's runtime and sync calls would tell apart "
        "(docs/formulas.md#timelines)", *v.evidence], v.idle_split)


def interleaved(v: Verdict, mine: Union, gpu: Union) -> Verdict:
    """A step's ``idle``/``overhead-bound`` verdict, unless the GPU ran other ranges' work in its
    gaps: then the gaps are not this step's idle time and the verdict is ``unknown``, saying how
    much of them other work filled (docs/formulas.md#timelines). ``mine``: the busy union of the
    step's own activities; ``gpu``: that of all the device's activities (its own and others')."""
    if v.label not in INTERLEAVE_LABELS or not len(mine.starts):
        return v
    lo, hi = int(mine.starts[0]), int(mine.ends[-1])
    idle = (hi - lo) - mine.busy
    filled = _busy_within(gpu, lo, hi) - mine.busy
    if idle <= 0 or filled < INTERLEAVED_SHARE * idle:
        return v
    return Verdict("unknown", "unknown", [
        f"the GPU ran other ranges' work in {filled / idle:.0%} of this range's gaps "
        f"({filled / 1e9:.6f} s of {idle / 1e9:.6f} s): they are not idle time of this range, so "
        f"'{v.label}' does not follow; its own kernels' busy time is {mine.busy / 1e9:.6f} s "
        "(docs/formulas.md#timelines)", *v.evidence], v.idle_split)


def clipped(acts: Acts, lo: int, hi: int) -> Acts:
    """The activities running in ``[lo, hi)`` (zero-length ones starting in it), cut to it."""
    pos = (acts.end > acts.start) & (acts.start < hi) & (acts.end > lo)
    zero = (acts.end <= acts.start) & (acts.start >= lo) & (acts.start < hi)
    sub = acts.subset(np.flatnonzero(pos | zero))
    return Acts(sub.kind, np.clip(sub.start, lo, hi), np.clip(sub.end, lo, hi), sub.name, sub.names,
                sub.name_rank, sub.nccl, sub.stream, sub.streams)


def window_timeline(acts: Acts, lo: int, hi: int) -> DeviceTimeline:
    """A ProfilerStep on one device: the device's activity in the step's wall time ``[lo, hi)``,
    whichever step launched it (an activity across a boundary is cut at it), measured against the
    wall time: span = wall, idle = wall - busy, gaps include the idle time before the first and
    after the last activity (docs/formulas.md#timelines; TensorBoard's step time breakdown clips
    the same way)."""
    dt = device_metrics(clipped(acts, lo, hi), strip=False)
    dt.window = (lo, hi)
    gs, ge = dt.idle_intervals()
    gaps = ge - gs
    wall, busy = hi - lo, dt.busy.busy
    dt.metrics.update(span_s=round(wall / 1e9, 9), idle_s=round((wall - busy) / 1e9, 9),
                      idle_fraction=round((wall - busy) / wall, 9) if wall else None,
                      gaps=gap_stats(gaps), gap_histogram=gap_histogram(gaps))
    return dt


ITERATION = "DataLoader iteration "
LOADER_CATEGORY = 1  # causes.HOST_CATEGORIES.index("input pipeline")


def loader_iterations(host: HostActivity) -> tuple[list[str], np.ndarray, np.ndarray, int]:
    """Without ProfilerSteps, a training loop's iterations: from one ``enumerate(DataLoader)#...__next__``
    call to the next on the thread-less process that makes most of them (the last call opens an
    iteration the trace does not close: not listed); named ``DataLoader iteration N``
    (docs/formulas.md#timelines). Names, starts, ends and the process (:data:`NA`: none)."""
    sel = np.flatnonzero((host.cat == LOADER_CATEGORY) & (host.own < host.end) & (host.own == host.start))
    if len(sel) < 2:
        return [], np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), NA
    pids, counts = np.unique(host.pid[sel], return_counts=True)
    sel = sel[host.pid[sel] == pids[np.argmax(counts)]]
    starts = np.unique(host.start[sel])
    return [f"{ITERATION}{i + 1}" for i in range(len(starts) - 1)], starts[:-1], starts[1:], int(host.pid[sel[0]])
