"""IdentityReranker: returns the first-stage order. The baseline and the smoke path's scorer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from presentation_dependence.records import Candidate, Query, RankResult
from presentation_dependence.rerankers.base import RERANKERS, Paradigm, RerankerOptions


@dataclass(frozen=True)
class IdentityOptions(RerankerOptions):
    """IdentityReranker takes no options."""


@RERANKERS.register()
class IdentityReranker:
    """Scores each candidate ``1 / first-stage rank``, so its ranking is the first stage's."""

    paradigm: ClassVar[Paradigm] = Paradigm.IDENTITY
    config_cls: ClassVar[type[RerankerOptions]] = IdentityOptions

    def __init__(self, options: RerankerOptions | None = None) -> None:
        self.options = options or IdentityOptions()

    def rank(self, query: Query, candidates: Sequence[Candidate]) -> RankResult:
        scores = [1.0 / c.rank for c in candidates]
        return RankResult.from_scores(query, candidates, scores)

    def describe(self) -> dict[str, Any]:
        return {"reranker_class": "IdentityReranker"}
