"""How far the verdict probabilities move with the placement, by hand."""

from __future__ import annotations

import pytest

from presentation_dependence.judge.items.records import JudgeRecord
from presentation_dependence.judge.scoring.agreement import probability_agreement


def _rec(item: str, placement: tuple[int, ...], by_response: list[float], repeat: int = 0):
    slots = [by_response[placement[j]] for j in range(len(placement))]
    best = max(range(len(slots)), key=slots.__getitem__)
    extra = {"verdict_probs": slots, "response_probs": by_response}
    return JudgeRecord(
        item_id=item,
        source="t",
        subset="",
        n=len(placement),
        placement=placement,
        correct_slot=placement.index(0),
        repeat=repeat,
        judgement="",
        verdict=chr(65 + best),
        verdict_slot=best,
        parse_status="ok",
        extra=extra,
    )


def test_consistency_and_margin_by_hand() -> None:
    records = [
        # item a: P(response 0) 0.6 in one order, 0.3 in the other: ((0.3)² + (0.3)²) / 2 = 0.09
        _rec("a", (0, 1), [0.6, 0.4]),
        _rec("a", (1, 0), [0.3, 0.7]),
        _rec("a", (1, 0), [0.9, 0.1], repeat=1),  # a rerun: left out
        # item b: the same probabilities in both orders: 0
        _rec("b", (0, 1), [0.55, 0.45]),
        _rec("b", (1, 0), [0.55, 0.45]),
    ]
    out = probability_agreement(records)
    assert out["consistency"] == pytest.approx((0.09 + 0.0) / 2)
    # margins 0.2, 0.4, 0.1, 0.1: median 0.15
    assert out["median_margin"] == pytest.approx(0.15)


def test_four_responses_average_over_placement_pairs() -> None:
    p = [0.4, 0.3, 0.2, 0.1]
    q = [0.1, 0.2, 0.3, 0.4]
    records = [_rec("c", (0, 1, 2, 3), p), _rec("c", (1, 2, 3, 0), p), _rec("c", (2, 3, 0, 1), q)]
    # pairs (p, p) 0, (p, q) and (q, p): mean_d of (0.09, 0.01, 0.01, 0.09) = 0.05 each
    assert probability_agreement(records)["consistency"] == pytest.approx((0 + 0.05 + 0.05) / 3)


def test_records_without_probabilities_give_none() -> None:
    rec = _rec("d", (0, 1), [0.5, 0.5])
    bare = JudgeRecord(**{**rec.__dict__, "extra": {}})
    assert probability_agreement([bare]) == {"consistency": None, "median_margin": None}
    assert probability_agreement([]) == {"consistency": None, "median_margin": None}
