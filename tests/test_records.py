"""Records: to_dict/from_dict round trips and RankResult.from_scores tie-breaking."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from presentation_dependence.records import (
    Candidate,
    Cost,
    Qrels,
    Query,
    RankResult,
    RerankRequest,
    Run,
    RunEntry,
    ScoredCandidate,
    Topics,
)


def _json_round(d: object) -> Any:
    return json.loads(json.dumps(d))  # what a run folder stores


def _cands() -> tuple[Candidate, ...]:
    return (
        Candidate("d1", "one", 3, 1.5),
        Candidate("d2", "two", 1),  # score unknown: NaN
        Candidate("d3", "three", 2, -0.25),
        Candidate("d4", "four", 4, 0.0),
    )


def test_query_and_candidate_round_trip() -> None:
    q = Query("q1", "text")
    assert Query.from_dict(_json_round(q.to_dict())) == q
    for c in _cands():
        back = Candidate.from_dict(_json_round(c.to_dict()))
        assert (back.docid, back.text, back.rank) == (c.docid, c.text, c.rank)
        assert back.score == c.score or (math.isnan(back.score) and math.isnan(c.score))
    assert Candidate.from_dict({"docid": 7, "rank": "2"}) == Candidate("7", "", 2)


def test_record_validation() -> None:
    with pytest.raises(ValueError):
        Query("", "x")
    with pytest.raises(ValueError):
        Candidate("", "x", 1)
    with pytest.raises(ValueError):
        Candidate("d", "x", 0)
    with pytest.raises(ValueError, match="duplicate"):
        RerankRequest(Query("q", "t"), (Candidate("d", "", 1), Candidate("d", "", 2)))


def test_rerank_request_round_trip() -> None:
    req = RerankRequest(Query("q1", "text"), _cands())
    back = RerankRequest.from_dict(_json_round(req.to_dict()))
    assert back.to_dict() == req.to_dict()
    assert [c.docid for c in back.candidates] == ["d1", "d2", "d3", "d4"]


def test_rank_result_round_trip() -> None:
    res = RankResult.from_scores(
        Query("q1", "text"),
        _cands(),
        [0.5, 0.9, 0.1, 0.3],
        item_details=[{"p": [0.1, 0.9]}, {}, {}, {"p": [1.0, 0.0]}],
        details={"template": "t1"},
        slots=[1, 2, 1, 2],
        chunks=[0, 0, 1, 1],
        grade_probs=[[0.5, 0.5], [0.1, 0.9], [1.0, 0.0], [0.25, 0.75]],
        cost=Cost(forward_passes=2, prompt_tokens=40),
    )
    back = RankResult.from_dict(_json_round(res.to_dict()))
    assert back.to_dict() == res.to_dict()
    assert back.details == {"template": "t1"}
    assert back.cost == Cost(2, 40)
    assert back.items[0].details == {"p": [0.1, 0.9]}
    assert (back.items[3].slot, back.items[3].chunk) == (2, 1)
    assert back.items[1].grade_probs == (0.1, 0.9)
    assert isinstance(back.items[0], ScoredCandidate)


def test_typed_fields_serialise_where_details_had_them() -> None:
    """A per-query file written before the typed fields reads into them and writes back the
    same bytes: cost first in the list details, grade_probs first and slot, chunk last."""
    stored = {
        "query": {"qid": "q1", "text": "text"},
        "items": [
            {
                "docid": "d1",
                "input_index": 0,
                "first_stage_rank": 1,
                "first_stage_score": 4.0,
                "score": 1.5,
                "rank": 1,
                "details": {
                    "grade_probs": [0.25, 0.25, 0.25, 0.25],
                    "raw": [1.0],
                    "slot": 1,
                    "chunk": 0,
                },
            }
        ],
        "texts": {"d1": "a"},
        "details": {"forward_passes": 1, "prompt_tokens": 9, "template": "t1"},
    }
    back = RankResult.from_dict(stored)
    assert back.cost == Cost(1, 9) and back.details == {"template": "t1"}
    item = back.items[0]
    assert (item.slot, item.chunk, item.grade_probs) == (1, 0, (0.25, 0.25, 0.25, 0.25))
    assert item.details == {"raw": [1.0]}
    assert json.dumps(back.to_dict()) == json.dumps(stored)


def test_typed_fields_are_not_details() -> None:
    with pytest.raises(ValueError, match=r"RankResult\.cost"):
        RankResult(Query("q", "t"), (), details={"forward_passes": 1})
    with pytest.raises(ValueError, match="typed field"):
        ScoredCandidate(Candidate("d", "", 1), 0, 1.0, 1, details={"slot": 1})
    with pytest.raises(ValueError, match="forward_passes must be an integer >= 0"):
        Cost(forward_passes=-1)


def test_from_scores_ties_by_first_stage_rank_then_input_index() -> None:
    cands = (
        Candidate("a", "", 5),
        Candidate("b", "", 2),
        Candidate("c", "", 2),  # same first-stage rank as b: input index decides
        Candidate("d", "", 1),
        Candidate("e", "", 9),
    )
    res = RankResult.from_scores(Query("q", "t"), cands, np.array([1.0, 1.0, 1.0, 1.0, 2.0]))
    # input order and identity kept
    assert [it.candidate for it in res.items] == list(cands)
    assert [it.input_index for it in res.items] == [0, 1, 2, 3, 4]
    # e wins on score; the tied rest by first-stage rank (d=1, b=2, c=2, a=5), b before c by index
    assert [it.candidate.docid for it in res.ranked()] == ["e", "d", "b", "c", "a"]
    assert [it.rank for it in res.items] == [5, 3, 4, 2, 1]


def test_from_scores_rejects_bad_scores() -> None:
    q, cands = Query("q", "t"), _cands()
    with pytest.raises(ValueError, match="scores"):
        RankResult.from_scores(q, cands, [1.0, 2.0])
    with pytest.raises(ValueError, match="NaN"):
        RankResult.from_scores(q, cands, [1.0, math.nan, 0.0, 0.0])


def test_run_from_results_and_to_dict() -> None:
    res = RankResult.from_scores(Query("q1", "t"), _cands(), [0.5, 0.9, 0.1, 0.3])
    run = Run.from_results([res], name="tag")
    assert [(e.docid, e.rank) for e in run.entries["q1"]] == [
        ("d2", 1),
        ("d1", 2),
        ("d4", 3),
        ("d3", 4),
    ]
    assert run.entries["q1"][0] == RunEntry("q1", "d2", 1, 0.9, "tag")
    assert len(run) == 4 and run.qids() == ["q1"]
    assert run.to_dict() == {"q1": {"d1": 0.5, "d2": 0.9, "d3": 0.1, "d4": 0.3}}


def test_qrels_and_topics_round_trip() -> None:
    qrels = Qrels({"q1": {"a": 2, "b": -1}, "q2": {}})
    assert Qrels.from_dict(_json_round(qrels.to_dict())) == qrels
    assert (
        qrels.grade("q1", "a") == 2 and qrels.grade("q1", "zz") == 0 and qrels.grade("q9", "a") == 0
    )
    topics = Topics({"q1": "first", "2": "second"})
    back = Topics.from_dict(_json_round(topics.to_dict()))
    assert back == topics and "q1" in back and back["2"] == "second" and len(back) == 2


def test_candidate_without_a_rank_ties_at_one_and_keeps_input_order() -> None:
    """``Candidate(docid, text)``: no first stage; score ties fall back to the input order."""
    cands = (Candidate("x", "one"), Candidate("y", "two"), Candidate("z", "three"))
    assert [c.rank for c in cands] == [1, 1, 1]
    assert Candidate.from_dict({"docid": "x", "text": "one"}) == cands[0]
    res = RankResult.from_scores(Query("q", "t"), cands, [1.0, 2.0, 1.0])
    assert [it.candidate.docid for it in res.ranked()] == ["y", "x", "z"]
    # Mixed with ranked candidates, an unranked one ties with rank 1 (input order decides).
    mixed = (Candidate("r2", "", 2), Candidate("u", ""), Candidate("r1", "", 1))
    res = RankResult.from_scores(Query("q", "t"), mixed, [0.0, 0.0, 0.0])
    assert [it.candidate.docid for it in res.ranked()] == ["u", "r1", "r2"]
