"""Plain reference implementations of the vectorised timeline steps (``docs/formulas.md#timelines``):
slow, written to be read, and held equal to the fast ones by ``tests/test_timeline_reference.py``
(hypothesis). Not used by the analysis itself."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rooftop.analyzer.timeline.steps import MAX_RANGES, MAX_STEPS, PROFILER_STEP


def union_reference(start: list[int], end: list[int]) -> list[tuple[int, int]]:
    """Merged intervals: positive-length ones, sorted by (start, end), an interval starting at or
    before the merged end joins it."""
    merged: list[list[int]] = []
    for s, e in sorted((s, e) for s, e in zip(start, end, strict=True) if e > s):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return [(s, e) for s, e in merged]


def step_members_reference(lo: int, hi: int, pid: int | None, launch: np.ndarray,
                           act_pid: np.ndarray | None) -> np.ndarray:
    """Boolean mask of the activities that belong to the range ``[lo, hi)`` of process ``pid``:
    launched inside it, on its process where activities have one (``act_pid`` -1: unknown, kept)."""
    mask: np.ndarray = (launch >= lo) & (launch < hi)
    if act_pid is not None and pid is not None:
        mask &= (act_pid == pid) | (act_pid < 0)
    return mask


def launch_times_reference(act: pd.DataFrame, runtime: pd.DataFrame) -> np.ndarray:
    """Per activity row (``start_ns``, ``correlation``, ``pid``): the start of the first runtime call
    with its correlation id (and process, where both sides have processes), else its own start."""
    own: np.ndarray = act["start_ns"].to_numpy(dtype=np.int64)
    if not len(runtime) or act["correlation"].isna().all():
        return own
    keys = ["correlation"]
    if act["pid"].notna().any() and runtime["pid"].notna().any():
        keys.append("pid")
    rt = runtime.dropna(subset=keys).drop_duplicates(subset=keys, keep="first")
    left = act[keys].reset_index(drop=True)
    right = rt[[*keys, "start_ns"]].rename(columns={"start_ns": "launch"})
    merged = left.merge(right, on=keys, how="left", sort=False)
    launch = merged["launch"].astype("Int64")  # never through float64: epoch ns need 19 digits
    missing = launch.isna().to_numpy()
    out: np.ndarray = np.where(missing, own, launch.fillna(0).to_numpy(dtype=np.int64))
    return out


def top_level_ranges_reference(ranges: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """ProfilerStep ranges (the first ``MAX_STEPS``), plus the ``MAX_RANGES`` longest ranges not
    contained in an earlier range of the same thread; in start order, with the number left out."""
    if not len(ranges):
        return ranges, 0
    r = ranges[ranges["end_ns"] > ranges["start_ns"]].sort_values(["start_ns", "end_ns"],
                                                                   ascending=[True, False])
    thread = r["pid"].astype("string").fillna("") + ":" + r["tid"].astype("string").fillna("")
    prev_max = r.groupby(thread.to_numpy(), sort=False)["end_ns"].transform(
        lambda s: s.cummax().shift(1, fill_value=np.iinfo(np.int64).min))
    is_step = r["name"].fillna("").str.match(PROFILER_STEP.pattern).to_numpy(dtype=bool)
    top = ~is_step & (r["start_ns"].to_numpy() >= prev_max.to_numpy())
    steps, others = r[is_step], r[top]
    wall = others["end_ns"] - others["start_ns"]
    longest = others.loc[wall.sort_values(ascending=False, kind="mergesort").index[:MAX_RANGES]]
    out = pd.concat([steps.head(MAX_STEPS), longest]).sort_values(["start_ns", "end_ns"])
    return out, max(0, len(steps) - MAX_STEPS) + max(0, len(others) - MAX_RANGES)


def _ns(spans: list[tuple[int, int]]) -> set[int]:
    return {t for s, e in spans for t in range(s, e)}


def set_algebra_reference(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> tuple[set[int], set[int]]:
    """The ns in both, and the ns in ``a`` only (small integer spans, one ns at a time)."""
    return _ns(a) & _ns(b), _ns(a) - _ns(b)


def idle_split_reference(gaps: list[tuple[int, int]], sync: list[tuple[int, int]],
                         cats: list[list[tuple[int, int]]], short_ns: int) -> tuple[int, int, int, list[int], int]:
    """Each idle ns: ``sync`` if a sync span holds it; else ``launch`` if its gap is shorter than
    ``short_ns``; else ``host``, given to the first category that holds it, else untraced."""
    blocked = _ns(sync)
    covers = [_ns(c) for c in cats]
    n_sync = n_launch = n_host = untraced = 0
    by = [0] * len(cats)
    for s, e in gaps:
        for t in range(s, e):
            if t in blocked:
                n_sync += 1
            elif e - s < short_ns:
                n_launch += 1
            else:
                n_host += 1
                hit = next((i for i, c in enumerate(covers) if t in c), None)
                if hit is None:
                    untraced += 1
                else:
                    by[hit] += 1
    return n_sync, n_launch, n_host, by, untraced


def exclusive_group_cummax_reference(values: list[int], groups: list[int]) -> list[int]:
    """Per position: the max of the values at earlier positions of the same group (int64 min if none)."""
    out: list[int] = []
    best: dict[int, int] = {}
    for v, g in zip(values, groups, strict=True):
        out.append(best.get(g, np.iinfo(np.int64).min))
        best[g] = max(best.get(g, v), v)
    return out


def group_codes_reference(*cols: np.ndarray) -> np.ndarray:
    """One code per distinct row of the int64 columns, in sorted order of the rows (``np.unique``)."""
    key = np.zeros(len(cols[0]), dtype=np.int64)
    for col in cols:
        vals, code = np.unique(col, return_inverse=True)
        key = key * len(vals) + code.reshape(-1)
    out: np.ndarray = np.unique(key, return_inverse=True)[1].reshape(-1)
    return out
