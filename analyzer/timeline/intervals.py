"""Set algebra on merged intervals (:class:`~rooftop.analyzer.timeline.metrics.Union`: sorted,
disjoint, half-open ``[start, end)`` integer ns): intersection, difference, clipping and the ns of
a union inside given intervals. The idle-time attribution of ``docs/formulas.md#timelines`` is
built from these."""

from __future__ import annotations

import numpy as np

from rooftop.analyzer.timeline.metrics import Union, covered_upto, union

_EMPTY = np.zeros(0, dtype=np.int64)


def empty() -> Union:
    return Union(_EMPTY, _EMPTY)


def inside(u: Union, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per interval ``[start[i], end[i])``: the ns of ``u`` inside it."""
    out: np.ndarray = covered_upto(u, end) - covered_upto(u, start)
    return out


def _levels(a: Union, b: Union, keep: int) -> Union:
    """The parts of the line where ``1 * (in a) + 2 * (in b) == keep`` (1: a only, 3: both)."""
    pts = np.concatenate([a.starts, a.ends, b.starts, b.ends])
    if not len(pts):
        return empty()
    na, nb = len(a.starts), len(b.starts)
    delta = np.concatenate([np.full(na, 1), np.full(na, -1), np.full(nb, 2), np.full(nb, -2)]).astype(np.int64)
    order = np.lexsort((delta, pts))  # at one point, ends (negative) before starts
    pts, delta = pts[order], delta[order]
    level = np.cumsum(delta)
    seg_s, seg_e, lev = pts[:-1], pts[1:], level[:-1]
    sel = (lev == keep) & (seg_e > seg_s)
    return union(seg_s[sel], seg_e[sel])


def intersect(a: Union, b: Union) -> Union:
    return _levels(a, b, 3)


def subtract(a: Union, b: Union) -> Union:
    """The parts of ``a`` outside ``b``."""
    return _levels(a, b, 1)


def clip(u: Union, lo: int, hi: int) -> Union:
    """``u`` inside ``[lo, hi)``."""
    s = np.maximum(u.starts, lo)
    e = np.minimum(u.ends, hi)
    keep = e > s
    return Union(s[keep], e[keep])


def complement(u: Union, lo: int, hi: int) -> Union:
    """``[lo, hi)`` outside ``u``: the idle intervals of a window whose busy time is ``u``."""
    return subtract(Union(np.array([lo], dtype=np.int64), np.array([hi], dtype=np.int64)), u) if hi > lo \
        else empty()
