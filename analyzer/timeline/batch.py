"""The metrics of many ranges at once: every (range, device) member set of one input measured in one
pass of grouped NumPy operations, equal to :func:`~rooftop.analyzer.timeline.metrics.device_metrics`
of each set (``strip=False``) field for field (tests/test_timeline_batch.py holds the two equal on
hypothesis-drawn tables and every corpus trace). Why: a trace's 50 ranges x devices each cost ~20
small NumPy calls one by one (bench/NOTES.md, "Timelines, 2026-11-27"). Membership and formulas:
``docs/formulas.md#timelines``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rooftop.analyzer.timeline.arrays import NA, exclusive_group_cummax
from rooftop.analyzer.timeline.metrics import (
    GAP_BINS,
    GAP_LONG_NS,
    GAP_SHORT_NS,
    SHORT_KERNEL_NS,
    TOP_KERNELS,
    Acts,
    DeviceTimeline,
    Union,
    gap_bins,
    gap_dict,
    histogram_dict,
    metrics_dict,
    sec,
)


@dataclass
class Members:
    """Member sets: ``pos`` (positions into the activities) sorted by set, set ``i`` being
    ``pos[bounds[i]:bounds[i + 1]]``; ``range_idx`` and ``device`` (code) of each set."""

    pos: np.ndarray
    bounds: np.ndarray
    range_idx: np.ndarray
    device: np.ndarray

    def __len__(self) -> int:
        return len(self.range_idx)

    def of(self, i: int) -> np.ndarray:
        out: np.ndarray = self.pos[self.bounds[i]:self.bounds[i + 1]]
        return out

    def subset(self, sel: np.ndarray) -> Members:
        """The sets at positions ``sel`` (in that order)."""
        count = np.diff(self.bounds)[sel]
        return Members(self.pos[_slices(self.bounds[sel], count)], np.r_[0, np.cumsum(count)].astype(np.int64),
                       self.range_idx[sel], self.device[sel])


def _slices(first: np.ndarray, count: np.ndarray) -> np.ndarray:
    """The positions ``first[i] .. first[i] + count[i] - 1`` of every ``i``, concatenated."""
    offset = np.cumsum(count) - count
    out: np.ndarray = np.arange(int(count.sum()), dtype=np.int64) - np.repeat(offset - first, count)
    return out


def range_members(launch: np.ndarray, member_pid: np.ndarray | None, lo: np.ndarray, hi: np.ndarray,
                  pid: np.ndarray, dev_code: np.ndarray) -> Members:
    """The activities of each range ``[lo[r], hi[r])`` per device (``dev_code`` >= 0), as
    ``reference.step_members_reference`` decides: launched inside the range, on the range's process (``pid`` NA:
    any) where activities have processes (``member_pid``; -1: unknown, always a member)."""
    order = np.argsort(launch, kind="stable")
    a = np.searchsorted(launch[order], lo, side="left")
    b = np.searchsorted(launch[order], hi, side="left")
    count = np.maximum(b - a, 0)
    rng = np.repeat(np.arange(len(lo)), count)
    pos = order[_slices(a, count)]
    keep = dev_code[pos] >= 0
    if member_pid is not None:
        rp = pid[rng]
        keep &= (rp == NA) | (member_pid[pos] == rp) | (member_pid[pos] < 0)
    rng, pos = rng[keep], pos[keep]
    ndev = int(dev_code.max(initial=0)) + 1
    key = rng * ndev + dev_code[pos]
    by = np.argsort(key, kind="stable")
    key, pos = key[by], pos[by]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if len(key) else np.zeros(0, dtype=np.int64)
    return Members(pos, np.r_[first, len(key)].astype(np.int64), key[first] // ndev, key[first] % ndev)


def _sums(g: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    """Exact int64 sum of ``v`` per group ``g`` (0 <= g < n)."""
    out = np.zeros(n, dtype=np.int64)
    np.add.at(out, g, v)
    return out


def _grouped_union(g: np.ndarray, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`~rooftop.analyzer.timeline.metrics.union` per group: the merged intervals, sorted by
    group then start, with the group of each."""
    keep = e > s
    g, s, e = g[keep], s[keep], e[keep]
    order = np.lexsort((e, s, g))
    g, s, e = g[order], s[order], e[order]
    new = s > exclusive_group_cummax(e, g)  # first of a group: after int64 min
    idx = np.flatnonzero(new)
    return g[idx], s[idx], np.maximum.reduceat(e, idx) if len(idx) else e[idx]


def batch_metrics(acts: Acts, m: Members, top: int = TOP_KERNELS) -> list[DeviceTimeline]:
    """``device_metrics(acts.subset(m.of(i)), top, strip=False)`` for every set ``i``."""
    n = len(m)
    g = np.repeat(np.arange(n), np.diff(m.bounds))
    kind, start, end, name, stream = (acts.kind[m.pos], acts.start[m.pos], acts.end[m.pos], acts.name[m.pos],
                                      acts.stream[m.pos])
    dur = end - start
    is_k = kind == 0
    short = is_k & (dur < SHORT_KERNEL_NS)
    ug, us, ue = _grouped_union(g, start, end)
    kbusy = _sums(*_busy_parts(g[is_k], start[is_k], end[is_k]), n)
    sbusy = _sums(*_busy_parts(g[short], start[short], end[short]), n)
    ub = np.searchsorted(ug, np.arange(n + 1), side="left")  # each set's merged intervals
    same = ug[1:] == ug[:-1]
    gaps, gg = (us[1:] - ue[:-1])[same], ug[1:][same]
    gb = np.searchsorted(gg, np.arange(n + 1), side="left")

    def count(mask: np.ndarray, of: np.ndarray = g) -> np.ndarray:
        return np.bincount(of[mask], minlength=n)

    nk, ncp, nst = count(is_k), count(kind == 1), count(kind == 2)
    zero = count(dur <= 0)
    ksum, msum, ssum = _sums(g[is_k], dur[is_k], n), _sums(g[kind == 1], dur[kind == 1], n), \
        _sums(g[kind == 2], dur[kind == 2], n)
    short_n, short_sum = count(short), _sums(g[short], dur[short], n)
    named_k = is_k & (name >= 0)
    nccl = np.bincount(g[named_k], weights=acts.nccl[name[named_k]], minlength=n).astype(np.int64)
    gap_n = np.bincount(gg, minlength=n)
    lt, gt = count(gaps < GAP_SHORT_NS, gg), count(gaps > GAP_LONG_NS, gg)
    mid, le5 = gap_n - lt - gt, count(gaps <= 5, gg)
    nb = GAP_BINS
    hb = gg * nb + gap_bins(gaps)
    h_count = np.bincount(hb, minlength=n * nb).reshape(n, nb)
    h_total = np.bincount(hb, weights=gaps.astype(np.float64), minlength=n * nb).reshape(n, nb)
    streams = _streams(g, stream, acts.streams, n)
    tops = _tops(acts, g[named_k], name[named_k], dur[named_k], n, top)
    longest = np.zeros(n, dtype=np.int64)
    has_gap = np.diff(gb) > 0
    if len(gaps):  # the sets with gaps, in order: each one's gaps run to the next one's first
        longest[has_gap] = np.maximum.reduceat(gaps, gb[:-1][has_gap])
    c = {k: v.tolist() for k, v in {  # per set, as Python ints (one conversion, not one per field)
        "kernels": nk, "memcpy": ncp, "memset": nst, "zero": zero, "nccl": nccl, "ksum": ksum, "kbusy": kbusy,
        "msum": msum, "ssum": ssum, "gaps": gap_n, "lt": lt, "mid": mid, "gt": gt, "le5": le5, "longest": longest,
        "short": short_n, "short_sum": short_sum, "sbusy": sbusy, "busy": _sums(ug, ue - us, n),
        "first": np.r_[us, 0][ub[:-1]], "last": np.r_[0, ue][ub[1:]]}.items()}
    hc, ht = h_count.tolist(), h_total.tolist()
    out = []
    for i in range(n):
        a, b = int(ub[i]), int(ub[i + 1])
        metrics = metrics_dict(
            counts=(c["kernels"][i], c["memcpy"][i], c["memset"][i], c["zero"][i]), streams=streams[i],
            nccl=c["nccl"][i], extent=(c["first"][i], c["last"][i], c["busy"][i]) if b > a else (None, None, 0),
            sums=(c["ksum"][i], c["kbusy"][i], c["msum"][i], c["ssum"][i]),
            gaps=gap_dict(c["gaps"][i], c["lt"][i], c["mid"][i], c["gt"][i], c["le5"][i],
                          c["longest"][i] if c["gaps"][i] else None),
            short=(c["short"][i], c["short_sum"][i], c["sbusy"][i]), top=tops[i],
            histogram=histogram_dict(hc[i], ht[i]), strip=None)
        out.append(DeviceTimeline(metrics, Union(us[a:b], ue[a:b]), c["kbusy"][i], c["sbusy"][i]))
    return out


def _busy_parts(g: np.ndarray, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ug, us, ue = _grouped_union(g, s, e)
    return ug, ue - us


def _streams(g: np.ndarray, stream: np.ndarray, names: np.ndarray, n: int) -> list[list[str]]:
    """Per set: the names of its streams in code order (``device_metrics``' ``streams``)."""
    ok = stream >= 0
    k = max(len(names), 1)
    pairs = np.unique(g[ok] * k + stream[ok])
    out: list[list[str]] = [[] for _ in range(n)]
    for gi, code in zip((pairs // k).tolist(), (pairs % k).tolist(), strict=True):
        out[gi].append(str(names[code]))
    return out


def _tops(acts: Acts, g: np.ndarray, name: np.ndarray, dur: np.ndarray, n: int, top: int) -> list[list[dict[str, object]]]:
    """Per set: ``metrics._top`` (by exact total descending, ties by name ascending), first ``top``."""
    k = max(len(acts.names), 1)
    key = g * k + name
    uniq, inv = np.unique(key, return_inverse=True)
    inv = inv.reshape(-1)
    cnt = np.bincount(inv, minlength=len(uniq))
    total = _sums(inv, dur, len(uniq))
    grp, code = uniq // k, uniq % k
    order = np.lexsort((acts.name_rank[code], -total, grp))
    gs = grp[order]
    rank_in = np.arange(len(order)) - np.searchsorted(gs, gs, side="left")
    out: list[list[dict[str, object]]] = [[] for _ in range(n)]
    for j in order[rank_in < top].tolist():
        out[int(grp[j])].append({"name": acts.names[code[j]], "count": int(cnt[j]), "total_s": sec(int(total[j]))})
    return out
