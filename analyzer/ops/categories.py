"""GPU time by op category per device, and the largest ops of each ProfilerStep
(``docs/formulas.md#op-categories``), from the op -> kernel attribution.

Categories are the formula table's (:mod:`rooftop.analyzer.ops.formulas`); the GPU time no op launched is
one more row, ``unattributed``. The split is ``known`` only where at least :data:`COVERAGE_MIN` of the
device's GPU time was attributed: then every category's share is known to within the unattributed rest."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.ops.attribution import Attribution
from rooftop.analyzer.ops.hosts import NA
from rooftop.analyzer.ops.signatures import Signature

CATEGORIES = ("gemm", "conv", "attention", "softmax", "norm", "reduce", "elementwise", "embedding", "copy",
              "communication", "other")
UNATTRIBUTED = "unattributed"
COVERAGE_MIN = 0.95
"""The attributed share of a device's GPU time at and above which its category split is ``known``: each
share is then exact to within 5 points (issue 26's attribution goal); below it ``unknown``, the shares
being lower bounds (CUDA-graph replay, work launched before the capture)."""
TOP_STEP_OPS = 5
_STEP = r"^ProfilerStep#\d+$"


def _sec(ns: float) -> float:
    return round(ns / 1e9, 9)


def category_split(sigs: list[Signature], device: str, gpu_ns: int, attributed_ns: int) -> dict[str, Any]:
    """``categories`` (one row per category with GPU time, largest first, then ``unattributed``) and
    ``categories_status`` for one device."""
    by = pd.Series([s.time_ns for s in sigs if s.device == device],
                   index=[s.modelled.category for s in sigs if s.device == device], dtype="int64")
    sums = by.groupby(level=0, sort=False).sum() if len(by) else by
    order = sorted(((str(c), int(ns)) for c, ns in sums.items() if ns > 0),
                   key=lambda kv: (-kv[1], CATEGORIES.index(kv[0]) if kv[0] in CATEGORIES else len(CATEGORIES)))
    rest = gpu_ns - attributed_ns
    rows = [{"category": c, "time_s": _sec(ns), "share": round(ns / gpu_ns, 6) if gpu_ns else None}
            for c, ns in order]
    if rest > 0:
        rows.append({"category": UNATTRIBUTED, "time_s": _sec(rest), "share": round(rest / gpu_ns, 6) if gpu_ns else None})
    covered = attributed_ns / gpu_ns if gpu_ns else 0.0
    return {"categories": rows, "categories_status": "known" if covered >= COVERAGE_MIN else "unknown"}


def step_ops(att: Attribution, sigs: list[Signature], events: pd.DataFrame, top: int = TOP_STEP_OPS
             ) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (ProfilerStep name, device): the GPU time attributed to ops launched in the step (the launch call
    started inside the step's span, on its process, as docs/formulas.md#timelines places work in steps)
    and its ``top`` ops by that time (name, category, calls, kernel time)."""
    kind = events["kind"].to_numpy(dtype=object)
    names = events["name"].astype("string")
    is_step = (kind == "range") & names.str.match(_STEP).to_numpy(dtype=bool, na_value=False)
    steps = events.loc[is_step, ["name", "start_ns", "end_ns", "pid"]]
    a = att.acts
    a = a[(a["op"] >= 0).to_numpy() & (a["launch_ns"] != NA).to_numpy()]
    if not len(steps) or not len(a):
        return {}
    s_pid = steps["pid"].to_numpy(dtype=np.int64, na_value=NA)
    s_start, s_end = steps["start_ns"].to_numpy(np.int64), steps["end_ns"].to_numpy(np.int64)
    t, pid = a["launch_ns"].to_numpy(np.int64), a["launch_pid"].to_numpy(np.int64)
    step = np.full(len(a), -1, dtype=np.int64)
    for p in np.unique(s_pid):  # per process: its steps in start order (ProfilerSteps do not overlap)
        mine = np.flatnonzero(s_pid == p)
        mine = mine[np.argsort(s_start[mine], kind="stable")]
        sel = np.flatnonzero((pid == p) | (p == NA) | (pid == NA))
        k = np.searchsorted(s_start[mine], t[sel], side="right") - 1
        ok = (k >= 0) & (t[sel] < s_end[mine[np.maximum(k, 0)]])
        step[sel[ok]] = np.where(step[sel[ok]] < 0, mine[k[ok]], step[sel[ok]])
    hit = step >= 0
    if not hit.any():
        return {}
    op = a["op"].to_numpy(np.int64)[hit]
    host_names = att.hosts["name"].astype(str).to_numpy(dtype=object)
    cat_of = {s.name: s.modelled.category for s in sigs}
    df = pd.DataFrame({"step": step[hit], "device": a["device"].fillna("").astype(str).to_numpy(dtype=object)[hit],
                       "name": host_names[op], "op": op,
                       "dur": (a["end_ns"] - a["start_ns"]).to_numpy(np.int64)[hit]})
    g = df.groupby(["step", "device", "name"], sort=False).agg(ns=("dur", "sum"), calls=("op", "nunique")).reset_index()
    g = g.sort_values(["step", "device", "ns", "name"], ascending=[True, True, False, True], kind="stable")
    totals = df.groupby(["step", "device"], sort=False)["dur"].sum()
    step_names = steps["name"].astype(str).to_numpy(dtype=object)
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for (si, dev), part in g.groupby(["step", "device"], sort=False):
        rows = part.head(top)
        out[(str(step_names[int(si)]), str(dev))] = {
            "attributed_s": _sec(int(totals[(si, dev)])),
            "top_ops": [{"name": str(n), "category": cat_of.get(str(n), "other"), "calls": int(c),
                         "kernel_time_s": _sec(int(ns))}
                        for n, c, ns in zip(rows["name"], rows["calls"], rows["ns"], strict=True)]}
    return out
