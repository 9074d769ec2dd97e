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

import numpy as np
import pandas as pd

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


def host_category(kind: np.ndarray, names: pd.Series, sync: np.ndarray) -> np.ndarray:
    """The :data:`HOST_CATEGORIES` index of each host event (-1: not a host activity: a sync call,
    which is ``sync``; a ProfilerStep, which holds everything)."""
    n = len(kind)
    out = np.full(n, -1, dtype=np.int64)
    text = names.fillna("").astype(str)
    is_rt = (kind == "runtime") & ~sync
    is_range = kind == "range"
    is_op = kind == OP_KIND
    aten = text.str.startswith("aten::").to_numpy(dtype=bool)
    step = text.str.startswith("ProfilerStep#").to_numpy(dtype=bool)
    loader = text.str.match(_DATALOADER).to_numpy(dtype=bool)
    optim = text.str.match(_OPTIMIZER).to_numpy(dtype=bool)
    hosty = is_range | is_op
    out[is_range & ~step] = 4
    out[is_op | (is_range & aten)] = 3
    out[hosty & optim] = 2
    out[hosty & loader] = 1
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
    names: np.ndarray  # object: the grouped name (:func:`op_name`)
    _covers: dict[tuple[int, ...], list[Union]] = field(default_factory=dict)

    def covers(self, pids: tuple[int, ...]) -> list[Union]:
        """One union per category, of the events of processes ``pids`` (all when empty)."""
        if pids not in self._covers:
            keep = np.isin(self.pid, pids) if pids else np.ones(len(self.pid), dtype=bool)
            self._covers[pids] = [union(self.start[keep & (self.cat == c)], self.end[keep & (self.cat == c)])
                                  for c in range(len(HOST_CATEGORIES))]
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
               pids: tuple[int, ...] = ()) -> IdleSplit:
    """The causes of the idle intervals ``[gap_s, gap_e)`` (sorted, disjoint), rules in the module
    docstring; ``host`` None: the ``host`` part is not split."""
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
            out.top[name] = _top_names(host, c, part, pids)
            remaining = subtract(remaining, part)
    if remaining.busy:
        out.host_by[UNTRACED] = remaining.busy
    return out


def _top_names(host: HostActivity, cat: int, part: Union, pids: tuple[int, ...]) -> list[tuple[str, int]]:
    """The outermost events of category ``cat`` grouped by name, by their ns inside ``part``."""
    lo, hi = int(part.starts[0]), int(part.ends[-1])
    sel = (host.cat == cat) & (host.own < host.end) & (host.own < hi) & (host.end > lo)
    if pids:
        sel &= np.isin(host.pid, pids)
    idx = np.flatnonzero(sel)
    if not len(idx):
        return []
    ns = inside(part, host.own[idx], host.end[idx])
    per = pd.Series(ns, index=host.names[idx]).groupby(level=0, sort=False).sum()
    per = per[per > 0].sort_values(ascending=False, kind="stable").head(TOP_NAMES)
    return [(str(k), int(v)) for k, v in per.items()]


HOST_KINDS = ("runtime", "range", OP_KIND)
HOST_COLUMNS = ["kind", "name", "start_ns", "end_ns", "pid", "tid"]


def host_activity(ev: pd.DataFrame, blocking: np.ndarray, ops: pd.DataFrame | None = None) -> HostActivity:
    """The host events of ``ev`` (and the op table ``ops``, as kind ``op``) by category;
    ``blocking``: positions of the rows of ``ev`` that block the host (sync records, blocking
    calls), which are ``sync``, not host activity."""
    if ops is not None and len(ops):
        ev = pd.concat([ev[HOST_COLUMNS], ops[HOST_COLUMNS[1:]].assign(kind=OP_KIND)[HOST_COLUMNS]],
                       ignore_index=True)
    kind_s = ev["kind"]
    rows = np.flatnonzero(kind_s.isin(HOST_KINDS).to_numpy(dtype=bool, na_value=False))
    is_block = np.zeros(len(ev), dtype=bool)
    is_block[blocking] = True
    kind = kind_s.iloc[rows].to_numpy(dtype=object, na_value="")
    names = ev["name"].iloc[rows]
    cat = host_category(kind, names, is_block[rows])
    keep = np.flatnonzero(cat >= 0)
    rows, cat, names = rows[keep], cat[keep], names.iloc[keep]
    start = ev["start_ns"].to_numpy(dtype=np.int64)[rows]
    end = ev["end_ns"].to_numpy(dtype=np.int64)[rows]
    pid = ints(ev["pid"].iloc[rows])
    own = start.copy()
    if len(rows):  # an event's own part: after every earlier event of its category and process
        order = np.lexsort((-end, start))
        own[order] = np.maximum(start[order], exclusive_group_cummax(end[order], group_codes(pid[order], cat[order])))
    codes, uniq = pd.factorize(names.fillna("").astype(str))
    grouped = np.array([op_name(u) for u in uniq], dtype=object)
    return HostActivity(start, end, cat, pid, own, grouped[codes] if len(codes) else np.zeros(0, dtype=object))


__all__ = ["HOST_CATEGORIES", "UNTRACED", "HostActivity", "IdleSplit", "host_activity", "host_category", "op_name",
           "split_idle"]
