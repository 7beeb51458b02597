"""Where each response sits in an N-way judge prompt: seeded draws and full sweeps.

A placement is a tuple ``p`` of length N: slot j (letter A + j) shows response ``p[j]``. Every
random draw comes from :func:`~presentation_dependence.presentations.draw_presentations` on
the stream ``("judge-placement", item id)``, seeded by (seed, item id) only, so an
item's placements are fixed by the seed and its id *before* anything is judged or cached; they
do not depend on load order, sharding, batch size or a cache (RewardBench 2 drew the slot with an
unseeded ``np.random.randint`` inside a cached ``datasets.map``: only 4 of the 24 orders could
occur and the draw was frozen by the cache).

Modes:

``seeded``  one uniform random permutation per item (all N! orders possible).
``cyclic``  N placements: a seeded base order and its N rotations, so the correct response visits
            every slot exactly once and keeps its neighbours' cyclic order.
``full``    all N! orders, in lexicographic order (24 for N = 4; refused above N = 6).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Literal

from presentation_dependence.errors import ConfigError
from presentation_dependence.judge.items.records import JudgeRequest, ResponseItem
from presentation_dependence.presentations import draw_presentations

__all__ = ["PLACEMENT_MODES", "PlacementMode", "make_requests", "placements"]

PlacementMode = Literal["seeded", "cyclic", "full"]
PLACEMENT_MODES: tuple[str, ...] = ("seeded", "cyclic", "full")
MAX_FULL_N = 6


def placements(mode: str, n: int, seed: int, item_id: str) -> list[tuple[int, ...]]:
    """The placements of one item with ``n`` responses under ``mode``."""
    if n < 2:
        raise ConfigError(f"an N-way judge needs N >= 2 responses, got {n}")
    if mode == "full":
        if n > MAX_FULL_N:
            raise ConfigError(
                f"placement 'full' with N={n} is {math.factorial(n)} orders per item; use "
                f"'cyclic' (N placements) above N={MAX_FULL_N}"
            )
        return [tuple(p) for p in itertools.permutations(range(n))]
    draws = {"seeded": ("random_shuffle", 1), "cyclic": ("cyclic_shift", n)}
    if mode not in draws:
        raise ConfigError(
            f"unknown placement mode {mode!r}; use one of {', '.join(PLACEMENT_MODES)}"
        )
    # seeded: one uniform permutation; cyclic: a base permutation and its n rotations
    name, m = draws[mode]
    perms = draw_presentations(name, n, m, seed, item_id, stream=("judge-placement", item_id))
    return [tuple(int(i) for i in p) for p in perms]


def make_requests(
    items: Sequence[ResponseItem], mode: str, seed: int, *, repeats: int = 1
) -> list[JudgeRequest]:
    """Judge requests for every item (exactly one correct response each) x placement x repeat,
    in item order, then placement, then repeat."""
    out: list[JudgeRequest] = []
    for item in items:
        if item.num_correct != 1:
            raise ConfigError(
                f"item {item.item_id!r} has {item.num_correct} correct responses; the N-way judge "
                "needs exactly one. Fix: data.require_one_correct: true (or data.chosen_index)"
            )
        for p in placements(mode, len(item.responses), seed, item.item_id):
            out.extend(JudgeRequest(item, p, r) for r in range(repeats))
    return out
