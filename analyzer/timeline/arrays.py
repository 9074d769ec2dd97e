"""Integer columns of the events table as NumPy arrays, and the grouped scans the timeline uses
(``docs/formulas.md#timelines``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

NA = np.iinfo(np.int64).min  # missing value of an integer column taken out of the events table


def ints(col: pd.Series) -> np.ndarray:
    """An ``Int64``/``int64`` events column as int64 with :data:`NA` for missing."""
    out: np.ndarray = col.to_numpy(dtype=np.int64, na_value=NA)
    return out


def group_codes(*cols: np.ndarray, sort: bool = True) -> np.ndarray:
    """One code per distinct row of the int64 columns (mixed radix of per-column codes), codes in sorted
    order of the rows. Hash-based (``pandas.factorize``, sorting only the distinct values): the same
    codes as ``np.unique(..., return_inverse=True)`` (``reference.group_codes_reference``) without
    sorting every row. ``sort=False``: the same groups, codes in order of first appearance (for the
    users that only compare codes: a third of the time)."""
    key = np.zeros(len(cols[0]), dtype=np.int64)
    for col in cols:
        code, vals = pd.factorize(col, sort=sort)
        key = key * len(vals) + code
    out: np.ndarray = pd.factorize(key, sort=sort)[0].astype(np.int64, copy=False)
    return out


SEGMENT_LOOP_MAX = 64  # at most this many groups: one NumPy running max per group (no ranking sort)
MASK_LOOP_MAX = 16  # group codes spanning at most this many values: one mask per code (no sort at all)
_MIN = np.iinfo(np.int64).min


def exclusive_group_cummax(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Per position: the max of ``values`` at earlier positions of the same group (int64 min if none).
    Codes spanning <= :data:`MASK_LOOP_MAX` values (a trace's threads or processes): a running max over
    each code's positions; few groups (<= :data:`SEGMENT_LOOP_MAX`): a running max per group's run of a
    stable sort; more: one running max over value ranks offset per group. All equal the plain scan
    (``reference.exclusive_group_cummax_reference``, tests/test_timeline_reference.py)."""
    if len(groups) and int(groups.max()) - int(groups.min()) < MASK_LOOP_MAX:
        return _masked_group_cummax(values, groups)
    order = np.argsort(groups, kind="stable")
    g = groups[order]
    bounds = np.flatnonzero(np.r_[True, g[1:] != g[:-1], True]) if len(g) else np.zeros(1, dtype=np.int64)
    if len(bounds) - 1 <= SEGMENT_LOOP_MAX:
        v = values[order]
        prev_sorted = np.empty(len(v), dtype=np.int64)
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            prev_sorted[a] = _MIN
            np.maximum.accumulate(v[a:b - 1], out=prev_sorted[a + 1:b])
        out = np.empty(len(values), dtype=np.int64)
        out[order] = prev_sorted
        return out
    return _ranked_group_cummax(values, order, g)


def _masked_group_cummax(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """:func:`exclusive_group_cummax` with one pass per code from the smallest to the largest."""
    out = np.empty(len(values), dtype=np.int64)
    for code in range(int(groups.min()), int(groups.max()) + 1):
        idx = np.flatnonzero(groups == code)
        if len(idx):
            prev = np.empty(len(idx), dtype=np.int64)
            prev[0] = _MIN
            np.maximum.accumulate(values[idx[:-1]], out=prev[1:])
            out[idx] = prev
    return out


def _ranked_group_cummax(values: np.ndarray, order: np.ndarray, g: np.ndarray) -> np.ndarray:
    """:func:`exclusive_group_cummax` for many groups: values ranked so each group's offset cannot carry."""
    uniq, rank = np.unique(values, return_inverse=True)
    n = len(uniq) + 1
    r = rank.reshape(-1)[order] + 1
    run = np.maximum.accumulate(r + g * n) - g * n  # segments cannot carry: each adds its own offset
    prev = np.empty_like(run)
    prev[1:] = run[:-1]
    start = np.ones(len(g), dtype=bool)
    start[1:] = g[1:] != g[:-1]
    prev[start] = 0
    out = np.empty(len(values), dtype=np.int64)
    out[order] = np.where(prev > 0, uniq[np.maximum(prev - 1, 0)], np.iinfo(np.int64).min)
    return out
