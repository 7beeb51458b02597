"""Seeded placements and sweeps: drawn from (seed, item id) only."""

from __future__ import annotations

import itertools

import pytest

from presentation_dependence.errors import ConfigError
from presentation_dependence.judge.placement import make_requests, placements
from tests.judge.conftest import make_items


def test_seeded_is_a_function_of_seed_and_item_id() -> None:
    a = placements("seeded", 4, 0, "x")
    assert a == placements("seeded", 4, 0, "x")
    assert sorted(a[0]) == [0, 1, 2, 3]
    draws = {placements("seeded", 4, 0, f"item{i}")[0] for i in range(400)}
    assert len(draws) == 24  # every order can occur (RewardBench 2's swap reached 4 of 24)
    assert {placements("seeded", 4, s, "x")[0] for s in range(50)} != {a[0]}


def test_cyclic_visits_every_slot_once() -> None:
    ps = placements("cyclic", 5, 3, "item")
    assert len(ps) == 5 and len(set(ps)) == 5
    for target in range(5):
        assert sorted(p.index(target) for p in ps) == list(range(5))
    assert ps[0] == placements("seeded", 5, 3, "item")[0]


def test_full_sweep() -> None:
    assert placements("full", 4, 0, "x") == list(itertools.permutations(range(4)))
    with pytest.raises(ConfigError):
        placements("full", 7, 0, "x")
    with pytest.raises(ConfigError):
        placements("random", 4, 0, "x")


def test_requests_do_not_depend_on_item_order() -> None:
    items = make_items(6)
    fwd = make_requests(items, "cyclic", 0, repeats=2)
    rev = make_requests(items[::-1], "cyclic", 0, repeats=2)
    assert len(fwd) == 6 * 4 * 2
    assert {r.key for r in fwd} == {r.key for r in rev}
    slots = [r.correct_slot for r in fwd if r.item.item_id == "it01" and r.repeat == 0]
    assert sorted(slots) == [0, 1, 2, 3]
