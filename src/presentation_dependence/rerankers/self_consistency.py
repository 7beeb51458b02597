"""BatchedSelfConsistencyReranker: average a base reranker over K random presentation orders.

Batched self-consistency (compare permutation self-consistency, Tang et al. 2024, and
"batched self-consistency", EMNLP 2025): for each query draw K permutations of the candidates,
score every presentation with the base reranker (``base``, any registered reranker block), and
give each candidate the mean of its K scores, aligned by candidate (input position), not by
slot. Expected-grade scores are absolute, so averaging them is meaningful; the spread of a
candidate's K scores is kept as ``score_std``.

The permutations are :func:`~presentation_dependence.presentations.draw_orders`, drawn from
``default_rng([seed, crc32(qid)])``: they depend on the seed, the query id and the number of
candidates only, so a query gets the same presentations whatever order or shard it is
processed in. They permute *input positions*: a caller that permutes the input on purpose gets
different presented lists, as it should.

Identical presentations (possible for short lists) are scored once and counted with their
multiplicity, so ``forward_passes``/``prompt_tokens`` are what was actually run: K times the
base's cost whenever the K draws are distinct.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import numpy as np

from presentation_dependence.fields import check_counts, checked_options, opt
from presentation_dependence.presentations import draw_orders, score_presentations
from presentation_dependence.records import Candidate, Cost, Query, RankResult
from presentation_dependence.rerankers.base import (
    RERANKERS,
    Paradigm,
    Reranker,
    RerankerConfig,
    RerankerOptions,
    build_reranker,
    reranker_block,
)

__all__ = ["BatchedSelfConsistencyOptions", "BatchedSelfConsistencyReranker"]


def _default_base() -> dict[str, Any]:
    return {"reranker_class": "GradeReranker"}


@dataclass(frozen=True)
class BatchedSelfConsistencyOptions(RerankerOptions):
    """Options of batched self-consistency (see self_consistency.py)."""

    base: dict[str, Any] = field(
        default_factory=_default_base,
        metadata={
            "help": "the reranker scored under every order: a full reranker block "
            "{reranker_class: ..., **options}; stored with its defaults filled in"
        },
    )
    num_orders: int = opt(10, "K: presentation orders per query (K x the base's cost)")
    seed: int = opt(0, "orders come from default_rng([seed, crc32(qid)])")
    include_given_order: bool = opt(False, "make the first of the K orders the given (input) order")

    def __post_init__(self) -> None:
        check_counts(self, "num_orders")
        check_counts(self, "seed", minimum=0)
        object.__setattr__(self, "base", reranker_block(self.base, "base"))


@RERANKERS.register()
class BatchedSelfConsistencyReranker:
    """Scores every candidate by its mean base score over K random presentation orders."""

    paradigm: ClassVar[Paradigm] = Paradigm.MITIGATION
    config_cls: ClassVar[type[RerankerOptions]] = BatchedSelfConsistencyOptions

    def __init__(self, options: RerankerOptions | None = None) -> None:
        self.options = opts = checked_options(self, options, BatchedSelfConsistencyOptions)
        cfg = RerankerConfig.from_raw(opts.base)
        self.base_class = cfg.reranker_class
        self.base: Reranker = build_reranker(cfg.reranker_class, cfg.options)

    def rank(self, query: Query, candidates: Sequence[Candidate]) -> RankResult:
        opts = self.options
        n = len(candidates)
        orders = draw_orders(
            n,
            query.qid,
            num_orders=opts.num_orders,
            seed=opts.seed,
            include_given_order=opts.include_given_order,
        )
        details: dict[str, Any] = {
            "base_reranker": self.base_class,
            "num_orders": opts.num_orders,
            "seed": opts.seed,
            "presentations": orders,
        }
        if n == 0:
            return RankResult.from_scores(query, candidates, [], details=details, cost=Cost())

        # Score each distinct presentation once; row[j] is order j's scored presentation.
        distinct = {o: r for r, o in enumerate(dict.fromkeys(tuple(o) for o in orders))}
        ps = score_presentations(self.base, query, candidates, list(distinct))
        row = [distinct[tuple(o)] for o in orders]
        details["distinct_presentations"] = len(distinct)
        cost = Cost(int(ps.forward_passes.sum()), int(ps.prompt_tokens.sum()))

        order_scores = np.ascontiguousarray(ps.scores[row].T)  # (n, K)
        order_positions = ps.positions[row].T
        order_slots = None if ps.slots is None else ps.slots[row].T
        order_probs = None if ps.grade_probs is None else ps.grade_probs[row].transpose(1, 0, 2)
        item_details: list[dict[str, Any]] = []
        for i in range(n):
            d: dict[str, Any] = {
                "score_std": float(order_scores[i].std()),
                "order_scores": [float(x) for x in order_scores[i]],
                "order_positions": [int(x) for x in order_positions[i]],
            }
            if order_slots is not None:
                d["order_slots"] = [int(x) for x in order_slots[i]]
            if order_probs is not None:
                d["order_grade_probs"] = order_probs[i].tolist()
            item_details.append(d)
        return RankResult.from_scores(
            query,
            candidates,
            order_scores.mean(axis=1),
            item_details=item_details,
            details=details,
            cost=cost,
        )

    def describe(self) -> dict[str, Any]:
        return {
            "reranker_class": type(self).__name__,
            "paradigm": self.paradigm.value,
            "num_orders": self.options.num_orders,
            "seed": self.options.seed,
            "include_given_order": self.options.include_given_order,
            "base": self.base.describe(),
            "options": asdict(self.options),
        }
