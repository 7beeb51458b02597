"""The judge statistics against hand-computed and scipy values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from presentation_dependence.judge.items.records import JudgeRecord
from presentation_dependence.judge.scoring.noise import compare_reruns
from presentation_dependence.judge.scoring.paired import compare_runs
from presentation_dependence.judge.scoring.settings import ScoringSettings
from presentation_dependence.judge.scoring.summary import (
    correct_in_every_placement,
    item_scores,
    summarise_records,
)
from tests.metrics.test_proportions import wilson_by_hand


def rec(
    item: str,
    correct_slot: int,
    verdict: int | None,
    *,
    placement: tuple[int, ...] | None = None,
    n: int = 4,
    repeat: int = 0,
    text: str | None = None,
    tokens: tuple[int, ...] = (),
) -> JudgeRecord:
    return JudgeRecord(
        item_id=item,
        source="t",
        subset="",
        n=n,
        placement=placement if placement is not None else tuple(range(n)),
        correct_slot=correct_slot,
        repeat=repeat,
        judgement=text if text is not None else f"verdict {verdict}",
        verdict=None if verdict is None else chr(65 + verdict),
        verdict_slot=verdict,
        parse_status="ok" if verdict is not None else "no_marker",
        token_ids=tokens,
    )


def test_conventions_and_slot_table_by_hand() -> None:
    # item x: 4 cyclic placements, correct answer at slot 0..3; verdicts: right, wrong, fail, right
    x = [
        rec("x", 0, 0, placement=(0, 1, 2, 3)),
        rec("x", 1, 0, placement=(3, 0, 1, 2)),
        rec("x", 2, None, placement=(2, 3, 0, 1)),
        rec("x", 3, 3, placement=(1, 2, 3, 0)),
    ]
    y = [rec("y", s, 0, placement=tuple(np.roll(range(4), s))) for s in range(4)]  # always A
    _, f0 = item_scores(x + y, "fail0")
    _, fc = item_scores(x + y, "chance")
    assert f0.tolist() == [0.5, 0.25]
    assert fc.tolist() == [(1 + 0 + 0.25 + 1) / 4, 0.25]
    s = summarise_records(x + y, ScoringSettings(seed=0, n_resamples=200))
    assert s["score_fail0"]["mean"] == pytest.approx(0.375)
    assert s["score_fail_chance"]["mean"] == pytest.approx((0.5625 + 0.25) / 2)
    assert (s["parse_failures"], s["parse_failure_rate"]) == (1, 1 / 8)
    acc = [r["accuracy"] for r in s["slots"]]
    assert acc == [1.0, 0.0, 0.0, 0.5]
    assert s["slots"][0]["ci_low"] == pytest.approx(wilson_by_hand(2, 2)[0])
    assert [r["named_share"] for r in s["slots"]] == pytest.approx([6 / 7, 0, 0, 1 / 7])
    assert s["slot_spread"]["spread"] == 1.0
    assert 0.0 <= s["slot_spread"]["ci_low"] <= 1.0 <= s["slot_spread"]["ci_high"] + 1e-12
    assert s["consistent_items"] == 0.0


def test_correct_in_every_placement_by_hand() -> None:
    # pairs in both orders: p right twice, q right once (it flips), r wrong twice
    pairs = [
        rec("p", 0, 0, placement=(0, 1), n=2),
        rec("p", 1, 1, placement=(1, 0), n=2),
        rec("q", 0, 1, placement=(0, 1), n=2),
        rec("q", 1, 1, placement=(1, 0), n=2),
        rec("r", 0, 1, placement=(0, 1), n=2),
        rec("r", 1, 0, placement=(1, 0), n=2),
    ]
    assert correct_in_every_placement(pairs) == pytest.approx(1 / 3)
    s = summarise_records(pairs, ScoringSettings(seed=0, n_resamples=50))
    flips = 1.0 - s["consistent_items"]  # q flips (r is wrong in both orders: consistent)
    assert flips == pytest.approx(1 / 3)
    assert correct_in_every_placement(pairs) == pytest.approx(s["score_fail0"]["mean"] - flips / 2)
    # four-way: a parse failure is not correct, so x (right, wrong, fail, right) does not count
    x = [
        rec("x", s, v, placement=tuple(np.roll(range(4), s))) for s, v in enumerate((0, 0, None, 3))
    ]
    y = [rec("y", s, s, placement=tuple(np.roll(range(4), s))) for s in range(4)]
    assert correct_in_every_placement(x + y) == 0.5


def test_spread_interval_is_seeded_and_brackets_the_point() -> None:
    rng = np.random.default_rng(1)
    recs = [
        rec(f"i{i}", s, s if rng.random() < (0.9 - 0.2 * s) else (s + 1) % 4)
        for i in range(40)
        for s in range(4)
    ]
    a = summarise_records(recs, ScoringSettings(seed=5, n_resamples=500))["slot_spread"]
    b = summarise_records(recs, ScoringSettings(seed=5, n_resamples=500))["slot_spread"]
    assert a == b
    assert a["ci_low"] <= a["spread"] <= a["ci_high"]
    one = summarise_records(recs[:4], ScoringSettings(seed=5))["slot_spread"]
    assert one["ci_low"] == one["spread"] == one["ci_high"]


def test_rerun_comparison_by_hand() -> None:
    a = [rec(f"i{i}", 0, 0 if i < 6 else 1, tokens=(1, 2, 3, 4)) for i in range(10)]
    b = list(a)
    b[0] = rec("i0", 0, 1, tokens=(1, 2, 9, 4))  # right -> wrong, first diff at token 2
    b[7] = rec("i7", 0, 0, tokens=(5,))  # wrong -> right, first diff at token 0
    c = compare_reruns(a, b)
    assert (c["identical"], c["flips"], c["flip_share"]) == (8, 2, 0.2)
    assert c["identical_ci"] == pytest.approx(list(wilson_by_hand(8, 10)))
    p_hat = (0.6 + 0.6) / 2
    assert c["noise_to_se"] == pytest.approx(math.sqrt(0.2 / (2 * p_hat * (1 - p_hat))))
    d = np.zeros(10)
    d[0], d[7] = -1, 1
    assert c["score_change"] == pytest.approx(0.0)
    assert c["score_change_se"] == pytest.approx(d.std(ddof=1) / math.sqrt(10))
    assert (c["first_diff"]["min"], c["first_diff"]["max"], c["first_diff"]["unit"]) == (
        0,
        2,
        "token",
    )
    same = compare_reruns(a, a)
    assert (same["identical_share"], same["flips"], same["noise_to_se"]) == (1.0, 0, 0.0)
    assert same["first_diff"]["count"] == 0


def test_compare_runs_paired_bootstrap_and_alignment() -> None:
    a = [rec(f"i{i}", 0, 0) for i in range(20)]
    b = [rec(f"i{i}", 0, 0 if i % 4 else 1) for i in range(20)]
    c = compare_runs(a, b, rng=np.random.default_rng(0), n_resamples=500)
    assert c["mcnemar"]["a_only"] == 5 and c["mcnemar"]["b_only"] == 0
    assert c["mcnemar"]["p_value"] == pytest.approx(2 / 2**5)
    assert c["paired_bootstrap"]["mean_diff"] == pytest.approx(0.25)
    assert c["paired_bootstrap"]["ci_low"] > 0
    with pytest.raises(ValueError, match="different requests"):
        compare_runs(a, b[:-1], rng=np.random.default_rng(0))
