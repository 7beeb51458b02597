"""Ranks and nDCG@k: hand cases, the smoke fixture's formula, and pytrec_eval."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import pytrec_eval

from presentation_dependence.data.smoke import expected_ndcg_at_10
from presentation_dependence.metrics import (
    ndcg_at_k,
    ndcg_per_presentation,
    random_order_ndcg,
    ranks_from_scores,
)


def _ro(values) -> np.ndarray:
    arr = np.array(values, dtype=np.float64)
    arr.setflags(write=False)
    return arr


def test_ranks_descending_with_ties_by_index():
    assert ranks_from_scores(_ro([0.1, 0.9, 0.5])).tolist() == [3, 1, 2]
    assert ranks_from_scores(_ro([1.0, 1.0, 1.0])).tolist() == [1, 2, 3]


def test_ranks_ties_by_tiebreak_then_index():
    scores = _ro([0.2, 0.9, 0.2, 0.2])
    tiebreak = _ro([3, 1, 2, 3])
    assert ranks_from_scores(scores, tiebreak).tolist() == [3, 1, 2, 4]


def test_ranks_refuse_nan_and_allow_inf():
    with pytest.raises(ValueError, match="NaN"):
        ranks_from_scores([0.1, float("nan")])
    assert ranks_from_scores([-np.inf, 0.0, np.inf]).tolist() == [3, 2, 1]


def test_ndcg_hand_case():
    # Order by score: gains 0, 2, 1; ideal from all judged grades 3, 2, 1.
    got = ndcg_at_k(_ro([0.9, 0.8, 0.1]), _ro([0, 2, 1]), k=10, ideal_gains=_ro([2, 1, 3]))
    dcg = 0 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    idcg = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    assert got == pytest.approx(dcg / idcg, abs=1e-15)


def test_ndcg_cutoff_negative_grades_and_no_relevant():
    # k = 1 sees only the top candidate; a negative grade is gain 0 as in trec_eval.
    assert ndcg_at_k([0.5, 0.4], [-1, 2], k=1) == 0.0
    assert ndcg_at_k([0.4, 0.5], [-1, 2], k=1) == 1.0
    assert ndcg_at_k([0.4, 0.5], [0, 0]) == 0.0


def test_ndcg_ties_fall_to_lower_index():
    assert ndcg_at_k([1.0, 1.0], [0, 1], k=1) == 0.0
    assert ndcg_at_k([1.0, 1.0], [1, 0], k=1) == 1.0


@pytest.mark.parametrize("seed", range(5))
def test_ndcg_matches_smoke_formula(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 30))
    gains = rng.integers(0, 4, size=n)
    scores = rng.normal(size=n)
    all_grades = [*gains.tolist(), *rng.integers(0, 4, size=5).tolist()]  # judged, unretrieved
    ranked = gains[np.argsort(-scores, kind="stable")].tolist()
    assert ndcg_at_k(scores, gains, k=10, ideal_gains=all_grades) == pytest.approx(
        expected_ndcg_at_10(ranked, all_grades), abs=1e-12
    )


@pytest.mark.parametrize("k", [5, 10, 20])
def test_ndcg_matches_pytrec_eval(k):
    rng = np.random.default_rng(42)
    n = 25
    docids = [f"d{j:02d}" for j in range(n)]
    scores = rng.permutation(n).astype(float) + rng.random(n) * 0.1  # distinct: no ties
    grades = rng.integers(-1, 4, size=n)
    judged = {d: int(g) for d, g in zip(docids, grades, strict=True) if rng.random() < 0.8}
    judged.update({"extra1": 3, "extra2": 1})  # judged but not retrieved: only in the ideal
    gains = [judged.get(d, 0) for d in docids]
    evaluator = pytrec_eval.RelevanceEvaluator({"q": judged}, {f"ndcg_cut.{k}"})
    want = evaluator.evaluate({"q": dict(zip(docids, scores.tolist(), strict=True))})["q"]
    got = ndcg_at_k(scores, gains, k=k, ideal_gains=list(judged.values()))
    assert got == pytest.approx(want[f"ndcg_cut_{k}"], abs=1e-12)


def test_ndcg_per_presentation_rowwise_and_not_mutated():
    rng = np.random.default_rng(3)
    matrix = _ro(rng.normal(size=(4, 12)))
    gains = _ro(rng.integers(0, 4, size=12))
    ideal = _ro([3, 3, 2, 1, 1, 0])
    before = matrix.copy()
    got = ndcg_per_presentation(matrix, gains, k=5, ideal_gains=ideal)
    want = [ndcg_at_k(row, gains, k=5, ideal_gains=ideal) for row in matrix]
    np.testing.assert_allclose(got, want, atol=1e-15)
    np.testing.assert_array_equal(matrix, before)
    assert got.shape == (4,)
    np.testing.assert_array_equal(ndcg_per_presentation(matrix, np.zeros(12)), np.zeros(4))


@pytest.mark.parametrize("k", [0, -1, 2.5, True])
def test_ndcg_refuses_bad_k(k):
    with pytest.raises(ValueError, match="k must be"):
        ndcg_at_k([1.0, 0.0], [1, 0], k=k)


def test_ndcg_refuses_misaligned_gains():
    with pytest.raises(ValueError, match="expected 2"):
        ndcg_at_k([1.0, 0.0], [1, 0, 2])


@pytest.mark.parametrize(
    ("gains", "k", "ideal"),
    [
        ([1, 0, 0, 0], 1, None),
        ([1, 1, 0, 0], 1, None),
        ([3, 0, 2, 1, 0], 3, None),
        ([0, 2, 1], 10, [3, 2, 1, 1]),
        ([0, 0, 0], 2, None),
    ],
)
def test_random_order_ndcg_is_the_mean_over_every_order(gains, k, ideal):
    n = len(gains)
    every = [
        ndcg_at_k(-np.argsort(perm).astype(float), gains, k, ideal)  # perm[i]: the i-th shown
        for perm in itertools.permutations(range(n))
    ]
    assert random_order_ndcg(gains, k, ideal) == pytest.approx(np.mean(every))
    if gains == [1, 0, 0, 0]:
        assert random_order_ndcg(gains, 1) == pytest.approx(0.25)  # one correct among four
