"""rooftop.analyzer.diff.stats: Mann–Whitney p-values, Holm, testability, and the noise / power budget of the gate."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rooftop.analyzer.diff import stats
from rooftop.analyzer.diff.gate import classify

CV = 0.03
SIGMA = math.sqrt(math.log1p(CV**2))  # lognormal sigma giving a 3 % coefficient of variation


def test_holm_hand_computed() -> None:
    # sorted: 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04 -> cummax 0.06)
    p = np.array([0.01, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(stats.holm(p), [0.03, 0.06, 0.06, 0.02])


def test_holm_caps_at_one_and_skips_nan() -> None:
    # NaN is not a comparison: m = 3; sorted 0.02 * 3 = 0.06, 0.6 * 2 = 1.2 -> 1, 0.7 * 1 -> cummax 1
    out = stats.holm(np.array([0.6, np.nan, 0.7, 0.02]))
    assert out[0] == 1.0 and math.isnan(out[1]) and out[2] == 1.0 and out[3] == pytest.approx(0.06)
    assert stats.holm(np.array([])).shape == (0,)


def test_mann_whitney_exact_small_sample() -> None:
    # candidate entirely above baseline: U = 9 of 9; exact P(U = 9) = 1 / C(6, 3) = 1/20; two-sided 0.1
    assert stats.mann_whitney_p(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])) == pytest.approx(0.1)
    # 5 vs 5 fully separated: 2 / C(10, 5) = 2 / 252
    p = stats.mann_whitney_p(np.arange(5.0), np.arange(5.0) + 10)
    assert p == pytest.approx(2 / 252) == pytest.approx(stats.min_attainable_p(5, 5))


def test_mann_whitney_degenerate_inputs() -> None:
    same = np.array([1.0, 1.0, 1.0])
    assert stats.mann_whitney_p(same, same) == 1.0          # all values equal: no evidence
    assert stats.mann_whitney_p(np.array([]), same) == 1.0  # an empty side
    assert stats.mann_whitney_p(np.array([np.nan, 2.0, 3.0]), np.array([np.nan])) == 1.0
    x = np.array([1.0, 2.0, 3.0, 4.0])
    assert stats.mann_whitney_p(x, x) == pytest.approx(1.0)


def test_testable_depends_on_sizes_and_number_of_series() -> None:
    # one series of 5 vs 5: best p 2/252 = 0.0079 <= 0.05 / 1
    assert stats.testable(np.array([5]), np.array([5])).tolist() == [True]
    # ten such series: 0.0079 > 0.05 / 10 = 0.005, so none can ever be significant: threshold only
    assert not stats.testable(np.full(10, 5), np.full(10, 5)).any()
    # 6 vs 6: 2/924 = 0.0022 <= 0.005
    assert stats.testable(np.full(10, 6), np.full(10, 6)).all()
    # single launches never get a test
    assert stats.testable(np.array([1, 20]), np.array([20, 20])).tolist() == [False, True]


def _durations(rng: np.random.Generator, families: int, launches: int,
               slow: dict[int, float] | None = None) -> pd.DataFrame:
    """Long table of durations: family f has median 0.1 ms * (f + 1), lognormal 3 % CV noise."""
    slow = slow or {}
    base = 1e-4 * (np.arange(families) + 1.0)
    factor = np.array([slow.get(f, 1.0) for f in range(families)])
    b = base[:, None] * rng.lognormal(0.0, SIGMA, (families, launches))
    c = (base * factor)[:, None] * rng.lognormal(0.0, SIGMA, (families, launches))
    names = np.repeat([f"fam{f}" for f in range(families)], launches)
    return pd.DataFrame({
        "series": np.concatenate([names, names]),
        "side": np.repeat(["baseline", "candidate"], families * launches),
        "duration_s": np.concatenate([b.ravel(), c.ravel()]),
    })


def test_compare_series_columns_and_single_launch() -> None:
    d = pd.DataFrame({
        "series": ["a"] * 4 + ["b"] * 2,
        "side": ["baseline", "baseline", "candidate", "candidate", "baseline", "candidate"],
        "duration_s": [1.0, 3.0, 2.0, 6.0, 2.0, 2.6],
    })
    out = stats.compare_series(d)
    # a: medians 2 -> 4: +100 %; 2 vs 2 launches cannot reach p <= 0.05/1 (best 2/6): threshold only
    assert out.loc["a", "change"] == pytest.approx(1.0)
    assert out.loc["a", "method"] == "threshold-only" and not out.loc["a", "significant"]
    # b: one launch each, 2.0 -> 2.6 = +30 %
    assert out.loc["b", "change"] == pytest.approx(0.3)
    assert (out.loc["b", "n_base"], out.loc["b", "n_cand"]) == (1, 1)
    assert math.isnan(out.loc["b", "p_value"])


def test_noise_only_no_false_alarm_over_200_seeds() -> None:
    """200 noise-only comparisons (10 families x 20 launches, lognormal 3 % CV, no real change).

    Budget: Holm controls the family-wise error at alpha = 0.05 per comparison, so the number of
    comparisons with *any* significant series is at most Binomial(200, 0.05) in expectation (10);
    we allow 20 (P[Binomial(200, 0.05) > 20] ~ 0.2 %, and the seeds are fixed, so the test is
    deterministic). The gate also needs the median change beyond --fail-on 5 %: the median of 20
    lognormal(3 %) draws has sd ~ 1.2533 * 3 % / sqrt(20) = 0.84 %, the ratio of two ~ 1.2 %, so
    5 % is > 4 sd (p ~ 1e-5 per family, ~0.03 expected over 2000 family comparisons): exactly 0
    gate failures are required.
    """
    any_significant = 0
    gate_failures = 0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        table = stats.compare_series(_durations(rng, families=10, launches=20))
        assert (table["method"] == "mann-whitney").all()
        any_significant += bool(table["significant"].any())
        status = classify(table, threshold=0.05)
        gate_failures += bool((status == "regressed").any())
    assert gate_failures == 0
    assert any_significant <= 20


def test_power_thirty_percent_slower_always_caught_one_percent_never() -> None:
    for seed in range(30):
        rng = np.random.default_rng(1000 + seed)
        table = stats.compare_series(_durations(rng, families=10, launches=20, slow={3: 1.30, 6: 1.01}))
        status = classify(table, threshold=0.05)
        assert status["fam3"] == "regressed", seed
        assert (status.drop("fam3") != "regressed").all(), seed
        assert status["fam6"] in ("within threshold", "not significant")


def test_batch_p_values_equal_single_calls() -> None:
    """Batched p-values match one call per pair, with and without ties, exact and asymptotic."""
    rng = np.random.default_rng(7)
    pairs = [
        (rng.normal(size=5), rng.normal(size=5) + 1),          # exact (no ties, n <= 8)
        (np.array([1.0, 2, 2, 3, 4]), np.array([2.0, 3, 5, 6, 7])),  # same sizes, ties: asymptotic
        (rng.normal(size=20), rng.normal(size=20)),             # asymptotic
        (rng.normal(size=20), rng.normal(size=25) + 0.5),
        (np.ones(6), np.ones(6)),                               # constant: no evidence
    ]
    batched = stats.batch_p_values(pairs)
    single = [stats.mann_whitney_p(b, c) for b, c in pairs]
    np.testing.assert_allclose(batched, single)
    assert batched[-1] == 1.0
