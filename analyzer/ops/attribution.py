"""Each GPU activity to the host op that launched it (``docs/formulas.md#op-attribution``).

A kernel, copy or set is joined to its launch call (the runtime/driver row with the same correlation
id, and the same process where both rows have one); the launch call's start, on its process and
thread, falls inside a nest of host ops (:mod:`rooftop.analyzer.ops.hosts`); the innermost one that
holds it launched the activity. Not attributed, each with its reason:

- ``launch not in trace``: no launch call with its correlation id (work queued before the host side of
  the capture began, e.g. a warm-up step);
- ``graph replay``: launched by a CUDA/HIP graph launch; the graph's kernels were captured by ops the
  trace does not show, so they are never guessed;
- ``no enclosing op``: the launch call is outside every op and range of its thread.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rooftop.analyzer.ops.hosts import NA, host_table

GPU_KINDS = ("kernel", "memcpy", "memset")
LAUNCH_NOT_IN_TRACE = "launch not in trace"
GRAPH_REPLAY = "graph replay"
NO_ENCLOSING_OP = "no enclosing op"
REASONS = (LAUNCH_NOT_IN_TRACE, GRAPH_REPLAY, NO_ENCLOSING_OP)
# cudaGraphLaunch, cuGraphLaunch, hipGraphLaunch; pattern text with an inline flag: pandas 2.3's Arrow
# strings take no compiled pattern (the floor leg of the support matrix)
_GRAPH_LAUNCH = r"(?i)graph\w*launch"


@dataclass
class Attribution:
    """One input's GPU activities and the host ops they were attributed to.

    ``acts``: device, kind, name, start_ns, end_ns, stream, correlation, grid_dim, block_dim, bytes, ``op`` (row of ``hosts``,
    -1 when not attributed), ``reason`` (empty when attributed, else one of :data:`REASONS`), ``launch_ns`` and
    ``launch_pid`` (the launch call's start and process; :data:`NA` when none).
    ``hosts``: :func:`rooftop.analyzer.ops.hosts.host_table` (name, source, span, thread, arguments,
    ``parent``)."""

    acts: pd.DataFrame
    hosts: pd.DataFrame

    def ancestry(self, op: int) -> list[int]:
        """``op`` and its enclosing ops, innermost first."""
        parent = self.hosts["parent"].to_numpy(np.int64)
        out = []
        while op >= 0:
            out.append(op)
            op = int(parent[op])
        return out


def _ints(col: pd.Series) -> np.ndarray:
    out: np.ndarray = col.to_numpy(dtype=np.int64, na_value=NA)
    return out


def _launches(events: pd.DataFrame, acts: pd.DataFrame) -> pd.DataFrame:
    """Per activity: its launch call's start, pid, tid and name (missing when none)."""
    rt = events.loc[(events["kind"] == "runtime").to_numpy(dtype=bool, na_value=False),
                    ["correlation", "pid", "tid", "start_ns", "name"]]
    by_pid = bool(acts["pid"].notna().any() and rt["pid"].notna().any())
    keys = ["correlation", "pid"] if by_pid else ["correlation"]
    rt = rt[rt[keys].notna().all(axis=1)]
    first = rt.assign(l_pid=rt["pid"], l_tid=rt["tid"], l_start=rt["start_ns"], l_name=rt["name"])
    first = first.drop_duplicates(keys, keep="first")[[*keys, "l_pid", "l_tid", "l_start", "l_name"]]
    merged = acts[keys].merge(first, on=keys, how="left", sort=False)
    merged.index = acts.index
    return merged[["l_pid", "l_tid", "l_start", "l_name"]]


def _innermost(hosts: pd.DataFrame, pid: np.ndarray, tid: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Per launch (pid, tid, start t): the innermost host row of that thread whose span holds t, else -1."""
    out = np.full(len(t), -1, dtype=np.int64)
    if not len(hosts) or not len(t):
        return out
    hp, ht = _ints(hosts["pid"]), _ints(hosts["tid"])
    hs, he = hosts["start_ns"].to_numpy(np.int64), hosts["end_ns"].to_numpy(np.int64)
    parent = hosts["parent"].to_numpy(np.int64)
    bounds = np.flatnonzero(np.r_[True, (hp[1:] != hp[:-1]) | (ht[1:] != ht[:-1]), True])
    for lo, hi in itertools.pairwise(bounds.tolist()):
        mine = (pid == hp[lo]) & (tid == ht[lo]) & (t != NA)
        if not mine.any():
            continue
        tm = t[mine]
        # the last op of the thread starting at or before t (longest first on ties: the innermost of
        # ops starting together is the last of them), then out through its parents until one holds t
        pos = lo + np.searchsorted(hs[lo:hi], tm, side="right") - 1
        cand = np.where(pos >= lo, pos, -1)
        while True:
            bad = (cand >= 0) & (he[np.maximum(cand, 0)] < tm)
            if not bad.any():
                break
            cand = np.where(bad, parent[np.maximum(cand, 0)], cand)
        out[np.flatnonzero(mine)] = cand
    return out


def attribute(events: pd.DataFrame, ops: pd.DataFrame) -> Attribution:
    """Attribute every GPU activity of one input's events table to the op that launched it."""
    hosts = host_table(events, ops)
    is_act = events["kind"].isin(GPU_KINDS).to_numpy(dtype=bool, na_value=False)
    acts = events.loc[is_act, ["device", "kind", "name", "start_ns", "end_ns", "stream", "pid",
                               "correlation", "grid_dim", "block_dim", "bytes"]].reset_index(drop=True)
    launch = _launches(events, acts)
    has_launch = launch["l_start"].notna().to_numpy()
    graph = launch["l_name"].fillna("").str.contains(_GRAPH_LAUNCH).to_numpy(dtype=bool)
    op = _innermost(hosts, _ints(launch["l_pid"]), _ints(launch["l_tid"]), _ints(launch["l_start"]))
    op = np.where(has_launch & ~graph, op, -1)
    reason = np.where(~has_launch, LAUNCH_NOT_IN_TRACE,
                      np.where(graph, GRAPH_REPLAY, np.where(op < 0, NO_ENCLOSING_OP, "")))
    acts = acts.drop(columns=["pid"]).assign(op=op, reason=pd.array(reason, dtype="string"),
                                             launch_ns=_ints(launch["l_start"]), launch_pid=_ints(launch["l_pid"]))
    return Attribution(acts=acts, hosts=hosts)


def coverage_times(att: Attribution) -> dict[str, dict[str, int]]:
    """Per device: GPU time (ns) in all, with a recorded launch, attributed, and per reason."""
    a = att.acts
    dur = (a["end_ns"] - a["start_ns"]).to_numpy(np.int64)
    out: dict[str, dict[str, int]] = {}
    for device, idx in a.groupby(a["device"].fillna(""), sort=True).indices.items():
        r = a["reason"].to_numpy(dtype=object)[idx]
        d = dur[idx]
        row = {"gpu_ns": int(d.sum()), "attributed_ns": int(d[r == ""].sum())}
        row.update({reason: int(d[r == reason].sum()) for reason in REASONS})
        out[str(device)] = row
    return out
