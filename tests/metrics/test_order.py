"""Order-instability metrics: Kendall τ-b, τ-PSI and its tie rule, variances, ΔnDCG, Zeng PSI."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from presentation_dependence.metrics import (
    delta_ndcg,
    kendall_tau_b,
    mean_pairwise_tau,
    rank_variance,
    score_spread,
    score_variance,
    tau_psi,
    tied_share,
    zeng_psi,
    zeng_psi_corpus,
)


def _ro(values) -> np.ndarray:
    arr = np.array(values, dtype=np.float64)
    arr.setflags(write=False)
    return arr


def test_kendall_identical_and_reversed():
    x = _ro([0.1, 0.5, 0.3, 0.9])
    assert kendall_tau_b(x, x) == 1.0
    assert kendall_tau_b(x, -x) == -1.0


@pytest.mark.parametrize("n", [5, 6, 8, 10, 43])
def test_identical_and_reversed_orders_are_exact(n):
    # scipy alone gives 0.9999999999999999 for these n; a same-order null must be exactly 0.
    rng = np.random.default_rng(n)
    x = _ro(rng.integers(0, 3, size=n).astype(float) + np.arange(n) % 2)
    if np.all(x == x[0]):
        x = _ro(np.arange(n, dtype=float))
    assert kendall_tau_b(x, x * 2.0 + 1.0) == 1.0
    assert kendall_tau_b(x, -x) == -1.0
    assert tau_psi(_ro([x, x, x])) == 0.0
    assert tau_psi(_ro(np.arange(n, dtype=float)[None, :].repeat(3, axis=0))) == 0.0


@pytest.mark.parametrize("seed", range(10))
def test_kendall_matches_scipy_with_ties(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, size=15).astype(float)
    y = rng.integers(0, 3, size=15).astype(float)
    want = stats.kendalltau(x, y, variant="b").statistic
    assert kendall_tau_b(x, y) == pytest.approx(want, abs=1e-12)


def test_kendall_undefined_is_nan():
    assert math.isnan(kendall_tau_b([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))
    assert math.isnan(kendall_tau_b([1.0, 2.0, 3.0], [2.0, 2.0, 2.0]))
    assert math.isnan(kendall_tau_b([1.0], [2.0]))


def test_tau_psi_identical_is_zero_and_reversal_is_one():
    row = [0.3, 0.1, 0.9, 0.5]
    assert tau_psi(_ro([row, row, row])) == 0.0
    assert tau_psi(_ro([row, [-v for v in row]])) == 1.0


def test_mean_pairwise_tau_hand_case():
    up, down = [1.0, 2.0, 3.0], [3.0, 2.0, 1.0]
    # pairs: (up, up) = 1, (up, down) = -1 twice -> mean -1/3, τ-PSI (1 + 1/3) / 2 = 2/3
    assert mean_pairwise_tau(_ro([up, up, down])) == pytest.approx(-1 / 3)
    assert tau_psi(_ro([up, up, down])) == pytest.approx(2 / 3)


def test_aligned_by_candidate_not_slot():
    # The same scores per candidate in every presentation: perfectly stable, whatever the slots.
    scores = _ro([[0.9, 0.2, 0.5], [0.9, 0.2, 0.5]])
    assert tau_psi(scores) == 0.0


def test_all_ties_scorer_is_not_stable():
    all_tied = _ro(np.full((5, 8), 2.0))
    assert tau_psi(all_tied) == 0.5
    assert tau_psi(all_tied) != 0.0
    # The scores themselves never move, which score_variance shows.
    np.testing.assert_array_equal(score_variance(all_tied), np.zeros(8))


def test_one_constant_presentation_counts_as_tau_zero():
    row = [0.1, 0.4, 0.2, 0.8]
    # pairs: (row, row) = 1, (row, const) = 0 twice -> mean 1/3
    assert mean_pairwise_tau(_ro([row, row, [0.5] * 4])) == pytest.approx(1 / 3)


def test_partial_ties_use_tau_b():
    a = [1.0, 1.0, 2.0, 3.0]
    b = [1.0, 2.0, 2.0, 3.0]
    assert mean_pairwise_tau(_ro([a, b])) == pytest.approx(stats.kendalltau(a, b).statistic)


def test_mean_pairwise_tau_degenerate_shapes():
    with pytest.raises(ValueError, match="at least 2 presentations"):
        mean_pairwise_tau(_ro([[1.0, 2.0]]))
    assert math.isnan(mean_pairwise_tau(_ro([[1.0], [2.0]])))
    with pytest.raises(ValueError, match="NaN"):
        tau_psi([[1.0, float("nan")], [1.0, 2.0]])


def test_score_variance_population():
    np.testing.assert_allclose(score_variance(_ro([[1.0, 2.0], [3.0, 2.0]])), [1.0, 0.0])


def test_rank_variance_hand_case_and_tiebreaks():
    np.testing.assert_allclose(rank_variance(_ro([[3.0, 2.0, 1.0], [1.0, 2.0, 3.0]])), [1, 0, 1])
    tied = _ro(np.ones((2, 3)))
    # A tie-break shared by all presentations resolves ties identically: no rank variance.
    np.testing.assert_array_equal(rank_variance(tied, tiebreak=_ro([2, 1, 3])), [0, 0, 0])
    # A per-presentation tie-break (the slot) makes the tied scorer's ranks move.
    slots = _ro([[0, 1, 2], [2, 1, 0]])
    np.testing.assert_allclose(rank_variance(tied, tiebreak=slots), [1, 0, 1])
    with pytest.raises(ValueError, match="tiebreak must have shape"):
        rank_variance(tied, tiebreak=[1, 2])


def test_delta_ndcg_hand_case():
    got = delta_ndcg(_ro([0.5, 0.7, 0.6]))
    assert got["max_minus_min"] == pytest.approx(0.2)
    assert got["std"] == pytest.approx(math.sqrt(0.02 / 3))
    assert got["mean"] == pytest.approx(0.6)
    assert (got["min"], got["max"]) == (0.5, 0.7)


def test_zeng_psi_readme_example():
    # Qwen3-Reranker-0.6B on FineWeb-PosQ, nDCG@10 for beginning / middle / end.
    got = zeng_psi(_ro([0.9503, 0.9497, 0.9246]))
    assert got == pytest.approx(1 - 0.9246 / 0.9503, abs=1e-15)
    assert round(got, 3) == 0.027


def test_zeng_psi_edges():
    assert zeng_psi([0.4]) == 0.0
    assert zeng_psi([0.5, 0.25]) == 0.5
    assert math.isnan(zeng_psi([0.0, 0.0]))
    with pytest.raises(ValueError, match="non-negative"):
        zeng_psi([0.5, -0.1])
    with pytest.raises(ValueError, match="empty"):
        zeng_psi([])


def test_zeng_psi_corpus_uses_bucket_means():
    buckets = {"slot-1": _ro([1.0, 0.5]), "slot-5": _ro([0.5])}
    assert zeng_psi_corpus(buckets) == pytest.approx(1 - 0.5 / 0.75)
    with pytest.raises(ValueError, match="no queries"):
        zeng_psi_corpus({"a": [0.5], "b": []})


def test_inputs_not_mutated():
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(4, 6))
    before = matrix.copy()
    matrix.setflags(write=False)
    tau_psi(matrix)
    score_variance(matrix)
    rank_variance(matrix, tiebreak=np.arange(6))
    score_spread(matrix)
    tied_share(matrix)
    np.testing.assert_array_equal(matrix, before)


def test_score_spread_hand_case():
    # row 1: std of (0, 3) = 1.5; row 2: all equal = 0 -> mean 0.75
    assert score_spread(_ro([[0.0, 3.0], [1.0, 1.0]])) == pytest.approx(0.75)
    assert score_spread(_ro([[2.0], [1.0]])) == 0.0


def test_tied_share_hand_case():
    # row 1: 1.0 and 1.0005 tie (tol 1e-3), 2.0 does not -> 2/3; row 2: all distinct -> 0
    m = _ro([[1.0, 1.0005, 2.0], [0.0, 1.0, 2.0]])
    assert tied_share(m) == pytest.approx(1 / 3)
    assert tied_share(m, tol=0.0) == 0.0
    assert tied_share(_ro([[1.5, 1.5, 1.5]])) == 1.0
    assert tied_share(_ro([[1.5]])) == 0.0
    with pytest.raises(ValueError, match="tol"):
        tied_share(m, tol=-1)


def test_collapsed_scorer_is_stable_but_flat():
    # the failure mode spread and ties guard against: a near-constant scorer
    flat = _ro([[1.0, 1.0 + 1e-4, 1.0 + 2e-4]] * 3)
    assert tau_psi(flat) == 0.0
    assert score_spread(flat) < 1e-3
    assert tied_share(flat) == 1.0
