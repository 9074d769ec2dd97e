"""rooftop.analyzer.diff.mannwhitney: the hand-written Mann–Whitney U held equal to scipy's.

rooftop computes the two-sided p-value itself (scipy was a 143 MB base dependency for this one
test, docs/formulas.md#diff); scipy is a test dependency (the ``dev`` extra) and the reference here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rooftop.analyzer.diff import stats
from rooftop.analyzer.diff.mannwhitney import mann_whitney_two_sided

scipy_stats = pytest.importorskip("scipy.stats", reason="scipy (the dev extra) is the reference")

# values drawn from a small grid make ties likely; floats from a wide range make them rare
_grid = st.integers(min_value=0, max_value=6).map(float)
_wide = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


def _scipy_p(b: np.ndarray, c: np.ndarray) -> float:
    return float(scipy_stats.mannwhitneyu(c, b, alternative="two-sided", method="auto").pvalue)


@settings(max_examples=300, deadline=None)
@given(st.lists(_grid | _wide, min_size=1, max_size=30), st.lists(_grid | _wide, min_size=1, max_size=30))
def test_equals_scipy(b_list: list[float], c_list: list[float]) -> None:
    b, c = np.array(b_list), np.array(c_list)
    if np.all(np.concatenate([b, c]) == b[0]):
        assert stats.mann_whitney_p(b, c) == 1.0
        return
    assert mann_whitney_two_sided(b, c) == pytest.approx(_scipy_p(b, c), rel=1e-9, abs=1e-15)


@pytest.mark.parametrize(("n1", "n2"), [(1, 1), (2, 3), (8, 8), (3, 500), (8, 40), (9, 9), (40, 60)])
def test_equals_scipy_at_the_method_boundaries(n1: int, n2: int) -> None:
    rng = np.random.default_rng(n1 * 1000 + n2)
    for shift in (0.0, 0.5, 3.0):
        b, c = rng.normal(size=n1), rng.normal(size=n2) + shift
        assert mann_whitney_two_sided(b, c) == pytest.approx(_scipy_p(b, c), rel=1e-9, abs=1e-15)


def test_hand_computed() -> None:
    # 3 vs 3 fully separated, no ties: exact, U = 9, P(U >= 9) = 1 / C(6, 3); two-sided 2/20
    assert mann_whitney_two_sided(np.array([1.0, 2, 3]), np.array([4.0, 5, 6])) == pytest.approx(0.1)
    # 10 vs 10 fully separated: asymptotic; U = 100, mu = 50, sigma^2 = 100 * 21 / 12 = 175
    z = (100 - 50 - 0.5) / math.sqrt(175)
    p = mann_whitney_two_sided(np.arange(10.0), np.arange(10.0) + 100)
    assert p == pytest.approx(math.erfc(z / math.sqrt(2)), rel=1e-12)
    # ties force the asymptotic method with the tie term: [1, 2, 2] vs [2, 3, 4]; ranks 1, 3, 3 | 3, 5, 6
    # U1 (candidate) = 14 - 6 = 8, U = max(8, 1) = 8; tie term 3^3 - 3 = 24; sigma^2 = 9/12 * (7 - 24/30)
    z = (8 - 4.5 - 0.5) / math.sqrt(9 / 12 * (7 - 24 / 30))
    p = mann_whitney_two_sided(np.array([1.0, 2, 2]), np.array([2.0, 3, 4]))
    assert p == pytest.approx(math.erfc(z / math.sqrt(2)), rel=1e-12)
