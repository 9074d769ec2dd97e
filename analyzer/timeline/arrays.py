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


def group_codes(*cols: np.ndarray) -> np.ndarray:
    """One code per distinct row of the int64 columns (mixed radix of per-column codes)."""
    key = np.zeros(len(cols[0]), dtype=np.int64)
    for col in cols:
        vals, code = np.unique(col, return_inverse=True)
        key = key * len(vals) + code.reshape(-1)
    return np.unique(key, return_inverse=True)[1].reshape(-1)


def exclusive_group_cummax(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Per position: the max of ``values`` at earlier positions of the same group (int64 min if none)."""
    uniq, rank = np.unique(values, return_inverse=True)
    n = len(uniq) + 1
    order = np.argsort(groups, kind="stable")
    g, r = groups[order], rank.reshape(-1)[order] + 1
    run = np.maximum.accumulate(r + g * n) - g * n  # segments cannot carry: each adds its own offset
    prev = np.empty_like(run)
    prev[1:] = run[:-1]
    start = np.ones(len(g), dtype=bool)
    start[1:] = g[1:] != g[:-1]
    prev[start] = 0
    out = np.empty(len(values), dtype=np.int64)
    out[order] = np.where(prev > 0, uniq[np.maximum(prev - 1, 0)], np.iinfo(np.int64).min)
    return out
