"""HotpotQA answer normalisation, EM/F1 and flip direction on hand-made cases."""

from __future__ import annotations

import pytest

from presentation_dependence.metrics.decisions import answer_flip, flip_rate, normalize_answer
from presentation_dependence.qa.scoring import (
    best_em_f1,
    exact_match,
    extract_answer,
    f1_score,
    flip_directions,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Eiffel Tower", "eiffel tower"),
        ("  a   Tale of Two Cities. ", "tale of two cities"),
        ("An apple, the pear and a plum!", "apple pear and plum"),
        ("Theatre", "theatre"),  # 'the' only as a whole word
        ("Anne", "anne"),  # 'an' only as a whole word
        ("U.S.A.", "usa"),
        ("Yes.", "yes"),
        ("NO!", "no"),
        ("rock-n-roll", "rocknroll"),  # punctuation is removed, not replaced by a space
        ("Chief of\n Protocol", "chief of protocol"),
        ("", ""),
        ("the", ""),
    ],
)
def test_normalize_answer(text: str, expected: str) -> None:
    assert normalize_answer(text) == expected


def test_exact_match_after_normalisation() -> None:
    assert exact_match("the Chief of Protocol.", "Chief of Protocol") == 1.0
    assert exact_match("Chief Protocol", "Chief of Protocol") == 0.0
    assert exact_match("Yes", "yes") == 1.0


def test_f1_token_overlap() -> None:
    # pred {chief, protocol} vs gold {chief, of, protocol}: P = 1, R = 2/3, F1 = 0.8
    assert f1_score("Chief Protocol", "Chief of Protocol") == pytest.approx(0.8)
    # clipped counts: pred "paris paris" vs gold "paris": P = 1/2, R = 1 -> 2/3
    assert f1_score("Paris Paris", "Paris") == pytest.approx(2 / 3)
    assert f1_score("London", "Paris") == 0.0
    assert f1_score("", "Paris") == 0.0
    assert f1_score("The Paris.", "paris") == 1.0


def test_f1_yes_no_gets_no_partial_credit() -> None:
    # HotpotQA: a yes/no/noanswer mismatch scores 0 even with token overlap
    assert f1_score("yes it is", "yes") == 0.0
    assert f1_score("yes", "yes it is") == 0.0
    assert f1_score("no", "yes") == 0.0
    assert f1_score("Yes!", "yes") == 1.0
    assert f1_score("noanswer", "noanswer") == 1.0


def test_best_over_several_golds() -> None:
    assert best_em_f1("NYC", ["New York City", "NYC"]) == (1.0, 1.0)
    em, f1 = best_em_f1("New York", ["New York City", "Big Apple"])
    assert em == 0.0 and f1 == pytest.approx(0.8)
    with pytest.raises(ValueError):
        best_em_f1("x", [])


@pytest.mark.parametrize(
    ("generated", "expected"),
    [
        ("Chief of Protocol\nShe was ...", "Chief of Protocol"),
        ("\n\n  Answer: Animorphs  \n", "Animorphs"),
        ("ANSWER:\nYes", "Yes"),
        ("The answer is: 1999\n", "1999"),
        ("the answer is Terry Richardson.", "Terry Richardson."),
        ("The answering machine", "The answering machine"),
        ("", ""),
        ("   \n ", ""),
    ],
)
def test_extract_answer(generated: str, expected: str) -> None:
    assert extract_answer(generated) == expected


def test_answer_flip_uses_normalised_answers() -> None:
    assert not answer_flip(["The Beatles", "beatles.", "BEATLES"])
    assert answer_flip(["The Beatles", "The Rolling Stones"])
    assert not answer_flip(["yes"])
    # three questions: one flips -> flip rate 1/3
    changed = [answer_flip(a) for a in (["a cat", "cat"], ["yes", "no"], ["x", "x", "x"])]
    assert changed == [False, True, False]
    assert flip_rate(changed) == pytest.approx(1 / 3)


def test_flip_directions_given_right() -> None:
    d = flip_directions(True, [True, False, False, True])
    assert d.right_to_wrong == 0.5 and d.wrong_to_right == 0.0
    assert d.any_right_to_wrong == 1.0 and d.any_wrong_to_right == 0.0


def test_flip_directions_given_wrong() -> None:
    d = flip_directions(False, [False, True, False, False, False])
    assert d.right_to_wrong == 0.0 and d.wrong_to_right == pytest.approx(0.2)
    assert d.any_right_to_wrong == 0.0 and d.any_wrong_to_right == 1.0


def test_flip_directions_no_change() -> None:
    for given in (True, False):
        d = flip_directions(given, [given] * 3)
        assert (d.right_to_wrong, d.wrong_to_right) == (0.0, 0.0)
        assert (d.any_right_to_wrong, d.any_wrong_to_right) == (0.0, 0.0)
    with pytest.raises(ValueError):
        flip_directions(True, [])
