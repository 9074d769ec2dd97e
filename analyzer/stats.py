"""Noise-aware comparison of repeated launches: Mann–Whitney U per series, Holm across series.

Why Mann–Whitney U (two-sided, ``scipy.stats.mannwhitneyu``) rather than a bootstrap CI of the
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

ALPHA = 0.05
"""Family-wise error rate for one comparison (all series together)."""

TEST_NAME = "Mann–Whitney U, two-sided, Holm-adjusted"


def mann_whitney_p(baseline: np.ndarray, candidate: np.ndarray) -> float:
    """Two-sided Mann–Whitney U p-value; 1.0 when undefined (an empty side, or all values equal)."""
    from scipy.stats import mannwhitneyu

    b = np.asarray(baseline, dtype=float)
    c = np.asarray(candidate, dtype=float)
    b, c = b[np.isfinite(b)], c[np.isfinite(c)]
    if not len(b) or not len(c):
        return 1.0
    both = np.concatenate([b, c])
    if np.all(both == both[0]):
        return 1.0
    p = float(mannwhitneyu(c, b, alternative="two-sided", method="auto").pvalue)
    return p if np.isfinite(p) else 1.0


def min_attainable_p(n1: int, n2: int) -> float:
    """Smallest two-sided exact Mann–Whitney p-value for sample sizes n1, n2 (no ties)."""
    if n1 < 1 or n2 < 1:
        return 1.0
    return min(1.0, 2.0 / comb(n1 + n2, n1))


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


def compare_series(durations: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Per-series statistics of launch durations in two runs.

    ``durations`` columns: ``series`` (str), ``side`` (``"baseline"``/``"candidate"``),
    ``duration_s`` (float; NaN ignored). Returns one row per series (index ``series``) with
    ``n_base, n_cand, median_base_s, median_cand_s, change`` (median ratio − 1), ``method``
    (``"mann-whitney"`` | ``"threshold-only"``), ``p_value``, ``p_adjusted`` (Holm; NaN when not
    tested) and ``significant`` (bool; False when not tested).
    """
    d = durations[np.isfinite(durations["duration_s"].astype(float))]
    grouped = d.groupby(["series", "side"], sort=True)["duration_s"]
    n = grouped.size().unstack("side").reindex(columns=["baseline", "candidate"]).fillna(0)
    med = grouped.median().unstack("side").reindex(columns=["baseline", "candidate"])
    series = pd.Index(sorted(set(durations["series"])), name="series")
    n = n.reindex(series).fillna(0).astype(int)
    med = med.reindex(series)
    out = pd.DataFrame(index=series)
    out["n_base"] = n["baseline"].to_numpy()
    out["n_cand"] = n["candidate"].to_numpy()
    out["median_base_s"] = med["baseline"].to_numpy(dtype=float)
    out["median_cand_s"] = med["candidate"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        change = out["median_cand_s"] / out["median_base_s"] - 1.0
    out["change"] = change.where(out["median_base_s"] > 0)
    tested = testable(out["n_base"].to_numpy(), out["n_cand"].to_numpy(), alpha)
    out["method"] = np.where(tested, "mann-whitney", "threshold-only")
    p = np.full(len(out), np.nan)
    if tested.any():
        values = {key: grp.to_numpy(dtype=float)
                  for key, grp in d.groupby(["series", "side"], sort=False)["duration_s"]}
        empty = np.array([], dtype=float)
        for i in np.flatnonzero(tested):
            s = series[i]
            p[i] = mann_whitney_p(values.get((s, "baseline"), empty),
                                  values.get((s, "candidate"), empty))
    out["p_value"] = p
    out["p_adjusted"] = holm(p)
    out["significant"] = np.isfinite(out["p_adjusted"]) & (out["p_adjusted"] <= alpha)
    return out
