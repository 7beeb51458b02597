"""The presentations module: perturbations, the two seeded streams, scoring under presentations."""

from __future__ import annotations

import dataclasses
import math
import zlib
from collections.abc import Sequence

import numpy as np
import pytest

from presentation_dependence.errors import ConfigError, RegistryError, RerankerContractError
from presentation_dependence.presentations import (
    PERTURBATIONS,
    PerturbationContext,
    draw_orders,
    draw_presentations,
    same_order,
    score_presentations,
)
from presentation_dependence.records import Candidate, Cost, Query, RankResult
from presentation_dependence.rerankers.identity import IdentityReranker


def ctx(n: int, b: int | None = None, relevant: tuple[int, ...] = ()) -> PerturbationContext:
    grades = np.zeros(n, dtype=np.int64)
    grades[list(relevant)] = 2
    return PerturbationContext(grades, 1, b)


@pytest.mark.parametrize("name", ["random_shuffle", "cyclic_shift", "middle_injection", "reverse"])
def test_rows_are_permutations_and_seeded(name):
    a = draw_presentations(name, 12, 5, seed=3, qid="q1", ctx=ctx(12, 4, (0, 5)))
    b = draw_presentations(name, 12, 5, seed=3, qid="q1", ctx=ctx(12, 4, (0, 5)))
    np.testing.assert_array_equal(a, b)
    for row in a:
        assert sorted(row) == list(range(12))


def test_seed_and_qid_change_the_draw():
    base = draw_presentations("random_shuffle", 20, 4, 0, "q1", ctx(20))
    assert not np.array_equal(base, draw_presentations("random_shuffle", 20, 4, 1, "q1", ctx(20)))
    assert not np.array_equal(base, draw_presentations("random_shuffle", 20, 4, 0, "q2", ctx(20)))


def test_fewer_shuffles_are_the_first_of_more():
    # a K-shuffle run draws exactly the first K shuffles of an M-shuffle run (same seed and
    # query), so scores of the two can be compared presentation by presentation
    more = draw_presentations("random_shuffle", 20, 10, 0, "q1", ctx(20))
    fewer = draw_presentations("random_shuffle", 20, 5, 0, "q1", ctx(20))
    np.testing.assert_array_equal(fewer, more[:5])


def test_reverse_is_given_and_reversed():
    p = draw_presentations("reverse", 5, 10, 0, "q", ctx(5))
    np.testing.assert_array_equal(p, [[0, 1, 2, 3, 4], [4, 3, 2, 1, 0]])


def test_cyclic_shift_with_m_equal_n_visits_every_slot_once():
    n = 8
    p = draw_presentations("cyclic_shift", n, n, 0, "q", ctx(n))
    slot_of = np.argsort(p, axis=1)  # slot of every candidate in each presentation
    for cand in range(n):
        assert sorted(slot_of[:, cand]) == list(range(n))


def test_cyclic_shift_balanced_when_m_lt_n():
    p = draw_presentations("cyclic_shift", 20, 10, 0, "q", ctx(20))
    assert p.shape == (10, 20)
    counts = np.zeros((20, 20), dtype=int)
    for row in p:
        counts[row, np.arange(20)] += 1
    assert (counts.sum(axis=1) == 10).all() and counts.max() == 1


def test_middle_injection_centres_relevant_candidates():
    p = draw_presentations("middle_injection", 10, 3, 0, "q", ctx(10, None, (2, 7)))
    for row in p:
        slots = sorted(int(np.where(row == r)[0][0]) for r in (2, 7))
        assert slots == [4, 5]


def test_pool_perturbation_keeps_slots_changes_company():
    n, b = 12, 4
    p = draw_presentations("pool_perturbation", n, 6, 0, "q", ctx(n, b))
    for row in p:
        slot_of = np.argsort(row) % b
        np.testing.assert_array_equal(slot_of, np.arange(n) % b)  # same slot index
    assert any(not np.array_equal(row, np.arange(n)) for row in p)


def test_pool_perturbation_needs_more_than_one_prompt():
    with pytest.raises(ConfigError, match="more candidates"):
        draw_presentations("pool_perturbation", 4, 2, 0, "q", ctx(4, 20))


def test_unknown_perturbation_suggests():
    with pytest.raises(RegistryError, match="random_shuffle"):
        PERTURBATIONS.get("random_shufle")


def test_same_order():
    np.testing.assert_array_equal(same_order(3, 2), [[0, 1, 2], [0, 1, 2]])


# -- the two streams, pinned to their seed material --------------------------------------------
def test_streams_are_the_documented_default_rng_seeds():
    """Bit-identical to the draws made before the draw API was unified."""
    crc = lambda s: zlib.crc32(s.encode("utf-8"))  # noqa: E731
    legacy = np.random.default_rng([7, crc("random_shuffle"), crc("q1")])
    np.testing.assert_array_equal(
        draw_presentations("random_shuffle", 9, 3, 7, "q1", ctx(9)),
        np.stack([legacy.permutation(9) for _ in range(3)]),
    )
    legacy = np.random.default_rng([7, crc("q1")])
    assert draw_orders(9, "q1", num_orders=3, seed=7) == [
        legacy.permutation(9).tolist() for _ in range(3)
    ]


def test_draw_orders_given_order_first():
    drawn = draw_orders(6, "q", num_orders=4, seed=1)
    given = draw_orders(6, "q", num_orders=4, seed=1, include_given_order=True)
    assert given[0] == list(range(6)) and given[1:] == drawn[:3]
    assert draw_orders(6, "q", num_orders=1, seed=1, include_given_order=True) == [list(range(6))]


# -- score_presentations -----------------------------------------------------------------------
class SlotReader:
    """A fake listwise readout: chunks of 2, score = first-stage rank / 10 + slot (so the
    realignment is visible), with slot, chunk, grade distribution and cost."""

    def __init__(self, break_with: str | None = None) -> None:
        self.break_with = break_with
        self.calls = 0

    def rank(self, query: Query, candidates: Sequence[Candidate]) -> RankResult:
        self.calls += 1
        n = len(candidates)
        slots = [j % 2 + 1 for j in range(n)]
        scores = [c.rank / 10 + s for c, s in zip(candidates, slots, strict=True)]
        if self.break_with == "inf":
            scores[0] = math.inf
        res = RankResult.from_scores(
            query,
            candidates,
            scores,
            slots=slots,
            chunks=[j // 2 for j in range(n)],
            grade_probs=[(0.5, 0.5)] * n,
            cost=Cost(2, 10 * n) if self.break_with != "cost" or self.calls > 1 else None,
        )
        if self.break_with == "drop":
            return dataclasses.replace(res, items=res.items[1:])
        if self.break_with == "reorder":
            return dataclasses.replace(res, items=res.items[::-1])
        if self.break_with == "slot":
            return dataclasses.replace(
                res, items=(dataclasses.replace(res.items[0], slot=None), *res.items[1:])
            )
        return res


CANDS = [Candidate(f"d{i}", f"text {i}", rank=i + 1) for i in range(4)]
QUERY = Query("q1", "fleas")


def test_scores_are_realigned_by_candidate():
    perms = [[0, 1, 2, 3], [3, 2, 1, 0], [1, 3, 0, 2]]
    ps = score_presentations(SlotReader(), QUERY, CANDS, perms)
    np.testing.assert_array_equal(ps.perms, perms)
    for m, perm in enumerate(perms):
        for j, i in enumerate(perm):
            assert ps.positions[m, i] == j
            assert ps.slots is not None and ps.slots[m, i] == j % 2 + 1
            assert ps.chunks is not None and ps.chunks[m, i] == j // 2
            assert ps.scores[m, i] == pytest.approx(CANDS[i].rank / 10 + j % 2 + 1)
    assert ps.grade_probs is not None and ps.grade_probs.shape == (3, 4, 2)
    assert ps.forward_passes.tolist() == [2, 2, 2] and ps.prompt_tokens.tolist() == [40] * 3


def test_a_scorer_without_readout_or_cost():
    ps = score_presentations(IdentityReranker(), QUERY, CANDS, [[2, 0, 1, 3]])
    assert ps.slots is None and ps.chunks is None and ps.grade_probs is None
    assert ps.forward_passes.tolist() == [0] and ps.prompt_tokens.tolist() == [0]
    np.testing.assert_allclose(ps.scores[0], [1 / c.rank for c in CANDS])
    # renumbered ranks: a list without a first stage scores by slot
    ps = score_presentations(IdentityReranker(), QUERY, CANDS, [[2, 0, 1, 3]], renumber_ranks=True)
    np.testing.assert_allclose(ps.scores[0], [1 / 2, 1 / 3, 1 / 1, 1 / 4])


@pytest.mark.parametrize(
    ("broken", "match"),
    [
        ("drop", "must return the 4 candidates"),
        ("reorder", "in the given order"),
        ("inf", "non-finite scores"),
        ("slot", "a slot for some candidates"),
        ("cost", "a cost for some"),
    ],
)
def test_a_broken_contract_fails_clearly(broken, match):
    with pytest.raises(RerankerContractError, match=match) as err:
        score_presentations(SlotReader(broken), QUERY, CANDS, [[0, 1, 2, 3], [1, 0, 3, 2]])
    assert "SlotReader" in str(err.value) and "'q1'" in str(err.value)


def test_rows_must_be_permutations():
    with pytest.raises(ValueError, match="must be a permutation"):
        score_presentations(SlotReader(), QUERY, CANDS, [[0, 0, 1, 2]])
