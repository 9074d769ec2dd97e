"""Per-device timeline metrics on integer ns, exactly as ``docs/formulas.md#timelines`` defines them
(the corpus METHOD.md §4): counts, span, kernel sum and union, GPU-busy union, idle and its
fraction, gaps and their buckets, short kernels, top kernels."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from rooftop.analyzer.timeline.names import EventNames

GPU_KINDS = ("kernel", "memcpy", "memset")
SHORT_KERNEL_NS = 10_000  # < 10 µs (strict)
GAP_SHORT_NS = 10_000  # lt_10us: g < 10 µs
GAP_LONG_NS = 100_000  # gt_100us: g > 100 µs; 10_to_100us includes both ends
TOP_KERNELS = 5


@dataclass
class Union:
    """Merged intervals (sorted, disjoint, gaps > 0 ns) of the positive-length inputs."""

    starts: np.ndarray
    ends: np.ndarray
    _cum: np.ndarray | None = field(default=None, repr=False, compare=False)

    def cumulative(self) -> np.ndarray:
        """Busy ns before each interval, and in all (``len + 1`` values; computed once: a union is
        not changed after it is made)."""
        if self._cum is None:
            self._cum = np.concatenate([[0], np.cumsum(self.ends - self.starts)]).astype(np.int64, copy=False)
        return self._cum

    @property
    def busy(self) -> int:
        return int(self.cumulative()[-1])

    @property
    def span(self) -> int:
        return int(self.ends[-1] - self.starts[0]) if len(self.starts) else 0

    @property
    def gaps(self) -> np.ndarray:
        out: np.ndarray = self.starts[1:] - self.ends[:-1]
        return out


def union(start: np.ndarray, end: np.ndarray) -> Union:
    """Sort by (start, end) and sweep: an interval whose start is <= the merged end joins it (so
    touching intervals merge); zero/negative-length intervals are left out."""
    keep = end > start
    s, e = start[keep], end[keep]
    if not len(s):
        z = np.zeros(0, dtype=np.int64)
        return Union(z, z)
    order = np.lexsort((e, s))
    s, e = s[order], e[order]
    run_end = np.maximum.accumulate(e)
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > run_end[:-1]
    idx = np.flatnonzero(new)
    return Union(s[idx], np.maximum.reduceat(e, idx))


def sec(ns: int | float) -> float:
    """ns as seconds, rounded to the ns (the document's unit)."""
    return round(ns / 1e9, 9)



def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 9) if den else None


def gap_dict(count: int, lt: int, mid: int, gt: int, le5: int, max_ns: int | None) -> dict[str, Any]:
    """The ``gaps`` entry from its counts (< 10 µs, 10-100 µs, > 100 µs, <= 5 ns) and longest gap."""
    return {"count": count, "lt_10us": lt, "10_to_100us": mid, "gt_100us": gt, "le_5ns": le5,
            "max_s": sec(max_ns) if max_ns is not None else None}


def gap_stats(gaps: np.ndarray) -> dict[str, Any]:
    return gap_dict(len(gaps), int((gaps < GAP_SHORT_NS).sum()),
                    int(((gaps >= GAP_SHORT_NS) & (gaps <= GAP_LONG_NS)).sum()), int((gaps > GAP_LONG_NS).sum()),
                    int((gaps <= 5).sum()), int(gaps.max()) if len(gaps) else None)


STRIP_BINS = 200
GAP_EDGES_NS = (0, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000)


def covered_upto(u: Union, t: np.ndarray) -> np.ndarray:
    """Busy ns of ``u`` before each time in ``t``."""
    if not len(u.starts):
        return np.zeros(len(t), dtype=np.int64)
    cum = u.cumulative()
    i = np.searchsorted(u.starts, t, side="right")  # intervals starting at or before t
    j = np.maximum(i - 1, 0)
    partial = np.maximum(np.minimum(t, u.ends[j]) - u.starts[j], 0)
    return np.where(i > 0, cum[j] + partial, 0)


def busy_strip(u: Union, bins: int = STRIP_BINS) -> dict[str, Any] | None:
    """The span cut into ``bins`` equal bins, each with its busy fraction (for the report strip)."""
    if u.span <= 0:
        return None
    n = min(bins, u.span)
    edges = u.starts[0] + (np.arange(n + 1, dtype=np.float64) * (u.span / n)).astype(np.int64)
    edges[-1] = u.ends[-1]
    busy = np.diff(covered_upto(u, edges))
    width = np.diff(edges)
    frac = np.where(width > 0, busy / np.maximum(width, 1), 0.0)
    return {"start_ns": int(u.starts[0]), "bin_s": round(u.span / n / 1e9, 12),
            "busy_fraction": [round(float(x), 4) for x in frac]}


_EDGES_S = tuple(e / 1e9 for e in GAP_EDGES_NS)
_EDGES = np.array([*GAP_EDGES_NS, np.iinfo(np.int64).max])
GAP_BINS = len(GAP_EDGES_NS)  # the last bin holds every gap from 1 s up


def gap_bins(gaps: np.ndarray) -> np.ndarray:
    """The histogram bin of each gap (bin ``i``: ``GAP_EDGES_NS[i] <= gap < GAP_EDGES_NS[i + 1]``)."""
    out: np.ndarray = np.searchsorted(_EDGES, gaps, side="right") - 1
    return out


def histogram_dict(count: list[int], total_ns: Sequence[float]) -> dict[str, Any]:
    """The ``gap_histogram`` entry from the count and float ns sum of each bin."""
    return {"edges_s": list(_EDGES_S), "count": count, "idle_s": [round(t / 1e9, 9) for t in total_ns]}


def gap_histogram(gaps: np.ndarray) -> dict[str, Any]:
    """Gaps in decade bins (1 µs ... 1 s, and beyond): count and idle seconds per bin."""
    idx = gap_bins(gaps)
    count = np.bincount(idx, minlength=GAP_BINS)[:GAP_BINS]
    total = np.bincount(idx, weights=gaps.astype(np.float64), minlength=GAP_BINS)[:GAP_BINS]
    return histogram_dict([int(c) for c in count.tolist()], [float(t) for t in total.tolist()])


@dataclass
class DeviceTimeline:
    """The numbers of one device (or one step on one device), plus what the labels need.
    ``window``: a ProfilerStep's wall time ``[lo, hi)``; the span and idle time are then the
    window's, not the activity's (docs/formulas.md#timelines)."""

    metrics: dict[str, Any]
    busy: Union
    kernel_busy_ns: int
    short_busy_ns: int
    window: tuple[int, int] | None = None

    @property
    def span(self) -> int:
        return self.window[1] - self.window[0] if self.window else self.busy.span

    def idle_intervals(self) -> tuple[np.ndarray, np.ndarray]:
        """The idle intervals: between merged busy intervals, or the window outside them."""
        if self.window is None:
            return self.busy.ends[:-1], self.busy.starts[1:]
        lo, hi = self.window
        edges_s = np.concatenate([[lo], self.busy.ends])
        edges_e = np.concatenate([self.busy.starts, [hi]])
        keep = edges_e > edges_s
        return edges_s[keep], edges_e[keep]


@dataclass
class Acts:
    """GPU activity as arrays (one row per kernel/memcpy/memset): fast subsets for steps."""

    kind: np.ndarray  # 0 kernel, 1 memcpy, 2 memset
    start: np.ndarray
    end: np.ndarray
    name: np.ndarray  # codes into ``names`` (-1: none)
    names: np.ndarray  # object
    name_rank: np.ndarray  # alphabetical rank of each name (ties broken by name in top_kernels)
    nccl: np.ndarray  # per name: contains "nccl" (any case)
    stream: np.ndarray  # codes into ``streams`` (-1: none)
    streams: np.ndarray

    @classmethod
    def from_frame(cls, act: pd.DataFrame, encoded: EventNames | None = None) -> Acts:
        """``encoded``: ``act``'s kinds and names already encoded (then no string is hashed again)."""
        if encoded is None:
            k_code, k_values = pd.factorize(act["kind"], sort=False)
            name, names = pd.factorize(act["name"], sort=False)
            names = np.asarray(names, dtype=object)
        else:  # the same codes: distinct values numbered by first appearance, -1 for null
            k_code, k_values = encoded.kind, list(encoded.kinds)
            named = encoded.code >= 0
            name = np.full(len(named), -1, dtype=np.int64)
            name[named], used = pd.factorize(encoded.code[named], sort=False)
            names = np.array(encoded.names.take(pa.array(used, type=pa.int64())).to_pylist(), dtype=object)
        lut = np.array([GPU_KINDS.index(v) if v in GPU_KINDS else -1 for v in k_values] + [-1], dtype=np.int8)
        kind = lut[k_code]  # code -1 (missing) takes the trailing -1
        order = np.argsort(names.astype(str), kind="stable")
        rank = np.empty(len(names), dtype=np.int64)
        rank[order] = np.arange(len(names))
        stream, streams = pd.factorize(act["stream"], sort=True)
        return cls(kind, act["start_ns"].to_numpy(dtype=np.int64), act["end_ns"].to_numpy(dtype=np.int64),
                   name, names, rank, np.array(["nccl" in str(n).lower() for n in names], dtype=bool),
                   stream, np.asarray(streams, dtype=object))

    def subset(self, mask: np.ndarray) -> Acts:
        return Acts(self.kind[mask], self.start[mask], self.end[mask], self.name[mask], self.names,
                    self.name_rank, self.nccl, self.stream[mask], self.streams)


def _top(a: Acts, is_k: np.ndarray, kd: np.ndarray, n: int) -> list[dict[str, Any]]:
    """Grouped by exact name, by total (plain sum) descending, ties by name ascending."""
    codes = a.name[is_k]
    ok = codes >= 0
    if not ok.any():
        return []
    k = len(a.names)
    count = np.bincount(codes[ok], minlength=k)
    exact = np.zeros(k, dtype=np.int64)
    by = np.argsort(codes[ok], kind="stable")
    c, d = codes[ok][by], kd[ok][by]
    first = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
    exact[c[first]] = np.add.reduceat(d, first)  # integer ns sums
    seen = np.flatnonzero(count)
    order = seen[np.lexsort((a.name_rank[seen], -exact[seen]))][:n]
    return [{"name": a.names[i], "count": int(count[i]), "total_s": sec(int(exact[i]))} for i in order]


def device_metrics(act: pd.DataFrame | Acts, top: int = TOP_KERNELS, strip: bool = True) -> DeviceTimeline:
    """``act``: the kernel/memcpy/memset events of one device (``EVENT_COLUMNS`` or :class:`Acts`);
    ``strip=False`` leaves ``busy_strip`` null (steps: the device entry draws it)."""
    a = act if isinstance(act, Acts) else Acts.from_frame(act)
    kind, start, end = a.kind, a.start, a.end
    dur = end - start
    is_k = kind == 0
    ks, ke, kd = start[is_k], end[is_k], dur[is_k]
    busy = union(start, end)
    kbusy = union(ks, ke).busy
    short = kd < SHORT_KERNEL_NS
    sbusy = union(ks[short], ke[short]).busy
    gaps = busy.gaps
    scodes = np.unique(a.stream[a.stream >= 0])
    kcodes = a.name[is_k]
    m = metrics_dict(
        counts=(int(is_k.sum()), int((kind == 1).sum()), int((kind == 2).sum()), int((dur <= 0).sum())),
        streams=[str(s) for s in a.streams[scodes].tolist()], nccl=int(a.nccl[kcodes[kcodes >= 0]].sum()),
        extent=(int(busy.starts[0]), int(busy.ends[-1]), busy.busy) if len(busy.starts) else (None, None, 0),
        sums=(int(kd.sum()), kbusy, int(dur[kind == 1].sum()), int(dur[kind == 2].sum())),
        gaps=gap_stats(gaps), short=(int(short.sum()), int(kd[short].sum()), sbusy), top=_top(a, is_k, kd, top),
        histogram=gap_histogram(gaps), strip=busy_strip(busy) if strip else None)
    return DeviceTimeline(m, busy, kbusy, sbusy)


def metrics_dict(counts: tuple[int, int, int, int], streams: list[str], nccl: int,
                 extent: tuple[int | None, int | None, int], sums: tuple[int, int, int, int], gaps: dict[str, Any],
                 short: tuple[int, int, int], top: list[dict[str, Any]], histogram: dict[str, Any],
                 strip: dict[str, Any] | None) -> dict[str, Any]:
    """One device's (or member set's) metrics entry. ``counts``: kernels, copies, sets, activities of
    zero or negative duration; ``extent``: the busy union's first start, last end (None: empty) and busy
    ns; ``sums``: kernel sum, kernel busy, copy sum, set sum (ns); ``short``: short kernels' count, sum
    and busy ns (docs/formulas.md#timelines)."""
    kernels, memcpy, memset, zero = counts
    first, last, busy = extent
    ksum, kbusy, msum, ssum = sums
    scount, ssum_ns, sbusy = short
    span = last - first if first is not None and last is not None else 0
    idle = span - busy
    return {
        "kernels": kernels,
        "memcpy": memcpy,
        "memset": memset,
        "zero_or_negative_duration": zero,
        "streams": streams,
        "nccl_kernels": nccl,
        "first_start_ns": first if span else None,
        "last_end_ns": last if span else None,
        "span_s": sec(span),
        "kernel_sum_s": sec(ksum),
        "kernel_busy_s": sec(kbusy),
        "memcpy_sum_s": sec(msum),
        "memset_sum_s": sec(ssum),
        "gpu_busy_s": sec(busy),
        "idle_s": sec(idle),
        "idle_fraction": _ratio(idle, span),
        "gaps": gaps,
        "short_kernels": {
            "count": scount,
            "sum_s": sec(ssum_ns),
            "busy_s": sec(sbusy),
            "share_of_kernel_busy": _ratio(sbusy, kbusy),
            "share_of_kernel_sum": _ratio(ssum_ns, ksum),
        },
        "top_kernels": top,
        "gap_histogram": histogram,
        "busy_strip": strip,
    }
