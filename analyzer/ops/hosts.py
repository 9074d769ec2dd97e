"""The host ops a kernel can be attributed to, and how they nest (``docs/formulas.md#op-attribution``).

One table per input: the Kineto ``cpu_op`` rows (the parsers' op table, with their recorded arguments)
and the ``record_function`` / NVTX ranges of the events table (``ProfilerStep#N`` left out: a step is
not an op). An NVTX range written by ``torch.autograd.profiler.emit_nvtx`` (``aten::mm, seq = 3,
op_id = 7, sizes = [[8, 16], [16, 4]]``) is named by its op (``aten::mm``) and its ``sizes`` become the
op's ``input_dims``. Each row gets ``parent``: the row of the innermost op on the same process and
thread whose span holds it (-1 at top level).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from rooftop.parsers.model import OP_COLUMNS

HOST_COLUMNS = ("name", "source", "start_ns", "end_ns", "pid", "tid", "external_id", "input_dims",
                "input_types", "input_strides", "concrete_inputs", "collective")
_EMIT_NVTX = re.compile(r"^(?P<name>[^,]+?), (?:seq|op_id|sizes|input_op_ids) = ")
_SIZES = re.compile(r"\bsizes = (\[.*?\]\])(?:, [a-z_]+ = |$)")
_STEP = r"^ProfilerStep#\d+$"  # text, not compiled: pandas 2.3's Arrow strings take no compiled pattern
NA = np.iinfo(np.int64).min


def _nvtx_name(text: str) -> tuple[str, str | None]:
    """``(op name, input_dims JSON or None)`` of an ``emit_nvtx`` range text; other texts unchanged."""
    m = _EMIT_NVTX.match(text)
    if not m:
        return text, None
    sizes = _SIZES.search(text)
    dims = None
    if sizes:
        try:
            dims = json.dumps(json.loads(sizes.group(1)), separators=(",", ":"))
        except ValueError:
            dims = None
    return m.group("name"), dims


def host_table(events: pd.DataFrame, ops: pd.DataFrame) -> pd.DataFrame:
    """Ops and ranges of one input, sorted by (pid, tid, start, longest first), with ``parent``."""
    parts = []
    if len(ops):
        parts.append(ops.loc[:, [c for c in OP_COLUMNS if c != "input"]].assign(source="cpu_op"))
    is_range = (events["kind"] == "range").to_numpy(dtype=bool, na_value=False)
    if is_range.any():
        rng = events.loc[is_range, ["name", "start_ns", "end_ns", "pid", "tid"]]
        rng = rng[~rng["name"].fillna("").str.match(_STEP)]
        named = [_nvtx_name(t) for t in rng["name"].fillna("").tolist()]
        rng = rng.assign(name=pd.array([n for n, _ in named], dtype="string"),
                         input_dims=pd.array([d for _, d in named], dtype="string"), source="range")
        parts.append(rng)
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in (*HOST_COLUMNS, "parent")})
    hosts = pd.concat(parts, ignore_index=True).reindex(columns=list(HOST_COLUMNS))
    for col in ("input_types", "input_strides", "concrete_inputs", "input_dims", "name", "source", "collective"):
        hosts[col] = hosts[col].astype("string")
    for col in ("pid", "tid", "external_id"):
        hosts[col] = hosts[col].astype("Int64")
    pid, tid = _ints(hosts["pid"]), _ints(hosts["tid"])
    start, end = hosts["start_ns"].to_numpy(np.int64), hosts["end_ns"].to_numpy(np.int64)
    order = np.lexsort((-end, start, tid, pid))
    hosts = hosts.iloc[order].reset_index(drop=True)
    hosts["parent"] = parents(pid[order], tid[order], start[order], end[order])
    return _inherit_collective(hosts)


def _inherit_collective(hosts: pd.DataFrame) -> pd.DataFrame:
    """A collective's range (``nccl:all_reduce``) sits inside the ``record_param_comms`` op that carries
    its sizes: the range takes them from its parent."""
    coll = hosts["collective"]
    parent = hosts["parent"].to_numpy(np.int64)
    take = coll.isna().to_numpy() & (parent >= 0)
    if take.any():
        from_parent = coll.to_numpy(dtype=object, na_value=None)[np.maximum(parent, 0)]
        values = np.where(take, from_parent, coll.to_numpy(dtype=object, na_value=None))
        hosts["collective"] = pd.array(values, dtype="string")
    return hosts


def _ints(col: pd.Series) -> np.ndarray:
    out: np.ndarray = col.to_numpy(dtype=np.int64, na_value=NA)
    return out


def parents(pid: np.ndarray, tid: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per row (sorted by pid, tid, start, -end): the innermost earlier row of the same thread whose
    span holds it, else -1. A stack sweep: an op that only overlaps its predecessor is not nested."""
    out = [-1] * len(start)
    ends = end.tolist()
    stack: list[int] = []
    prev: tuple[int, int] | None = None
    for i, (p, t, e) in enumerate(zip(pid.tolist(), tid.tolist(), ends, strict=True)):
        if (p, t) != prev:
            stack.clear()
            prev = (p, t)
        while stack and ends[stack[-1]] < e:
            stack.pop()
        if stack:
            out[i] = stack[-1]
        stack.append(i)
    return np.asarray(out, dtype=np.int64)
