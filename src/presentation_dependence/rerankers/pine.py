"""PineReranker: the seed's PINE compatibility port, kept as a NEGATIVE CONTROL.

PINE (Wang et al. 2024, wzq016/PINE) makes attention between interchangeable segments
bidirectional and assigns segment positions by importance, inside patched Llama/Qwen2 attention
(eager attention only, pinned to transformers 4.40, no batching). That modification is out of
reach of this package's backend, so this port keeps only its position-handling idea, as an
approximation: before the readout, the candidates are put in a *canonical* order (sha256 of
the passage text, then docid) that does not depend on the order they arrived in, and scored
with the ordinary expected-grade readout (``GradeReranker``, same options).

This does NOT establish invariance. The input order no longer matters, but each candidate's
score still depends on the slot the hash gives it and on its chunk neighbours: the positional
bias is moved, not removed. Use it as a negative control next to order-free scorers
(PointwiseGradeReranker, MxbaiPointwise), never as evidence of order-robustness.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from presentation_dependence.records import Candidate, Query, RankResult
from presentation_dependence.rerankers.base import RERANKERS, Paradigm, RerankerOptions
from presentation_dependence.rerankers.grade import GradeReranker, GradeRerankerOptions

__all__ = ["PineOptions", "PineReranker", "canonical_order"]


@dataclass(frozen=True)
class PineOptions(GradeRerankerOptions):
    """The readout's options; candidates are presented in the canonical (hash) order."""


def canonical_order(candidates: Sequence[Candidate]) -> list[int]:
    """Input positions sorted by (sha256 of the text, docid): independent of the input order."""
    return sorted(
        range(len(candidates)),
        key=lambda i: (
            hashlib.sha256(candidates[i].text.encode("utf-8")).hexdigest(),
            candidates[i].docid,
        ),
    )


@RERANKERS.register()
class PineReranker(GradeReranker):
    """PINE compatibility port (negative control): readout over a canonical candidate order.

    It does not establish invariance: slot and neighbour effects remain (see the module doc).
    """

    paradigm: ClassVar[Paradigm] = Paradigm.LISTWISE_READOUT
    config_cls: ClassVar[type[RerankerOptions]] = PineOptions

    def rank(self, query: Query, candidates: Sequence[Candidate]) -> RankResult:
        order = canonical_order(candidates)
        inner = super().rank(query, [candidates[i] for i in order])
        shown = sorted(zip(order, inner.items, strict=True), key=lambda p: p[0])
        items = [it for _, it in shown]  # in input order
        return RankResult.from_scores(
            query,
            candidates,
            [it.score for it in items],
            item_details=[{**it.details, "presented_at": it.input_index} for it in items],
            details={**inner.details, "presentation": "canonical_sha256"},
            slots=[it.slot for it in items],
            chunks=[it.chunk for it in items],
            grade_probs=[it.grade_probs for it in items],
            cost=inner.cost,
        )

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "presentation": "canonical_sha256",
            "establishes_invariance": False,
        }
