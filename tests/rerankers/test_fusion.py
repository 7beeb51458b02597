"""ScoreFusionReranker: per-query normalisation, the weighted sum, order-freedom, refusals."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

from presentation_dependence.errors import ConfigError
from presentation_dependence.records import Candidate, Cost, Query, RankResult
from presentation_dependence.rerankers import RERANKERS, Paradigm, RerankerOptions, build_reranker
from presentation_dependence.rerankers.fusion import normalise_scores

QUERY = Query("q1", "fleas")


@dataclass(frozen=True)
class TableOptions(RerankerOptions):
    table: dict[str, float] | None = None
    passes: int = 1


class TableScorer:
    """Scores each docid from a fixed table (pointwise, order-free)."""

    paradigm: ClassVar[Paradigm] = Paradigm.POINTWISE
    config_cls: ClassVar[type[RerankerOptions]] = TableOptions

    def __init__(self, options: RerankerOptions | None = None) -> None:
        assert isinstance(options, TableOptions)
        self.options = options

    def rank(self, query: Query, candidates: Sequence[Candidate]) -> RankResult:
        table = self.options.table or {}
        cost = Cost(self.options.passes * len(candidates), 7 * len(candidates))
        return RankResult.from_scores(
            query, candidates, [table[c.docid] for c in candidates], cost=cost
        )

    def describe(self) -> dict[str, Any]:
        return {"reranker_class": "TableScorerForFusionTest", "model_name": "table"}


@pytest.fixture(autouse=True)
def table_scorer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table scorer registered for the test only (undone after it)."""
    monkeypatch.setattr(RERANKERS, "_items", dict(RERANKERS._items))
    RERANKERS.register("TableScorerForFusionTest")(TableScorer)


def cands(*ids: str) -> list[Candidate]:
    return [Candidate(d, f"text {d}", i + 1, 0.0) for i, d in enumerate(ids)]


def member(**table: float) -> dict[str, Any]:
    return {"reranker_class": "TableScorerForFusionTest", "table": table}


def test_normalisations_by_hand() -> None:
    s = np.array([2.0, 4.0, 8.0])
    assert np.allclose(normalise_scores(s, "minmax"), [0.0, 1 / 3, 1.0])
    assert np.allclose(normalise_scores(s, "zscore"), (s - s.mean()) / s.std())
    assert np.allclose(normalise_scores(s, "none"), s)
    assert np.array_equal(normalise_scores(np.array([5.0, 5.0]), "minmax"), [0.0, 0.0])
    assert np.array_equal(normalise_scores(np.array([5.0, 5.0]), "zscore"), [0.0, 0.0])


def test_weighted_minmax_sum_and_cost_and_details() -> None:
    fusion = build_reranker(
        "ScoreFusionReranker",
        members=[member(a=0.80, b=0.90, c=0.85), member(a=10.0, b=0.0, c=5.0)],
        weights=[1.0, 2.0],
    )
    res = fusion.rank(QUERY, cands("a", "b", "c"))
    # minmax: member 1 -> a 0, b 1, c 0.5; member 2 -> a 1, b 0, c 0.5
    assert [it.score for it in res.items] == pytest.approx([2.0, 1.0, 1.5])
    assert res.cost == Cost(6, 42)
    assert res.items[2].details["member_scores"] == pytest.approx([0.85, 5.0])
    assert (
        "TableScorerForFusionTest:table + TableScorerForFusionTest:table"
        in (fusion.describe()["model_name"])
    )


def test_fused_scores_ignore_the_candidate_order() -> None:
    fusion = build_reranker(
        "ScoreFusionReranker", members=[member(a=1, b=3, c=2), member(a=0.3, b=0.1, c=0.2)]
    )
    given = {it.candidate.docid: it.score for it in fusion.rank(QUERY, cands("a", "b", "c")).items}
    other = {it.candidate.docid: it.score for it in fusion.rank(QUERY, cands("c", "a", "b")).items}
    assert given == other


def test_refusals_name_the_member_and_the_fix() -> None:
    with pytest.raises(ConfigError, match="two or more"):
        build_reranker("ScoreFusionReranker", members=[member(a=1)])
    with pytest.raises(ConfigError, match=r"members\[1\]: GradeReranker is listwise-readout"):
        build_reranker(
            "ScoreFusionReranker", members=[member(a=1), {"reranker_class": "GradeReranker"}]
        )
    with pytest.raises(ConfigError, match="one non-negative number per member"):
        build_reranker("ScoreFusionReranker", members=[member(a=1), member(a=2)], weights=[1.0])
    with pytest.raises(ConfigError, match="normalize"):
        build_reranker("ScoreFusionReranker", members=[member(a=1), member(a=2)], normalize="rank")
