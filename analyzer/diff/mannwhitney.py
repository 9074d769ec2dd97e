"""The two-sided Mann–Whitney U p-value, computed as ``scipy.stats.mannwhitneyu(method="auto")`` does.

Why not scipy itself: it was the only use of a 143 MB dependency, and importing it cost ~1.5 s CPU
on every ``rooftop diff``. What is written here is the textbook test (docs/formulas.md#diff) and is
held equal to scipy by a property test (``tests/test_diff_mannwhitney.py``, scipy in the ``dev``
extra only), so a verdict never depends on which packages are installed.

- ``U = max(U1, U2)`` with ``U1 = R1 − n1(n1+1)/2`` from average ranks (ties share their mean rank).
- Method as scipy's ``auto``: *exact* when either sample has at most 8 values and nothing is tied,
  else the *asymptotic* normal approximation.
- Exact: ``p = 2 · P(U' ≥ U)`` under the null, from the exact counts of U over all
  ``C(n1 + n2, n1)`` orderings (coefficients of the Gaussian binomial ``[n1+n2 choose n1]_q``,
  in integers, so no rounding until the final division).
- Asymptotic: ``z = (U − n1·n2/2 − ½) / σ`` with the continuity correction and the tie-corrected
  ``σ² = n1·n2/12 · ((n + 1) − Σ(t³ − t) / (n(n − 1)))``; ``p = 2 · Φ(−z) = erfc(z/√2)``.
- ``p`` is capped at 1.
"""

from __future__ import annotations

from functools import lru_cache
from math import comb, erfc, sqrt

import numpy as np

EXACT_MAX = 8
"""Exact distribution when the smaller sample has at most this many values (and no ties), as scipy."""


def _average_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """1-based ranks with ties sharing their mean rank, and the size of each group of equal values."""
    order = np.argsort(values, kind="stable")
    srt = values[order]
    starts = np.flatnonzero(np.r_[True, srt[1:] != srt[:-1]])
    counts = np.diff(np.r_[starts, len(srt)])
    mean_rank = starts + (counts + 1) / 2.0  # positions starts..starts+count-1, 1-based mean
    ranks = np.empty(len(values))
    ranks[order] = np.repeat(mean_rank, counts)
    return ranks, counts


@lru_cache(maxsize=64)
def _upper_tail_counts(m: int, n: int) -> tuple[int, ...]:
    """``tail[u]`` = number of orderings with ``U ≥ u`` for sample sizes ``m ≤ n`` (exact integers).

    The counts of U are the coefficients of ``∏_{i=1..m} (1 − q^(n+i)) / (1 − q^i)``; after step i
    the product is the Gaussian binomial ``[n+i choose i]_q``, so every intermediate is a polynomial
    with non-negative integer coefficients.
    """
    poly = np.zeros(m * n + 1, dtype=object)
    poly[0] = 1
    deg = 0
    for i in range(1, m + 1):
        new_deg = deg + n
        work = poly[: new_deg + 1].copy()
        work[n + i: new_deg + 1] -= poly[: new_deg + 1 - n - i]  # × (1 − q^(n+i))
        for r in range(i):  # ÷ (1 − q^i): a running sum along each residue class mod i
            work[r: new_deg + 1: i] = np.cumsum(work[r: new_deg + 1: i])
        poly[: new_deg + 1] = work
        deg = new_deg
    tail = np.cumsum(poly[::-1])[::-1]
    return tuple(int(x) for x in tail)


def mann_whitney_two_sided(baseline: np.ndarray, candidate: np.ndarray) -> float:
    """Two-sided p-value of ``mannwhitneyu(candidate, baseline, method="auto")``; both samples
    finite and non-empty, not all values equal (the caller handles those)."""
    c = np.asarray(candidate, dtype=float)
    b = np.asarray(baseline, dtype=float)
    n1, n2 = len(c), len(b)
    ranks, ties = _average_ranks(np.concatenate([c, b]))
    u1 = float(ranks[:n1].sum()) - n1 * (n1 + 1) / 2.0
    u = max(u1, n1 * n2 - u1)
    tied = bool((ties > 1).any())
    if min(n1, n2) <= EXACT_MAX and not tied:
        m, n = min(n1, n2), max(n1, n2)
        tail = _upper_tail_counts(m, n)
        k = round(u)
        p = 2 * tail[k] / comb(m + n, m) if k < len(tail) else 0.0
    else:
        nn = n1 + n2
        tie_term = float((ties.astype(float) ** 3 - ties).sum())
        sigma = sqrt(n1 * n2 / 12.0 * ((nn + 1) - tie_term / (nn * (nn - 1))))
        z = (u - n1 * n2 / 2.0 - 0.5) / sigma
        p = erfc(z / sqrt(2.0))
    return min(1.0, max(0.0, float(p)))
