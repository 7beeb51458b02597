"""Bootstrap CIs and paired tests: reproducible with a seed, agree with scipy, never crash on
degenerate samples, never mutate inputs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from presentation_dependence.metrics import (
    bootstrap_ci,
    mean_with_ci,
    paired_bootstrap,
    paired_permutation_test,
)


def _ro(values) -> np.ndarray:
    arr = np.array(values, dtype=np.float64)
    arr.setflags(write=False)
    return arr


def _sample(seed: int = 0, n: int = 40) -> np.ndarray:
    return _ro(np.random.default_rng(seed).random(n))


def _pair(seed: int = 3, n: int = 200, shift: float = 0.02) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.random(n)
    return _ro(a), _ro(a - shift + rng.normal(0, 0.15, n))


def test_bootstrap_ci_reproducible_and_contains_mean():
    v = _sample()
    first = bootstrap_ci(v, rng=np.random.default_rng(11))
    assert first == bootstrap_ci(v, rng=np.random.default_rng(11))
    assert first != bootstrap_ci(v, rng=np.random.default_rng(12))
    low, high = first
    assert low < float(v.mean()) < high


def test_bootstrap_ci_is_scipy_percentile():
    v = _sample()
    res = stats.bootstrap(
        (v,), np.mean, n_resamples=500, method="percentile", rng=np.random.default_rng(5)
    )
    got = bootstrap_ci(v, rng=np.random.default_rng(5), n_resamples=500)
    assert got == (res.confidence_interval.low, res.confidence_interval.high)


def test_bootstrap_ci_other_statistic_and_method():
    v = _sample()
    low, high = bootstrap_ci(v, rng=np.random.default_rng(1), statistic=np.median)
    assert low <= float(np.median(v)) <= high
    low, high = bootstrap_ci(v, rng=np.random.default_rng(1), method="BCa")
    assert low < float(v.mean()) < high


def test_bootstrap_ci_degenerate_samples():
    assert bootstrap_ci([0.7], rng=np.random.default_rng(0)) == (0.7, 0.7)
    assert bootstrap_ci([0.0, 0.0, 0.0], rng=np.random.default_rng(0)) == (0.0, 0.0)
    with pytest.raises(ValueError, match="empty"):
        bootstrap_ci([], rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_ci([0.1, float("nan")], rng=np.random.default_rng(0))


def test_mean_with_ci():
    v = _sample()
    got = mean_with_ci(v, np.random.default_rng(2))
    assert set(got) == {"mean", "ci_low", "ci_high", "n"}
    assert got["n"] == 40
    assert got["mean"] == pytest.approx(float(v.mean()))
    assert got["ci_low"] < got["mean"] < got["ci_high"]
    assert got == mean_with_ci(v, np.random.default_rng(2))


def test_paired_bootstrap_reproducible_and_matches_scipy_ci():
    a, b = _pair()
    got = paired_bootstrap(a, b, rng=np.random.default_rng(7), n_resamples=1000)
    assert got == paired_bootstrap(a, b, rng=np.random.default_rng(7), n_resamples=1000)
    res = stats.bootstrap(
        (a - b,), np.mean, n_resamples=1000, method="percentile", rng=np.random.default_rng(7)
    )
    assert got["mean_diff"] == pytest.approx(float(np.mean(a - b)))
    assert (got["ci_low"], got["ci_high"]) == (
        res.confidence_interval.low,
        res.confidence_interval.high,
    )
    # Shift-method p from the same resamples.
    dist = res.bootstrap_distribution
    d_bar = float(np.mean(a - b))
    want_p = (1 + np.sum(np.abs(dist - d_bar) >= abs(d_bar))) / 1001
    assert got["p_value"] == pytest.approx(want_p)


def test_paired_bootstrap_p_close_to_paired_t_test():
    a, b = _pair()
    got = paired_bootstrap(a, b, rng=np.random.default_rng(7), n_resamples=5000)
    assert got["p_value"] == pytest.approx(stats.ttest_rel(a, b).pvalue, abs=0.03)


def test_paired_bootstrap_degenerate_cases():
    one = paired_bootstrap([0.5], [0.2], rng=np.random.default_rng(0))
    assert one["ci_low"] == one["ci_high"] == pytest.approx(0.3)
    assert math.isnan(one["p_value"])
    same = paired_bootstrap([0.1, 0.4], [0.1, 0.4], rng=np.random.default_rng(0))
    assert (same["mean_diff"], same["ci_low"], same["ci_high"], same["p_value"]) == (0, 0, 0, 1)
    shifted = paired_bootstrap([1.0, 2.0, 3.0], [0.0, 1.0, 2.0], rng=np.random.default_rng(0))
    assert shifted["p_value"] == pytest.approx(1 / 2001)
    with pytest.raises(ValueError, match="paired"):
        paired_bootstrap([0.1, 0.2], [0.1], rng=np.random.default_rng(0))


def test_paired_permutation_exact_against_enumeration():
    rng = np.random.default_rng(4)
    a = _ro(rng.random(8))
    b = _ro(a - rng.normal(0.1, 0.2, 8))
    d = a - b
    flips = np.array(list(itertools.product([1, -1], repeat=8)))
    null = (flips * d).mean(axis=1)
    want = np.mean(np.abs(null) >= abs(d.mean()) - 1e-12)
    got = paired_permutation_test(a, b, rng=np.random.default_rng(0))
    assert got["mean_diff"] == pytest.approx(d.mean())
    assert got["p_value"] == pytest.approx(want)


def test_paired_permutation_reproducible_and_close_to_t_test():
    a, b = _pair()
    first = paired_permutation_test(a, b, rng=np.random.default_rng(9))
    assert first == paired_permutation_test(a, b, rng=np.random.default_rng(9))
    assert first["p_value"] == pytest.approx(stats.ttest_rel(a, b).pvalue, abs=0.03)
    assert paired_permutation_test([1.0], [0.0], rng=np.random.default_rng(0))["p_value"] == 1.0


def test_inputs_not_mutated():
    a = np.random.default_rng(0).random(30)
    b = a + 0.01
    a_before, b_before = a.copy(), b.copy()
    rng = np.random.default_rng(0)
    bootstrap_ci(a, rng=rng, n_resamples=200)
    mean_with_ci(a, rng, n_resamples=200)
    paired_bootstrap(a, b, rng=rng, n_resamples=200)
    paired_permutation_test(a, b, rng=rng, n_resamples=200)
    np.testing.assert_array_equal(a, a_before)
    np.testing.assert_array_equal(b, b_before)
