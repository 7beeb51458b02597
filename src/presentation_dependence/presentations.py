"""Named perturbations: each draws M presentations (permutations) of a query's candidates.

A presentation is an int array ``perm`` of length n: slot ``j`` of the presented list shows
input candidate ``perm[j]`` (input = first-stage order). Every draw comes from the
``numpy.random.Generator`` passed in; :func:`presentation_rng` derives it from
(seed, perturbation, qid), so a query's presentations do not depend on the order queries are
processed in, on sharding, or on the other perturbations. The runner writes every permutation
to the run folder (``psi/presentations.json``).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from presentation_dependence.errors import ConfigError
from presentation_dependence.registry import Registry

__all__ = [
    "PERTURBATIONS",
    "PerturbationContext",
    "draw_presentations",
    "presentation_rng",
    "same_order",
]


@dataclass(frozen=True)
class PerturbationContext:
    """What a perturbation may look at besides n, M and the generator."""

    grades: np.ndarray  # qrels grade of each input candidate (0 when unjudged)
    relevant_grade: int = 1
    chunk_size: int | None = None  # the reranker's B, where it has one


Perturbation = Callable[[int, int, np.random.Generator, PerturbationContext], np.ndarray]
PERTURBATIONS: Registry[Perturbation] = Registry("perturbation")


def presentation_rng(seed: int, perturbation: str, qid: str) -> np.random.Generator:
    """The generator of one (perturbation, query): seeded by (seed, crc32(name), crc32(qid))."""
    return np.random.default_rng(
        [seed, zlib.crc32(perturbation.encode("utf-8")), zlib.crc32(qid.encode("utf-8"))]
    )


def same_order(n: int, m: int) -> np.ndarray:
    """The same-order null: the given order, M times."""
    return np.tile(np.arange(n), (m, 1))


@PERTURBATIONS.register("random_shuffle")
def random_shuffle(
    n: int, m: int, rng: np.random.Generator, ctx: PerturbationContext
) -> np.ndarray:
    """M uniform random permutations."""
    return np.stack([rng.permutation(n) for _ in range(m)])


@PERTURBATIONS.register("reverse")
def reverse(n: int, m: int, rng: np.random.Generator, ctx: PerturbationContext) -> np.ndarray:
    """The given order and its reverse (2 presentations whatever M: nothing else to draw)."""
    return np.stack([np.arange(n), np.arange(n)[::-1]])


@PERTURBATIONS.register("cyclic_shift")
def cyclic_shift(n: int, m: int, rng: np.random.Generator, ctx: PerturbationContext) -> np.ndarray:
    """Balanced cyclic shifts of one random base order: shift k moves every candidate by
    round(k·n/M) slots. With M = n (or a multiple of n) every candidate visits every slot equally
    often; with M < n each candidate visits M evenly spaced slots, the same number for all."""
    base = rng.permutation(n)
    shifts = sorted({round(k * n / m) % n for k in range(m)})
    return np.stack([np.roll(base, s) for s in shifts])


@PERTURBATIONS.register("middle_injection")
def middle_injection(
    n: int, m: int, rng: np.random.Generator, ctx: PerturbationContext
) -> np.ndarray:
    """Relevant candidates (grade >= relevant_grade) in the middle slots of each prompt.

    Per prompt of B slots (the whole list when the reranker has no B), the relevant candidates
    that fall in it are placed in a contiguous block centred on the prompt's middle, in random
    order; the others fill the remaining slots in random order. Candidates are first assigned to
    prompts by a random shuffle. A query without relevant candidates gets random shuffles.
    """
    b = ctx.chunk_size or n
    relevant = ctx.grades >= ctx.relevant_grade
    out = []
    for _ in range(m):
        order = rng.permutation(n)
        pres: list[int] = []
        for start in range(0, n, b):
            chunk = order[start : start + b]
            rel = [int(i) for i in chunk if relevant[i]]
            other = [int(i) for i in chunk if not relevant[i]]
            lead = (len(chunk) - len(rel)) // 2
            pres += other[:lead] + rel + other[lead:]
        out.append(pres)
    return np.array(out, dtype=np.int64)


@PERTURBATIONS.register("pool_perturbation")
def pool_perturbation(
    n: int, m: int, rng: np.random.Generator, ctx: PerturbationContext
) -> np.ndarray:
    """Keep every candidate in its slot but change the company it shares a prompt with.

    With B-slot prompts in first-stage order, the candidates at slot s of every prompt are
    permuted among those prompts: each candidate keeps its slot index and moves to a random
    prompt, so the score difference measures dependence on the other candidates, not on the
    slot. Needs more candidates than one prompt holds (top-k > B).
    """
    b = ctx.chunk_size
    if b is None or n <= b:
        raise ConfigError(
            f"pool_perturbation needs more candidates ({n}) than one prompt holds (B={b}); "
            "raise data.top_k above the reranker's chunk_size"
        )
    out = []
    for _ in range(m):
        pres = np.arange(n)
        for s in range(b):
            idx = np.arange(s, n, b)  # input positions at slot s of each prompt
            pres[idx] = rng.permutation(idx)
        out.append(pres)
    return np.stack(out)


def draw_presentations(
    name: str, n: int, m: int, seed: int, qid: str, ctx: PerturbationContext
) -> np.ndarray:
    """The (M', n) presentations of one perturbation for one query; each row a permutation."""
    perms = np.asarray(PERTURBATIONS.get(name)(n, m, presentation_rng(seed, name, qid), ctx))
    if perms.ndim != 2 or perms.shape[1] != n:
        raise RuntimeError(f"perturbation {name} returned shape {perms.shape} for n={n}")
    for row in perms:
        if not np.array_equal(np.sort(row), np.arange(n)):
            raise RuntimeError(f"perturbation {name} returned a non-permutation: {row}")
    return perms.astype(np.int64)
