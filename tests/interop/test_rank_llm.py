"""The rank_llm model-coordinator adapter: rank_llm Requests in, Results out.

Without rank_llm installed (the 'rankllm' extra pulls vLLM), the adapter is exercised against
stand-in dataclasses with rank_llm's field names; with it, through rank_llm's own Reranker.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest

from presentation_dependence.interop.rank_llm import RankLLMCoordinator
from presentation_dependence.optional import MissingExtraError
from presentation_dependence.records import RankResult
from presentation_dependence.rerankers.base import Paradigm, RerankerOptions


class LengthReranker:
    """Scores a candidate by its text length (a deterministic stand-in scorer)."""

    paradigm: ClassVar[Paradigm] = Paradigm.POINTWISE
    config_cls: ClassVar[type[RerankerOptions]] = RerankerOptions

    def rank(self, query, candidates):
        return RankResult.from_scores(query, candidates, [float(len(c.text)) for c in candidates])

    def describe(self) -> dict[str, Any]:
        return {"reranker_class": "LengthReranker"}


@dataclass
class Query:
    text: str
    qid: str | int


@dataclass
class Candidate:
    docid: str | int
    score: float
    doc: dict[str, Any]


@dataclass
class Request:
    query: Query
    candidates: list[Candidate] = field(default_factory=list)


@dataclass
class Result:
    query: Query
    candidates: list[Candidate] = field(default_factory=list)
    invocations_history: list[Any] = field(default_factory=list)


def _request(mod: Any) -> Any:
    docs = [{"text": "aa"}, {"contents": "aaaa"}, {"segment": "a", "title": "t"}, {"text": "aaa"}]
    cands = [mod.Candidate(docid=i, score=10.0 - i, doc=d) for i, d in enumerate(docs)]
    return mod.Request(query=mod.Query(text="q", qid=7), candidates=cands)


@pytest.fixture()
def stand_in(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    data = types.ModuleType("rank_llm.data")
    data.Query, data.Candidate, data.Request, data.Result = Query, Candidate, Request, Result
    pkg = types.ModuleType("rank_llm")
    pkg.data = data  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "rank_llm", pkg)
    monkeypatch.setitem(sys.modules, "rank_llm.data", data)
    return data


def test_window_is_reranked_and_the_rest_kept(stand_in) -> None:
    coordinator = RankLLMCoordinator(LengthReranker())
    request = _request(stand_in)
    (result,) = coordinator.rerank_batch([request], rank_start=0, rank_end=3)
    assert isinstance(result, Result) and result.query == request.query
    # window = docs 0..2 with texts "aa", "aaaa", "t a" (title, space, segment): by length
    assert [c.docid for c in result.candidates] == [1, 2, 0, 3]
    assert [c.score for c in result.candidates[:3]] == [4.0, 3.0, 2.0]
    assert result.candidates[3] is request.candidates[3]  # outside the window: untouched
    assert request.candidates[0].score == 10.0  # the request is not modified
    assert coordinator.rerank(request).candidates[0].docid == 1
    assert coordinator.get_output_filename(100, "dl19") == "LengthReranker_100_dl19"


def test_shuffle_is_seeded(stand_in) -> None:
    a = RankLLMCoordinator(LengthReranker(), seed=3).rerank(
        _request(stand_in), shuffle_candidates=True
    )
    b = RankLLMCoordinator(LengthReranker(), seed=3).rerank(
        _request(stand_in), shuffle_candidates=True
    )
    assert [c.docid for c in a.candidates] == [c.docid for c in b.candidates]


def test_missing_rank_llm_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rank_llm", None)
    monkeypatch.setitem(sys.modules, "rank_llm.data", None)
    with pytest.raises(MissingExtraError, match="rankllm"):
        RankLLMCoordinator(LengthReranker()).rerank_batch([])


def test_real_rank_llm_round_trip() -> None:
    pytest.importorskip("rank_llm.rerank.reranker", reason="needs the 'rankllm' extra (rank-llm)")
    from rank_llm import data
    from rank_llm.rerank.reranker import Reranker

    results = Reranker(RankLLMCoordinator(LengthReranker())).rerank_batch([_request(data)])
    assert [c.docid for c in results[0].candidates] == [1, 2, 3, 0]  # ties: input order
