import numpy as np
import pytest

from presentation_dependence.errors import ConfigError, RegistryError
from presentation_dependence.presentations import (
    PERTURBATIONS,
    PerturbationContext,
    draw_presentations,
    same_order,
)


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
