"""Where a GPU's idle time went (``docs/formulas.md#timelines``, "Idle by cause").

Each idle ns of a device (a gap between its merged busy intervals, or, for a ProfilerStep, any ns
of the step's wall time the device was not busy) gets one cause:

- ``sync``: the host was blocked in a synchronising call then (the gap's overlap with the sync
  cover; only that part, never the whole gap the call touches);
- ``launch``: the rest of a gap shorter than 10 µs (the launch-latency scale);
- ``host``: the rest of a gap of 10 µs or more, split by what the host was running, first match
  in the order of TensorBoard's step-time breakdown (its ``ProfileRole``: Runtime, DataLoader,
  CpuOp, Other), with the optimizer and annotation classes rooftop adds:
  ``CUDA runtime`` (a CUDA/HIP call that is not a sync), ``input pipeline`` (PyTorch's
  ``enumerate(DataLoader)#<iterator>.__next__`` record), ``optimizer`` (``Optimizer.step#`` /
  ``Optimizer.zero_grad#``), ``CPU ops`` (``aten::`` and other PyTorch operator events),
  ``annotations`` (other NVTX / ``record_function`` ranges, ProfilerStep excluded), and
  ``untraced`` (no host event recorded at that time: Python or other work the trace does not hold).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rooftop.analyzer.timeline.arrays import exclusive_group_cummax, group_codes, ints
from rooftop.analyzer.timeline.intervals import clip, inside, intersect, subtract
from rooftop.analyzer.timeline.metrics import GAP_SHORT_NS, Union, union

HOST_CATEGORIES = ("CUDA runtime", "input pipeline", "optimizer", "CPU ops", "annotations")
UNTRACED = "untraced"
OP_KIND = "op"  # a row of the parsers' op table (Kineto cpu_op / 2021 Operator), where read
TOP_NAMES = 3
_DATALOADER = re.compile(r"^enumerate\(DataLoader\)#.*\.__next__$")
_OPTIMIZER = re.compile(r"^Optimizer\.(step|zero_grad)#")
_NVTX_SUFFIX = re.compile(r",\s*(seq|op_id|sizes)\s*=.*$")  # torch.autograd.profiler.emit_nvtx ranges


def op_name(name: str) -> str:
    """A name as grouped in the evidence: ``aten::to, op_id = 7`` (emit_nvtx) -> ``aten::to``."""
    return _NVTX_SUFFIX.sub("", name)


def _name_flags(uniq: pa.Array) -> dict[str, np.ndarray]:
    """Per distinct name: ``aten``, ``step`` (ProfilerStep), ``loader``, ``optim`` (Arrow compute)."""
    def flag(fn: Any, pattern: str) -> np.ndarray:
        out: np.ndarray = np.asarray(fn(uniq, pattern).fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
        return out

    return {"aten": flag(pc.starts_with, "aten::"), "step": flag(pc.starts_with, "ProfilerStep#"),
            "loader": flag(pc.match_substring_regex, _DATALOADER.pattern),
            "optim": flag(pc.match_substring_regex, _OPTIMIZER.pattern)}


def host_category(kind: np.ndarray, code: np.ndarray, uniq: pa.Array, sync: np.ndarray) -> np.ndarray:
    """The :data:`HOST_CATEGORIES` index of each host event (-1: not a host activity: a sync call,
    which is ``sync``; a ProfilerStep, which holds everything); ``code``: each event's name as a
    position in ``uniq``, the distinct names."""
    out = np.full(len(kind), -1, dtype=np.int64)
    flags = {k: v[code] for k, v in _name_flags(uniq).items()}
    is_rt = (kind == "runtime") & ~sync
    is_range = kind == "range"
    is_op = kind == OP_KIND
    hosty = is_range | is_op
    out[is_range & ~flags["step"]] = 4
    out[is_op | (is_range & flags["aten"])] = 3
    out[hosty & flags["optim"]] = 2
    out[hosty & flags["loader"]] = 1
    out[is_rt] = 0
    return out


@dataclass
class HostActivity:
    """The host events of one input that can explain idle time, per :data:`HOST_CATEGORIES`."""

    start: np.ndarray
    end: np.ndarray
    cat: np.ndarray
    pid: np.ndarray  # int64, NA = int64 min
    own: np.ndarray  # int64: where the event's own part starts (after every earlier event of its category)
    code: np.ndarray  # int64: the event's grouped name (:func:`op_name`), a position in ``labels``
    labels: pa.Array  # the grouped names (Arrow strings)
    _covers: dict[tuple[int, ...], list[Union]] = field(default_factory=dict)
    _keep: dict[tuple[int, ...], list[np.ndarray]] = field(default_factory=dict)

    def rows(self, pids: tuple[int, ...], cat: int) -> np.ndarray:
        """Positions of the events of category ``cat`` and processes ``pids`` (all when empty)
        with an own part, in start order of their own part."""
        if pids not in self._keep:
            keep = np.isin(self.pid, pids) if pids else np.ones(len(self.pid), dtype=bool)
            keep &= self.own < self.end
            self._keep[pids] = [np.flatnonzero(keep & (self.cat == c)) for c in range(len(HOST_CATEGORIES))]
        return self._keep[pids][cat]

    def covers(self, pids: tuple[int, ...]) -> list[Union]:
        """One union per category, of the events of processes ``pids`` (all when empty)."""
        if pids not in self._covers:
            self._covers[pids] = [union(self.own[i], self.end[i])
                                  for i in (self.rows(pids, c) for c in range(len(HOST_CATEGORIES)))]
        return self._covers[pids]


@dataclass
class IdleSplit:
    """Idle ns by cause, the ``host`` part by what the host ran, and the names that ran longest."""

    sync: int = 0
    launch: int = 0
    host: int = 0
    host_by: dict[str, int] = field(default_factory=dict)
    top: dict[str, list[tuple[str, int]]] = field(default_factory=dict)

    def causes(self) -> dict[str, int]:
        return {"sync": self.sync, "launch": self.launch, "host": self.host}


def _window(u: Union, lo: int, hi: int) -> Union:
    """``u`` clipped to ``[lo, hi)``, found by binary search first (``u`` is sorted)."""
    i = int(np.searchsorted(u.ends, lo, side="right"))
    j = int(np.searchsorted(u.starts, hi, side="left"))
    return clip(Union(u.starts[i:j], u.ends[i:j]), lo, hi)


def split_idle(gap_s: np.ndarray, gap_e: np.ndarray, sync: Union, host: HostActivity | None = None,
               pids: tuple[int, ...] = (), names: bool = True) -> IdleSplit:
    """The causes of the idle intervals ``[gap_s, gap_e)`` (sorted, disjoint), rules in the module
    docstring; ``host`` None: the ``host`` part is not split; ``names``: list the longest events."""
    g = gap_e - gap_s
    if not len(g):
        return IdleSplit()
    blocked = inside(sync, gap_s, gap_e)
    rest = g - blocked
    short = g < GAP_SHORT_NS
    out = IdleSplit(int(blocked.sum()), int(rest[short].sum()), int(rest[~short].sum()))
    if host is None or not out.host:
        return out
    lo, hi = int(gap_s[0]), int(gap_e[-1])
    remaining = subtract(Union(gap_s[~short], gap_e[~short]), _window(sync, lo, hi))
    for c, cover in enumerate(host.covers(pids)):
        part = intersect(remaining, _window(cover, lo, hi))
        ns = part.busy
        if ns:
            name = HOST_CATEGORIES[c]
            out.host_by[name] = ns
            if names:
                out.top[name] = _top_names(host, c, part, pids)
            remaining = subtract(remaining, part)
    if remaining.busy:
        out.host_by[UNTRACED] = remaining.busy
    return out


def _top_names(host: HostActivity, cat: int, part: Union, pids: tuple[int, ...]) -> list[tuple[str, int]]:
    """The outermost events of category ``cat`` grouped by name, by their ns inside ``part``."""
    lo, hi = int(part.starts[0]), int(part.ends[-1])
    idx = host.rows(pids, cat)
    idx = idx[(host.own[idx] < hi) & (host.end[idx] > lo)]
    if not len(idx):
        return []
    ns = inside(part, host.own[idx], host.end[idx])
    code = host.code[idx]
    uniq, first, inv = np.unique(code, return_index=True, return_inverse=True)
    total = np.zeros(len(uniq), dtype=np.int64)
    np.add.at(total, inv.reshape(-1), ns)
    order = np.lexsort((first, -total))[:TOP_NAMES]  # longest first, ties by first appearance
    return [(str(host.labels[int(uniq[i])].as_py()), int(total[i])) for i in order if total[i] > 0]




def _names(col: pd.Series, rows: np.ndarray) -> pa.Array:
    """The names of ``rows`` of a string column as one Arrow array (nulls as "")."""
    arr = pa.chunked_array([pa.array(col.array)]).combine_chunks().cast(pa.large_string())
    return arr.take(pa.array(rows, type=pa.int64())).fill_null("")


def host_activity(ev: pd.DataFrame, blocking: np.ndarray, ops: pd.DataFrame | None = None) -> HostActivity:
    """The host events of ``ev`` (and the op table ``ops``, as kind ``op``) by category;
    ``blocking``: positions of the rows of ``ev`` that block the host (sync records, blocking
    calls), which are ``sync``, not host activity. Names are handled once per distinct name."""
    kind_s = ev["kind"]
    is_rt = (kind_s == "runtime").to_numpy(dtype=bool, na_value=False)
    is_range = (kind_s == "range").to_numpy(dtype=bool, na_value=False)
    is_rt[blocking] = False
    rows = np.flatnonzero(is_rt | is_range)
    parts = [(ev, rows, np.where(is_rt[rows], 0, 1))]  # 0 runtime, 1 range, 2 op
    if ops is not None and len(ops):
        parts.append((ops, np.arange(len(ops)), np.full(len(ops), 2)))
    names = pa.concat_arrays([_names(f["name"], r) for f, r, _ in parts])
    src = np.concatenate([k for _, _, k in parts])
    start = np.concatenate([f["start_ns"].to_numpy(dtype=np.int64)[r] for f, r, _ in parts])
    end = np.concatenate([f["end_ns"].to_numpy(dtype=np.int64)[r] for f, r, _ in parts])
    pid = np.concatenate([ints(f["pid"])[r] for f, r, _ in parts])
    enc = pc.dictionary_encode(names)
    code = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    kind = np.array(["runtime", "range", OP_KIND], dtype=object)[src]
    cat = host_category(kind, code, enc.dictionary, np.zeros(len(src), dtype=bool))
    keep = np.flatnonzero(cat >= 0)
    start, end, pid, cat, code = start[keep], end[keep], pid[keep], cat[keep], code[keep]
    own = start.copy()
    if len(keep):  # an event's own part: after every earlier event of its category and process
        order = np.lexsort((-end, start))
        own[order] = np.maximum(start[order], exclusive_group_cummax(end[order], group_codes(pid[order], cat[order])))
    grouped = pc.dictionary_encode(pc.replace_substring_regex(enc.dictionary, pattern=_NVTX_SUFFIX.pattern,
                                                              replacement=""))
    regroup = np.asarray(grouped.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    return HostActivity(start, end, cat, pid, own, regroup[code] if len(code) else code, grouped.dictionary)


__all__ = ["HOST_CATEGORIES", "UNTRACED", "HostActivity", "IdleSplit", "host_activity", "host_category", "op_name",
           "split_idle"]
