"""The stratified bootstrap and permutation test: macro mean over strata, queries resampled (or
sign-flipped) only within their stratum; one stratum is the ordinary test draw for draw."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from presentation_dependence.metrics import (
    bootstrap_ci,
    paired_bootstrap,
    paired_permutation_test,
    stratified_bootstrap_ci,
    stratified_paired_bootstrap,
    stratified_permutation_test,
)


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _groups(seed: int = 5, sizes: tuple[int, ...] = (12, 30, 7)) -> list[np.ndarray]:
    rng = _rng(seed)
    return [rng.random(n) + i for i, n in enumerate(sizes)]


def test_one_stratum_is_the_ordinary_bootstrap_draw_for_draw():
    v = _groups(sizes=(25,))[0]
    got = stratified_bootstrap_ci([v], rng=_rng(11), n_resamples=500)
    low, high = bootstrap_ci(v, rng=_rng(11), n_resamples=500)
    assert got["mean"] == pytest.approx(v.mean())
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((low, high), rel=1e-12)
    assert (got["n"], got["strata"]) == (25, 1)
    a, b = v, v[::-1] * 0.9
    paired = stratified_paired_bootstrap([a], [b], rng=_rng(7), n_resamples=500)
    want = paired_bootstrap(a, b, rng=_rng(7), n_resamples=500)
    assert paired == pytest.approx(want, rel=1e-12)


def test_strata_weigh_the_same_macro_not_pooled():
    # stratum A: d = 1 on 2 queries, stratum B: d = 3 on 3 queries -> macro (1 + 3) / 2 = 2,
    # where the pooled mean over the 5 queries would be 11 / 5 = 2.2
    got = stratified_paired_bootstrap([[1, 1], [3, 3, 3]], [[0, 0], [0, 0, 0]], rng=_rng())
    assert (got["mean_diff"], got["ci_low"], got["ci_high"]) == (2.0, 2.0, 2.0)
    assert got["p_value"] == pytest.approx(1 / 2001)  # constant within strata, non-zero
    ci = stratified_bootstrap_ci([[1, 1], [3, 3, 3]], rng=_rng())
    assert (ci["mean"], ci["ci_low"], ci["ci_high"], ci["n"]) == (2.0, 2.0, 2.0, 5)


def test_resampling_stays_within_each_stratum():
    # A = [0, 1] resamples to means 0, 0.5, 1 (probabilities 1/4, 1/2, 1/4); B = [5] is fixed.
    # So θ* = (Ā* + 5) / 2 takes only 2.5, 2.75, 3.0, and the 95% percentile CI is (2.5, 3.0).
    # Mixing the strata would put 0 and 5 in one resample and give other values.
    got = stratified_bootstrap_ci([[0.0, 1.0], [5.0]], rng=_rng(3), n_resamples=4000)
    assert got["mean"] == 2.75
    assert (got["ci_low"], got["ci_high"]) == (2.5, 3.0)


def _reference_stratified_ci(groups, rng, n_resamples, confidence=0.95):
    """A second, loop-by-loop implementation: the same draws, stratum by stratum."""
    draws = [rng.integers(0, len(g), (n_resamples, len(g))) for g in groups]
    thetas = []
    for b in range(n_resamples):
        means = [sum(g[i] for i in idx[b]) / len(g) for g, idx in zip(groups, draws, strict=True)]
        thetas.append(sum(means) / len(means))
    thetas.sort()
    alpha = (1 - confidence) / 2

    def quantile(q: float) -> float:  # numpy's default (linear) rule
        pos = q * (n_resamples - 1)
        lo = math.floor(pos)
        return thetas[lo] + (pos - lo) * (thetas[min(lo + 1, n_resamples - 1)] - thetas[lo])

    return quantile(alpha), quantile(1 - alpha)


def test_stratified_ci_matches_a_loop_implementation_contains_the_mean_and_is_seeded():
    groups = _groups()
    got = stratified_bootstrap_ci(groups, rng=_rng(2), n_resamples=300)
    want = _reference_stratified_ci([list(g) for g in groups], _rng(2), 300)
    assert (got["ci_low"], got["ci_high"]) == pytest.approx(want, rel=1e-9)
    assert got["mean"] == pytest.approx(np.mean([g.mean() for g in groups]))
    assert got["ci_low"] < got["mean"] < got["ci_high"]
    assert got == stratified_bootstrap_ci(groups, rng=_rng(2), n_resamples=300)
    assert got != stratified_bootstrap_ci(groups, rng=_rng(3), n_resamples=300)


def test_stratified_paired_degenerate_cases_and_errors():
    one = stratified_paired_bootstrap([[0.5], [0.7]], [[0.2], [0.2]], rng=_rng())
    assert one["mean_diff"] == one["ci_low"] == one["ci_high"] == pytest.approx(0.4)
    assert math.isnan(one["p_value"])
    same = stratified_paired_bootstrap([[0.1, 0.4]], [[0.1, 0.4]], rng=_rng())
    assert (same["mean_diff"], same["ci_low"], same["ci_high"], same["p_value"]) == (0, 0, 0, 1)
    with pytest.raises(ValueError, match="same strata"):
        stratified_paired_bootstrap([[1.0, 2.0]], [[1.0, 2.0], [3.0]], rng=_rng())
    with pytest.raises(ValueError, match="paired"):
        stratified_paired_bootstrap([[1.0, 2.0]], [[1.0]], rng=_rng())
    with pytest.raises(ValueError, match="no stratum"):
        stratified_bootstrap_ci([], rng=_rng())
    with pytest.raises(ValueError, match="NaN"):
        stratified_bootstrap_ci([[1.0], [float("nan")]], rng=_rng())


def test_stratified_permutation_by_hand():
    # d: stratum A = [1, 3], stratum B = [2]; weights 1/4, 1/4, 1/2; D = 1/4 + 3/4 + 1 = 2.
    # D* = s1/4 + 3 s2/4 + s3 over the 8 sign patterns: 2, 0, 0.5, -1.5, 1.5, -0.5, 0, -2;
    # |D*| >= 2 for 2 of them -> p = 0.25
    got = stratified_permutation_test([[1.0, 3.0], [2.0]], [[0.0, 0.0], [0.0]], rng=_rng())
    assert got == {"mean_diff": 2.0, "p_value": 0.25}
    zero = stratified_permutation_test([[1.0, -1.0], [0.0]], [[0.0, 0.0], [0.0]], rng=_rng())
    assert zero["p_value"] == 1.0


def _exact_stratified_p(groups) -> float:
    """Enumerate every sign pattern with itertools (a second implementation)."""
    flat = [(x, 1 / (len(g) * len(groups))) for g in groups for x in g]
    observed = sum(x * w for x, w in flat)
    hits = total = 0
    for signs in itertools.product((1, -1), repeat=len(flat)):
        total += 1
        hits += (
            abs(sum(s * x * w for s, (x, w) in zip(signs, flat, strict=True)))
            >= abs(observed) - 1e-12
        )
    return hits / total


def test_stratified_permutation_exact_and_drawn_against_enumeration():
    rng = _rng(4)
    small = [rng.normal(0.1, 0.3, 5), rng.normal(0.1, 0.3, 4)]  # 2^9 <= 9999: exact
    zeros = [np.zeros(5), np.zeros(4)]
    got = stratified_permutation_test(small, zeros, rng=_rng())
    assert got["p_value"] == pytest.approx(_exact_stratified_p(small))
    big = [rng.normal(0.1, 0.3, 9), rng.normal(0.05, 0.3, 6)]  # 2^15 > 9999: drawn
    zeros = [np.zeros(9), np.zeros(6)]
    drawn = stratified_permutation_test(big, zeros, rng=_rng(1))
    assert drawn == stratified_permutation_test(big, zeros, rng=_rng(1))
    assert drawn["p_value"] == pytest.approx(_exact_stratified_p(big), abs=0.02)


def test_one_stratum_permutation_is_the_ordinary_test():
    rng = _rng(8)
    a, b = rng.random(9), rng.random(9)
    got = stratified_permutation_test([a], [b], rng=_rng())
    want = paired_permutation_test(a, b, rng=_rng())
    assert got["mean_diff"] == pytest.approx(want["mean_diff"])
    assert got["p_value"] == pytest.approx(want["p_value"])
