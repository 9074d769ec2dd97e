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
    ranges = events.loc[(events["kind"] == "range").to_numpy(dtype=bool, na_value=False),
                        ["name", "start_ns", "end_ns", "pid"]]
    steps = ranges[ranges["name"].astype("string").str.match(_STEP).to_numpy(dtype=bool, na_value=False)]
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
    name_code, host_names = att.hosts["name"].fillna("").factorize(sort=False)
    dev_code, devices = pd.factorize(a["device"].to_numpy(dtype=object, na_value="")[hit], sort=False)
    dur = (a["end_ns"] - a["start_ns"]).to_numpy(np.int64)[hit]
    n_names, n_dev = len(host_names) + 1, len(devices) + 1
    cell = step[hit] * n_dev + dev_code  # one (step, device)
    key = cell * n_names + name_code[op]  # one (step, device, op name)
    keys, g = np.unique(key, return_inverse=True)
    g = g.reshape(-1)
    ns = np.bincount(g, weights=dur, minlength=len(keys)).astype(np.int64)
    pairs = np.unique(g.astype(np.int64) * (int(op.max()) + 1) + op)  # distinct (group, op call)
    calls = np.bincount(pairs // (int(op.max()) + 1), minlength=len(keys))
    k_cell = keys // n_names
    order = np.lexsort((keys % n_names, -ns, k_cell))  # per (step, device): most time first, then by name
    cells, first = np.unique(k_cell[order], return_index=True)
    cell_ns = np.bincount(np.searchsorted(cells, cell), weights=dur, minlength=len(cells)).astype(np.int64)
    step_names = steps["name"].astype(str).to_numpy(dtype=object)
    cat_of = {s.name: s.modelled.category for s in sigs}
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for j, c in enumerate(cells.tolist()):  # one row per (step, device): at most a few hundred
        rows = order[first[j]:first[j] + top]
        rows = rows[k_cell[rows] == c]
        names = [str(host_names[int(k % n_names)]) for k in keys[rows].tolist()]
        out[(str(step_names[c // n_dev]), str(devices[c % n_dev]))] = {
            "attributed_s": _sec(int(cell_ns[j])),
            "top_ops": [{"name": n, "category": cat_of.get(n, "other"), "calls": int(calls[r]),
                         "kernel_time_s": _sec(int(ns[r]))} for n, r in zip(names, rows.tolist(), strict=True)]}
    return out
