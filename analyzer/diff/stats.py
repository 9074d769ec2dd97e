"""Noise-aware comparison of repeated launches: Mann–Whitney U per series, Holm across series.

Why Mann–Whitney U (two-sided, as ``scipy.stats.mannwhitneyu``; computed in :mod:`.mannwhitney`) rather than a bootstrap CI of the
median ratio: it is distribution-free (kernel durations are skewed, with long right tails), exact
for small samples without ties, deterministic (no random seed, so a CI verdict never flips between
two runs of the same command) and cheap. The *size* of a change is the ratio of medians; the test
only says whether the shift is more than noise.

Multiple comparisons: Holm's step-down procedure over every tested series, controlling the
family-wise error rate (the probability of *any* false alarm in one comparison) at ``ALPHA``.
For a CI gate a false alarm is costlier than a slightly later detection, so FWER (Holm) is chosen
over FDR (Benjamini–Hochberg).

Which series are tested is decided from the sample sizes alone (never from the values), so the
selection does not bias the error rate: a series is tested when, with no ties, its smallest
attainable two-sided p-value ``2 / C(n1 + n2, n1)`` could survive the strictest Holm step
``ALPHA / m`` (``m`` = series with at least two launches on each side). Other series, single
launches included, are judged by the threshold alone and marked as such.
"""

from __future__ import annotations

from math import comb

import numpy as np
import pandas as pd

from rooftop.analyzer.diff.mannwhitney import mann_whitney_two_sided

ALPHA = 0.05
"""Family-wise error rate for one comparison (all series together)."""

TEST_NAME = "Mann–Whitney U, two-sided, Holm-adjusted"


def mann_whitney_p(baseline: np.ndarray, candidate: np.ndarray) -> float:
    """Two-sided Mann–Whitney U p-value; 1.0 when undefined (an empty side, or all values equal)."""
    b = np.asarray(baseline, dtype=float)
    c = np.asarray(candidate, dtype=float)
    b, c = b[np.isfinite(b)], c[np.isfinite(c)]
    if not len(b) or not len(c):
        return 1.0
    both = np.concatenate([b, c])
    if np.all(both == both[0]):
        return 1.0
    return mann_whitney_two_sided(b, c)


def min_attainable_p(n1: int, n2: int) -> float:
    """Smallest two-sided exact Mann–Whitney p-value for sample sizes n1, n2 (no ties)."""
    if n1 < 1 or n2 < 1:
        return 1.0
    try:
        return min(1.0, 2.0 / comb(n1 + n2, n1))
    except OverflowError:  # C(n1 + n2, n1) beyond float range (thousands of samples): p ~ 0
        return 0.0


def holm(pvalues: np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values (monotone, capped at 1); NaN stays NaN and is not counted."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = len(ok)
    if not m:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    scaled = p[order] * (m - np.arange(m))
    out[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return out


def testable(n_base: np.ndarray, n_cand: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """Which series get a test: those whose best attainable p survives ``alpha / m`` (see module doc)."""
    nb = np.asarray(n_base, dtype=int)
    nc = np.asarray(n_cand, dtype=int)
    candidates = (nb >= 2) & (nc >= 2)
    m = int(candidates.sum())
    if not m:
        return candidates
    best = np.array([min_attainable_p(int(a), int(b)) for a, b in zip(nb, nc, strict=True)])
    return candidates & (best <= alpha / m)


def batch_p_values(samples: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """:func:`mann_whitney_p` for many (baseline, candidate) pairs (1.0 where a side is empty)."""
    return np.array([mann_whitney_p(b, c) for b, c in samples], dtype=float)


def compare_series(durations: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Per-series statistics of launch durations in two runs.

    ``durations`` columns: ``series`` (str), ``side`` (``"baseline"``/``"candidate"``),
    ``duration_s`` (float; NaN ignored). Returns one row per series (index ``series``, sorted) with
    ``n_base, n_cand, median_base_s, median_cand_s, change`` (median ratio − 1), ``method``
    (``"mann-whitney"`` | ``"threshold-only"``), ``p_value``, ``p_adjusted`` (Holm; NaN when not
    tested) and ``significant`` (bool; False when not tested).
    """
    codes, uniques = pd.factorize(durations["series"].astype(str), sort=True)
    cand = (durations["side"] == "candidate").to_numpy(dtype=bool)
    values = pd.to_numeric(durations["duration_s"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    ok = np.isfinite(values)
    codes, cand, values = codes[ok], cand[ok], values[ok]
    k = len(uniques)
    group = codes * 2 + cand  # (series, side) -> 2*series + (1 if candidate)
    order = np.lexsort((values, group))
    bounds = np.searchsorted(group[order], np.arange(2 * k + 1))
    sorted_vals = values[order]
    chunks = [sorted_vals[bounds[g]:bounds[g + 1]] for g in range(2 * k)]
    sizes = np.diff(bounds)
    medians = np.array([np.median(ch) if len(ch) else np.nan for ch in chunks])
    n_base, n_cand = sizes[0::2].astype(int), sizes[1::2].astype(int)
    mb, mc = medians[0::2], medians[1::2]
    with np.errstate(divide="ignore", invalid="ignore"):
        change = np.where(mb > 0, mc / mb - 1.0, np.nan)
    tested = testable(n_base, n_cand, alpha)
    p = np.full(k, np.nan)
    idx = np.flatnonzero(tested)
    p[idx] = batch_p_values([(chunks[2 * i], chunks[2 * i + 1]) for i in idx])
    p_adj = holm(p)
    return pd.DataFrame({
        "n_base": n_base, "n_cand": n_cand, "median_base_s": mb, "median_cand_s": mc, "change": change,
        "method": np.where(tested, "mann-whitney", "threshold-only").astype(object),
        "p_value": p, "p_adjusted": p_adj,
        "significant": np.isfinite(p_adj) & (p_adj <= alpha),
    }, index=pd.Index(np.asarray(uniques, dtype=object), name="series"))
