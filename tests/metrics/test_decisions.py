"""Decision flips: retained sets, Jaccard, answer and preference flips."""

from __future__ import annotations

import numpy as np
import pytest

from presentation_dependence.metrics import (
    answer_flip,
    flip_rate,
    jaccard,
    mean_pairwise_jaccard,
    normalize_answer,
    pair_flip_rate,
    retained_set,
    retained_set_changed,
)

DOCS = ["a", "b", "c", "d"]


def _ro(values) -> np.ndarray:
    arr = np.array(values, dtype=np.float64)
    arr.setflags(write=False)
    return arr


def test_retained_set_threshold_is_inclusive():
    assert retained_set(_ro([2.0, 1.5, 1.0, 3.0]), DOCS, threshold=1.5) == {"a", "b", "d"}


def test_retained_set_top_k_and_tie_at_the_cut():
    scores = _ro([2.0, 1.0, 1.0, 3.0])
    assert retained_set(scores, DOCS, top_k=2) == {"a", "d"}
    # b and c tie for the third place: the lower index wins, or the lower tie-break.
    assert retained_set(scores, DOCS, top_k=3) == {"a", "b", "d"}
    assert retained_set(scores, DOCS, top_k=3, tiebreak=_ro([1, 3, 2, 4])) == {"a", "c", "d"}
    assert retained_set(scores, DOCS, top_k=10) == set(DOCS)
    assert retained_set(scores, DOCS, top_k=0) == frozenset()


def test_retained_set_argument_errors():
    with pytest.raises(ValueError, match="exactly one"):
        retained_set([1.0] * 4, DOCS)
    with pytest.raises(ValueError, match="exactly one"):
        retained_set([1.0] * 4, DOCS, threshold=0.5, top_k=2)
    with pytest.raises(ValueError, match="distinct"):
        retained_set([1.0, 2.0], ["a", "a"], top_k=1)


def test_jaccard_hand_cases():
    assert jaccard(frozenset("ab"), frozenset("bc")) == pytest.approx(1 / 3)
    assert jaccard(frozenset("ab"), frozenset("ab")) == 1.0
    assert jaccard(frozenset(), frozenset()) == 1.0
    assert jaccard(frozenset(), frozenset("a")) == 0.0


def test_mean_pairwise_jaccard():
    sets = [frozenset("ab"), frozenset("ab"), frozenset("a")]
    assert mean_pairwise_jaccard(sets) == pytest.approx((1 + 0.5 + 0.5) / 3)
    with pytest.raises(ValueError, match="at least 2"):
        mean_pairwise_jaccard([frozenset("a")])


def test_retained_set_changed_and_flip_rate():
    assert not retained_set_changed([frozenset("ab"), frozenset("ba")])
    assert retained_set_changed([frozenset("ab"), frozenset("ab"), frozenset("a")])
    assert not retained_set_changed([frozenset("a")])
    assert flip_rate([True, False, False, True]) == 0.5
    with pytest.raises(ValueError):
        flip_rate([])


def test_answer_flip_normalises():
    assert normalize_answer("  The Eiffel-Tower. ") == "eiffeltower"
    assert not answer_flip(["The Eiffel Tower.", "eiffel tower", "an Eiffel  Tower"])
    assert answer_flip(["Paris", "paris", "London"])
    assert not answer_flip(["Paris"])


def test_pair_flip_rate_hand_case():
    pref = np.array([[True, True, False], [True, False, False]])
    pref.setflags(write=False)
    # pair 0 stable (True, True), pair 1 flips, pair 2 stable (False, False)
    assert pair_flip_rate(pref) == pytest.approx(1 / 3)
    assert pair_flip_rate([[1, 0], [1, 1]]) == 0.5
    assert pair_flip_rate([[True, False]]) == 0.0  # one presentation cannot flip
    with pytest.raises(ValueError, match="booleans"):
        pair_flip_rate([[0.5, 1.0], [1.0, 1.0]])
