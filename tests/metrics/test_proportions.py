"""The statistics of right/wrong outcomes and reruns against hand-computed and scipy values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from presentation_dependence.metrics import (
    flip_noise_to_se,
    mcnemar_exact,
    rerun_se,
    wilson_interval,
)


def wilson_by_hand(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


@pytest.mark.parametrize(("k", "n"), [(8, 10), (0, 7), (7, 7), (517, 1763)])
def test_wilson_matches_the_formula(k: int, n: int) -> None:
    assert wilson_interval(k, n) == pytest.approx(wilson_by_hand(k, n), abs=1e-9)


def test_wilson_textbook_value_and_empty() -> None:
    low, high = wilson_interval(8, 10)
    assert (round(low, 3), round(high, 3)) == (0.490, 0.943)
    assert all(math.isnan(x) for x in wilson_interval(0, 0))


def test_mcnemar_exact_by_hand() -> None:
    a = [True] * 5 + [False] * 1 + [True] * 3 + [False] * 2
    b = [False] * 5 + [True] * 1 + [True] * 3 + [False] * 2
    r = mcnemar_exact(a, b)
    assert (r["a_only"], r["b_only"], r["both_correct"], r["both_wrong"]) == (5, 1, 3, 2)
    assert r["p_value"] == pytest.approx(2 * (math.comb(6, 0) + math.comb(6, 1)) / 2**6)  # 0.21875
    assert r["diff"] == pytest.approx(8 / 11 - 4 / 11)


def test_mcnemar_against_scipy_and_degenerate() -> None:
    a = np.r_[np.ones(39, bool), np.zeros(26, bool), np.ones(50, bool)]
    b = np.r_[np.zeros(39, bool), np.ones(26, bool), np.ones(50, bool)]
    r = mcnemar_exact(a, b)
    tail = sum(math.comb(65, i) for i in range(27)) / 2**65
    assert r["p_value"] == pytest.approx(min(1.0, 2 * tail), rel=1e-9)
    assert r["p_value"] == pytest.approx(stats.binomtest(39, 65, 0.5).pvalue)
    assert mcnemar_exact([True, False], [True, False])["p_value"] == 1.0
    with pytest.raises(ValueError):
        mcnemar_exact([True], [True, False])


def test_flip_noise_to_se_by_hand_and_degenerate() -> None:
    # f = 0.25 flips at accuracy 0.5: sqrt(0.25 / (2 * 0.25)) = sqrt(0.5)
    assert flip_noise_to_se(0.25, 0.5) == pytest.approx(math.sqrt(0.5))
    assert flip_noise_to_se(0.0, 1.0) == 0.0  # nothing flipped: no noise, whatever p
    assert math.isnan(flip_noise_to_se(0.1, 1.0)) and math.isnan(flip_noise_to_se(0.1, 0.0))


def test_rerun_se_by_hand() -> None:
    calls = np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [1.0, 1.0, 0.0]])  # 3 cases x k = 3
    variances = [float(np.var(c, ddof=1)) for c in calls]
    assert rerun_se(variances, 3) == pytest.approx(math.sqrt(sum(variances) / 3) / 3)
    # the SE of the mean of case means, each case mean's variance s²/k: sqrt(Σ s²/k) / n
    assert rerun_se(variances, 3) == pytest.approx(math.sqrt(sum(v / 3 for v in variances)) / 3)
    assert math.isnan(rerun_se([float("nan")] * 3, 1))  # one call each: nothing measured
