"""Presentations: the seeded orders a query's candidates are shown in, and scoring under them.

A presentation is an int array ``perm`` of length n: slot ``j`` of the presented list shows
input candidate ``perm[j]`` (input = first-stage order). Every draw comes from
``seeding.named_rng(seed, *stream)``, so a query's presentations do not
depend on the order queries are processed in, on sharding, or on other draws. Two streams exist:

* a named perturbation (:data:`PERTURBATIONS`, :func:`draw_presentations`): stream
  ``(perturbation, qid)``, i.e. ``default_rng([seed, crc32(name), crc32(qid)])`` (PSI, QA,
  judge response ranking, λ selection; ``psi/presentations.json`` records them);
* K shuffled orders (:func:`draw_orders`): stream ``(qid,)``, i.e.
  ``default_rng([seed, crc32(qid)])`` (batched self-consistency, the API teacher, silver labels).

:func:`score_presentations` scores a list under each presentation with any reranker, checks the
reranker's contract once (every candidate returned, identity and input order kept, finite
scores, readout fields and cost reported for all or none) and realigns everything by candidate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable

import numpy as np

from presentation_dependence.errors import ConfigError, RerankerContractError
from presentation_dependence.records import Candidate, Query, RankResult
from presentation_dependence.registry import Registry
from presentation_dependence.seeding import named_rng

__all__ = [
    "NULL",
    "PERTURBATIONS",
    "BatchRanker",
    "PerturbationContext",
    "PresentationScores",
    "Ranker",
    "draw_orders",
    "draw_presentations",
    "same_order",
    "score_presentation",
    "score_presentations",
]


class Ranker(Protocol):
    """What scoring under presentations needs of a reranker: ``rank``. The full
    :class:`~presentation_dependence.rerankers.Reranker` protocol extends it (rerankers sit
    above this module)."""

    def rank(self, query: Query, candidates: Sequence[Candidate]) -> RankResult:
        """Score ``candidates`` for ``query``; return every candidate, input order kept."""
        ...


@runtime_checkable
class BatchRanker(Ranker, Protocol):
    """A ranker that scores several presentations of one query in one call (sharing forward
    passes where it can): :func:`score_presentations` uses ``rank_batch`` where it exists."""

    def rank_batch(self, query: Query, lists: Sequence[Sequence[Candidate]]) -> list[RankResult]:
        """``rank(query, lists[k])`` for every k, in order."""
        ...


@dataclass(frozen=True)
class PerturbationContext:
    """What a perturbation may look at besides n, M and the generator."""

    grades: np.ndarray  # qrels grade of each input candidate (0 when unjudged)
    relevant_grade: int = 1
    chunk_size: int | None = None  # the reranker's B, where it has one


Perturbation = Callable[[int, int, np.random.Generator, PerturbationContext], np.ndarray]
PERTURBATIONS: Registry[Perturbation] = Registry(
    "perturbation", entry_points="presentation_dependence.perturbations"
)
NULL = "same_order"  # the variant name of the same-order null (PSI, QA)


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
    name: str,
    n: int,
    m: int,
    seed: int,
    qid: str,
    ctx: PerturbationContext | None = None,
    *,
    stream: tuple[str, ...] | None = None,
) -> np.ndarray:
    """The (M', n) presentations of perturbation ``name`` for one query; each row a permutation.

    Drawn from ``named_rng(seed, *stream)``, ``stream`` = ``(name, qid)`` by default.
    """
    ctx = ctx if ctx is not None else PerturbationContext(np.zeros(n, dtype=np.int64))
    rng = named_rng(seed, *(stream if stream is not None else (name, qid)))
    perms = np.asarray(PERTURBATIONS.get(name)(n, m, rng, ctx))
    if perms.ndim != 2 or perms.shape[1] != n:
        raise RuntimeError(f"perturbation {name} returned shape {perms.shape} for n={n}")
    for row in perms:
        if not np.array_equal(np.sort(row), np.arange(n)):
            raise RuntimeError(f"perturbation {name} returned a non-permutation: {row}")
    return perms.astype(np.int64)


def draw_orders(
    n: int, qid: str, *, num_orders: int, seed: int, include_given_order: bool = False
) -> list[list[int]]:
    """K shuffled orders of a query's ``n`` candidates (lists of input positions), stream
    ``(qid,)``. With ``include_given_order`` the first is the given order and K - 1 are random;
    the random ones are the first draws of the same stream either way."""
    given = [list(range(n))] if include_given_order else []
    k = num_orders - len(given)
    if k <= 0:
        return given[:num_orders]
    drawn = draw_presentations("random_shuffle", n, k, seed, qid, stream=(qid,))
    return given + [[int(i) for i in row] for row in drawn]


def _broken(reranker: Ranker, query: Query, problem: str) -> RerankerContractError:
    return RerankerContractError(
        f"{type(reranker).__name__} broke the reranker contract on query {query.qid!r}: it "
        f"{problem}. Fix its rank() (build the result with RankResult.from_scores)"
    )


def _shown(
    candidates: Sequence[Candidate], perm: Sequence[int] | np.ndarray, renumber_ranks: bool
) -> list[Candidate]:
    shown = [candidates[int(i)] for i in perm]
    if renumber_ranks:
        shown = [replace(c, rank=j + 1) for j, c in enumerate(shown)]
    return shown


def _checked(
    reranker: Ranker, query: Query, shown: Sequence[Candidate], res: RankResult
) -> RankResult:
    got = [it.candidate.docid for it in res.items]
    if got != [c.docid for c in shown]:
        raise _broken(
            reranker,
            query,
            f"must return the {len(shown)} candidates it was given, in the given order "
            f"({[c.docid for c in shown][:3]}...), got {len(got)} ({got[:3]}...)",
        )
    if not all(math.isfinite(it.score) for it in res.items):
        raise _broken(reranker, query, "returned non-finite scores")
    return res


def score_presentation(
    reranker: Ranker,
    query: Query,
    candidates: Sequence[Candidate],
    perm: Sequence[int] | np.ndarray,
    *,
    renumber_ranks: bool = False,
) -> RankResult:
    """``reranker.rank`` of the list presented by ``perm`` (slot j shows ``candidates[perm[j]]``),
    its contract checked: every candidate back, in the presented order, with a finite score.
    ``renumber_ranks`` gives the presented list first-stage ranks 1..n in slot order, for lists
    without a first stage of their own (judge responses), so score ties resolve by slot."""
    shown = _shown(candidates, perm, renumber_ranks)
    return _checked(reranker, query, shown, reranker.rank(query, shown))


def _rank_all(reranker: Ranker, query: Query, lists: list[list[Candidate]]) -> list[RankResult]:
    """Every presented list ranked: in one ``rank_batch`` call where the ranker has one."""
    if not isinstance(reranker, BatchRanker):
        return [reranker.rank(query, shown) for shown in lists]
    results = reranker.rank_batch(query, lists)
    if len(results) != len(lists):
        raise _broken(reranker, query, f"returned {len(results)} results for {len(lists)} lists")
    return results


@dataclass(frozen=True)
class PresentationScores:
    """One query's list scored under M presentations, every array aligned by input candidate.
    ``slots``/``chunks``/``grade_probs`` are ``None`` when the reranker reports no readout;
    ``forward_passes``/``prompt_tokens`` are 0 where it reports no cost (no language model)."""

    perms: np.ndarray  # (M, n) int64: slot j of presentation m shows input candidate perms[m, j]
    scores: np.ndarray  # (M, n) float64: score of input candidate i in presentation m
    slots: np.ndarray | None  # (M, n) int64: 1-based slot of candidate i within its prompt
    chunks: np.ndarray | None  # (M, n) int64: 0-based prompt (chunk) of candidate i
    grade_probs: np.ndarray | None  # (M, n, G) float64: P(g) read at that slot
    forward_passes: np.ndarray  # (M,) int64
    prompt_tokens: np.ndarray  # (M,) int64

    @property
    def positions(self) -> np.ndarray:
        """(M, n) int64: the 0-based presented position of input candidate i."""
        return np.argsort(self.perms, axis=1)


def score_presentations(
    reranker: Ranker,
    query: Query,
    candidates: Sequence[Candidate],
    perms: Sequence[Sequence[int]] | np.ndarray,
    *,
    renumber_ranks: bool = False,
) -> PresentationScores:
    """Score ``candidates`` under every row of ``perms`` (see :func:`score_presentation`) and
    realign scores, slots, chunks, grade distributions and cost by input candidate. A reranker
    reports each readout field and its cost for every candidate and presentation or for none."""
    n = len(candidates)
    perm_arr = np.asarray(perms, dtype=np.int64).reshape(len(perms), n)
    if not (np.sort(perm_arr, axis=1) == np.arange(n)).all():
        raise ValueError(f"every row of perms must be a permutation of {n} candidates")
    lists = [_shown(candidates, p, renumber_ranks) for p in perm_arr]
    results = [
        _checked(reranker, query, shown, res)
        for shown, res in zip(lists, _rank_all(reranker, query, lists), strict=True)
    ]
    order = np.argsort(perm_arr, axis=1)  # presented position of each input candidate

    def aligned(field: str, what: str) -> np.ndarray | None:
        rows = [[getattr(it, field) for it in res.items] for res in results]
        have = {v is not None for row in rows for v in row}
        if have == {True, False}:
            raise _broken(reranker, query, f"reported {what} for some candidates, not all")
        if have != {True}:
            return None
        if field == "grade_probs" and len({len(v) for row in rows for v in row}) > 1:
            raise _broken(reranker, query, "reported grade distributions of several sizes")
        return np.stack([np.asarray(row)[o] for row, o in zip(rows, order, strict=True)])

    scores = aligned("score", "scores")  # None only when there is nothing to score
    costs = [res.cost for res in results]
    if None in costs and any(costs):
        raise _broken(reranker, query, "reported a cost for some presentations, not all")
    return PresentationScores(
        perms=perm_arr,
        scores=scores if scores is not None else np.zeros((len(perm_arr), n)),
        slots=aligned("slot", "a slot"),
        chunks=aligned("chunk", "a chunk"),
        grade_probs=aligned("grade_probs", "a grade distribution"),
        forward_passes=np.array([c.forward_passes if c else 0 for c in costs], dtype=np.int64),
        prompt_tokens=np.array([c.prompt_tokens if c else 0 for c in costs], dtype=np.int64),
    )
