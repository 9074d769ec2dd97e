"""Steps: the per-device breakdown for each ``ProfilerStep#N`` and each top-level NVTX /
``record_function`` range (``docs/formulas.md#timelines``).

A GPU activity belongs to a range when the CUDA call that launched it (joined on correlation id,
and process where the file has one) started inside the range, on the same process; an activity
whose launch call is not in the file is placed by its own start time. Ranges nested inside
another range of the same thread are not listed (their parent is).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.timeline.labels import Verdict
from rooftop.analyzer.timeline.metrics import Acts, Union, union

MAX_STEPS = 200  # ProfilerStep ranges listed per input; the rest are counted (lint)
MAX_RANGES = 50  # other top-level ranges listed per input: the longest
PROFILER_STEP = re.compile(r"^ProfilerStep#\d+$")


def launch_times(act: pd.DataFrame, runtime: pd.DataFrame) -> np.ndarray:
    """Per activity row: the start ns of its launching runtime call, else its own start."""
    own = act["start_ns"].to_numpy(dtype=np.int64)
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
    return np.where(missing, own, launch.fillna(0).to_numpy(dtype=np.int64))


def top_level_ranges(ranges: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """ProfilerStep ranges (the first :data:`MAX_STEPS`), plus the :data:`MAX_RANGES` longest ranges
    not contained in an earlier range of the same thread; in start order, with the number left out."""
    if not len(ranges):
        return ranges, 0
    r = ranges[ranges["end_ns"] > ranges["start_ns"]].sort_values(["start_ns", "end_ns"],
                                                                   ascending=[True, False])
    thread = r["pid"].astype("string").fillna("") + ":" + r["tid"].astype("string").fillna("")
    prev_max = r.groupby(thread.to_numpy(), sort=False)["end_ns"].transform(
        lambda s: s.cummax().shift(1, fill_value=np.iinfo(np.int64).min))
    is_step = r["name"].fillna("").str.match(PROFILER_STEP).to_numpy(dtype=bool)
    top = ~is_step & (r["start_ns"].to_numpy() >= prev_max.to_numpy())
    steps, others = r[is_step], r[top]
    wall = others["end_ns"] - others["start_ns"]
    longest = others.loc[wall.sort_values(ascending=False, kind="mergesort").index[:MAX_RANGES]]
    out = pd.concat([steps.head(MAX_STEPS), longest]).sort_values(["start_ns", "end_ns"])
    return out, max(0, len(steps) - MAX_STEPS) + max(0, len(others) - MAX_RANGES)


def step_members(rng: Any, launch: np.ndarray, act_pid: np.ndarray | None) -> np.ndarray:
    """Boolean mask of the activities attributed to one range row."""
    mask = (launch >= rng.start_ns) & (launch < rng.end_ns)
    if act_pid is not None and not pd.isna(rng.pid):
        mask &= (act_pid == int(rng.pid)) | (act_pid < 0)
    return mask


INTERLEAVED_SHARE = 0.1
"""A step whose idle time is at least this share filled by other ranges' GPU work is not idle."""


def _busy_within(u: Union, lo: int, hi: int) -> int:
    """ns of the merged intervals ``u`` inside ``[lo, hi)``."""
    return int(np.clip(np.minimum(u.ends, hi) - np.maximum(u.starts, lo), 0, None).sum())


def interleaved(v: Verdict, own: Acts, others: Acts) -> Verdict:
    """A step's ``idle``/``overhead-bound`` verdict, unless the GPU ran other ranges' work in its
    gaps: then the gaps are not this step's idle time and the verdict is ``unknown``, saying how
    much of them other work filled (docs/formulas.md#timelines)."""
    if v.label not in ("idle", "overhead-bound"):
        return v
    mine = union(own.start, own.end)
    if not len(mine.starts):
        return v
    lo, hi = int(mine.starts[0]), int(mine.ends[-1])
    idle = (hi - lo) - mine.busy
    both = union(np.concatenate([own.start, others.start]), np.concatenate([own.end, others.end]))
    filled = _busy_within(both, lo, hi) - mine.busy
    if idle <= 0 or filled < INTERLEAVED_SHARE * idle:
        return v
    return Verdict("unknown", "unknown", [
        f"the GPU ran other ranges' work in {filled / idle:.0%} of this range's gaps "
        f"({filled / 1e9:.6f} s of {idle / 1e9:.6f} s): they are not idle time of this range, so "
        f"'{v.label}' does not follow; its own kernels' busy time is {mine.busy / 1e9:.6f} s "
        "(docs/formulas.md#timelines)", *v.evidence], v.idle_split)
