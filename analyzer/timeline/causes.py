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
from rooftop.analyzer.timeline.names import EventNames, arrow_strings, encode_strings

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
            keep = np.zeros(len(self.pid), dtype=bool) if pids else np.ones(len(self.pid), dtype=bool)
            for p in pids:  # a device's few processes: one compare each (np.isin's set path costs more)
                keep |= self.pid == p
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
    inv, uniq = pd.factorize(host.code[idx])  # names numbered by first appearance (hash, no sort)
    total = np.zeros(len(uniq), dtype=np.int64)
    np.add.at(total, inv, ns)
    order = np.lexsort((np.arange(len(uniq)), -total))[:TOP_NAMES]  # longest first, ties by first appearance
    return [(str(host.labels[int(uniq[i])].as_py()), int(total[i])) for i in order if total[i] > 0]




def _names(col: pd.Series, rows: np.ndarray) -> pa.Array:
    """The names of ``rows`` of a string column as one Arrow array (nulls as "")."""
    arr = pa.chunked_array([pa.array(col.array)]).combine_chunks().cast(pa.large_string())
    return arr.take(pa.array(rows, type=pa.int64())).fill_null("")


def host_activity(ev: pd.DataFrame, blocking: np.ndarray, ops: pd.DataFrame | None = None,
                  names: EventNames | None = None) -> HostActivity:
    """The host events of ``ev`` (and the op table ``ops``, as kind ``op``) by category;
    ``blocking``: positions of the rows of ``ev`` that block the host (sync records, blocking
    calls), which are ``sync``, not host activity; ``names``: ``ev``'s encoded kinds and names (made
    here when not given). Every name test runs once per distinct name (the categories as per-name
    tables taken by code, the emit_nvtx suffix by :func:`_grouped_names`); :func:`host_activity_ref`
    is the plain form, held equal in tests/test_timeline_names_fast.py."""
    n = names if names is not None else EventNames.of(ev)
    is_rt = n.is_kind("runtime")
    is_rt[blocking] = False
    rows = np.flatnonzero(is_rt | n.is_kind("range"))
    src = np.where(is_rt[rows], 0, 1)  # 0 runtime, 1 range, 2 op
    code, dictionary = n.code[rows], n.names
    start = ev["start_ns"].to_numpy(dtype=np.int64)[rows]
    end = ev["end_ns"].to_numpy(dtype=np.int64)[rows]
    pid = ints(ev["pid"])[rows]
    unify = False
    if ops is not None and len(ops):
        op_code, op_names = encode_strings(arrow_strings(ops["name"]))
        code = np.concatenate([code, np.where(op_code >= 0, op_code + len(dictionary), -1)])
        dictionary = pa.concat_arrays([dictionary, op_names])
        src = np.concatenate([src, np.full(len(ops), 2)])
        start = np.concatenate([start, ops["start_ns"].to_numpy(dtype=np.int64)])
        end = np.concatenate([end, ops["end_ns"].to_numpy(dtype=np.int64)])
        pid = np.concatenate([pid, ints(ops["pid"])])
        unify = True
    if (code < 0).any():  # a null name reads ""
        code = np.where(code < 0, len(dictionary), code)
        dictionary = pa.concat_arrays([dictionary, pa.array([""], type=pa.large_string())])
        unify = True
    if unify:  # one code per distinct name again
        once, dictionary = encode_strings(dictionary)
        code = once[code]
    cat = _categories(dictionary, src, code)
    keep = np.flatnonzero(cat >= 0)
    start, end, pid, cat, code = start[keep], end[keep], pid[keep], cat[keep], code[keep]
    own = start.copy()
    if len(keep):  # an event's own part: after every earlier event of its category and process
        order = _start_order(start, end)
        group = pd.factorize(pid[order])[0].astype(np.int64) * len(HOST_CATEGORIES) + cat[order]  # any one code per group
        own[order] = np.maximum(start[order], exclusive_group_cummax(end[order], group))
    regroup, labels = _grouped_names(dictionary)
    return HostActivity(start, end, cat, pid, own, regroup[code] if len(code) else code, labels)


def _start_order(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """``np.lexsort((-end, start))`` (by start, then longest first, then position): a stable sort by
    start (fast on the nearly sorted rows of a trace), then lexsort only over the rows whose start is
    shared with another."""
    order = np.argsort(start, kind="stable")
    s = start[order]
    same = s[1:] == s[:-1]
    tie = np.zeros(len(s), dtype=bool)
    tie[1:] |= same  # both sides of every tie
    tie[:-1] |= same
    if tie.any():
        sub = order[tie]  # each run of equal starts, in position order
        order[tie] = sub[np.lexsort((-end[sub], start[sub]))]
    return order


def _categories(uniq: pa.Array, src: np.ndarray, code: np.ndarray) -> np.ndarray:
    """:func:`host_category` with the kinds as ``src`` (0 runtime, 1 range, 2 op) and no sync row:
    the category of each distinct name per kind, taken by ``code``."""
    f = _name_flags_fast(uniq)
    loader, optim, aten, step = f["loader"], f["optim"], f["aten"], f["step"]
    as_range = np.select([loader, optim, aten, ~step], [1, 2, 3, 4], -1)  # first match wins, as in host_category
    as_op = np.select([loader, optim], [1, 2], 3)
    return np.where(src == 0, 0, np.where(src == 1, as_range[code], as_op[code])).astype(np.int64)


_LOADER_PREFIX = "enumerate(DataLoader)#"


def _name_flags_fast(uniq: pa.Array) -> dict[str, np.ndarray]:
    """:func:`_name_flags` by prefix tests: the DataLoader regex only on names with its literal prefix,
    the optimizer regex (``^Optimizer\\.(step|zero_grad)#``) as its two literal prefixes."""
    def flag(arr: pa.Array) -> np.ndarray:
        out: np.ndarray = np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
        return out

    loader = flag(pc.starts_with(uniq, _LOADER_PREFIX))
    cand = np.flatnonzero(loader)
    if len(cand):
        loader[cand] = flag(pc.match_substring_regex(uniq.take(pa.array(cand, type=pa.int64())), _DATALOADER.pattern))
    return {"aten": flag(pc.starts_with(uniq, "aten::")), "step": flag(pc.starts_with(uniq, "ProfilerStep#")),
            "loader": loader, "optim": flag(pc.starts_with(uniq, "Optimizer.step#"))
            | flag(pc.starts_with(uniq, "Optimizer.zero_grad#"))}


_SUFFIX_KEYS = (b" seq =", b" op_id =", b" sizes =")  # what emit_nvtx writes after the first comma (<= 8 bytes)


_LOW_BYTES = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


def _after(data: pa.Buffer, pos: np.ndarray, stop: np.ndarray) -> np.ndarray:
    """Per position: the 8 bytes of ``data`` from ``pos`` as a little-endian uint64, the bytes at or
    past ``stop`` (and past the buffer) read as 0. One unaligned 8-byte read per position through a
    byte-strided view; the few positions within 8 bytes of the buffer's end are read one by one."""
    size = data.size
    out = np.zeros(len(pos), dtype=np.uint64)
    near = pos > size - 8
    if size >= 8:
        every = np.ndarray(shape=(size - 7,), dtype="<u8", buffer=data, strides=(1,))  # a uint64 at each byte
        out[~near] = every[pos[~near]]
    raw = memoryview(data)
    for i in np.flatnonzero(near).tolist():
        out[i] = int.from_bytes(raw[min(int(pos[i]), size):size], "little")
    got: np.ndarray = out & _LOW_BYTES[np.clip(stop - pos, 0, 8)]
    return got


def _grouped_names(uniq: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Per distinct name: its :func:`op_name` group as a code into the returned labels, i.e. the codes
    of ``dictionary_encode(replace_substring_regex(uniq, _NVTX_SUFFIX, ""))``. A name with no comma
    is its own label; one whose first comma is followed by exactly one of :data:`_SUFFIX_KEYS` and
    holds no newline is cut at that comma (the regex's leftmost match; ``.*$`` spans the rest); any
    other name gets the regex itself."""
    n = len(uniq)
    buf = uniq.buffers()
    if not n or uniq.null_count or uniq.type != pa.large_string() or buf[2] is None or not buf[2].size:
        enc = pc.dictionary_encode(pc.replace_substring_regex(uniq, pattern=_NVTX_SUFFIX.pattern, replacement=""))
        return np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64), enc.dictionary
    off = np.frombuffer(buf[1], dtype=np.int64)[uniq.offset:uniq.offset + n + 1]
    data = np.frombuffer(buf[2], dtype=np.uint8)
    comma = np.asarray(pc.find_substring(uniq, pattern=",").to_numpy(zero_copy_only=False), dtype=np.int64)
    has = comma >= 0
    cut = np.where(has, off[:-1] + comma, off[1:])  # where each name's label ends
    window = _after(buf[2], cut + 1, off[1:])  # the 8 bytes after the cut, 0 past the name's end
    keyed = np.zeros(n, dtype=bool)
    for key in _SUFFIX_KEYS:
        k = np.frombuffer(key.ljust(8, b"\0"), dtype="<u8")[0]
        keyed |= (window & np.uint64((1 << (8 * len(key))) - 1)) == k
    newline = np.zeros(n, dtype=bool)
    newline[np.searchsorted(off, np.flatnonzero(data[off[0]:off[-1]] == 0x0A) + off[0], side="right") - 1] = True
    other = np.flatnonzero(has & (~keyed | newline))  # the regex decides these
    bounds = np.empty(2 * n, dtype=np.int64)  # each name as two strings: its label, then the rest
    bounds[0::2], bounds[1::2] = off[:-1], cut
    halves = pa.LargeStringArray.from_buffers(2 * n, pa.py_buffer(np.append(bounds, off[-1])), buf[2])
    parts = [halves.take(pa.array(np.arange(0, 2 * n, 2), type=pa.int64()))]
    if len(other):
        parts.append(pc.replace_substring_regex(uniq.take(pa.array(other, type=pa.int64())),
                                                pattern=_NVTX_SUFFIX.pattern, replacement=""))
    enc = pc.dictionary_encode(pa.concat_arrays(parts))
    codes = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    out = codes[:n].copy()
    out[other] = codes[n:]
    return out, enc.dictionary


def host_activity_ref(ev: pd.DataFrame, blocking: np.ndarray, ops: pd.DataFrame | None = None) -> HostActivity:
    """:func:`host_activity` as plain per-row passes (the reference it is held equal to). The host events of ``ev`` (and the op table ``ops``, as kind ``op``) by category;
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


__all__ = ["HOST_CATEGORIES", "UNTRACED", "HostActivity", "IdleSplit", "host_activity", "host_activity_ref", "host_category", "op_name",
           "split_idle"]
