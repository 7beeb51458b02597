"""rank_llm and RankGPT JSON: the real DL19 shape, rank_llm's Request/Result shape, round trips,
and errors with line numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from presentation_dependence.errors import InputFormatError
from presentation_dependence.io.rankllm_json import (
    read_rankllm_json,
    write_rankllm_json,
    write_rankllm_results,
)
from presentation_dependence.records import Candidate, Query, RankResult, RerankRequest


def _hit(docid: str, rank: int, qid: object = 7, content: str = "text") -> dict:
    return {"content": content, "qid": qid, "docid": docid, "rank": rank, "score": 10.0 - rank}


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "req.json"
    path.write_text(json.dumps(data, indent=2))  # one key per line: line numbers are meaningful
    return path


def _raises_at(path: Path, line: int | None) -> InputFormatError:
    with pytest.raises(InputFormatError) as e:
        read_rankllm_json(path)
    assert e.value.line == line, str(e.value)
    assert str(path) in str(e.value)
    return e.value


def test_rankgpt_shape_with_string_query(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"query": "q text", "hits": [_hit("a", 1), _hit("b", 2)]}])
    (req,) = read_rankllm_json(path)
    assert req.query == Query("7", "q text")
    assert [(c.docid, c.rank, c.score) for c in req.candidates] == [("a", 1, 9.0), ("b", 2, 8.0)]


def test_round_trip_and_jsonl(tmp_path: Path) -> None:
    reqs = [
        RerankRequest(Query("q1", "first"), (Candidate("a", "A", 1, 2.5), Candidate("b", "B", 2))),
        RerankRequest(Query("q2", "no hits")),
    ]
    path = write_rankllm_json(reqs, tmp_path / "out" / "r.json")
    back = read_rankllm_json(path)
    assert [r.query for r in back] == [r.query for r in reqs]
    assert back[0].candidates[0] == reqs[0].candidates[0]
    assert back[0].candidates[1].score == 0.5  # no score: 1 / rank, never null
    jsonl = tmp_path / "r.jsonl"
    jsonl.write_text("".join(json.dumps(o) + "\n" for o in json.loads(path.read_text())))
    assert [r.query for r in read_rankllm_json(jsonl)] == [r.query for r in reqs]


def test_duplicate_docid_names_the_hit_line(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"query": "q", "hits": [_hit("a", 1), _hit("a", 2)]}])
    # with indent=2: "[", "{", '"query"', '"hits": [', hit 1 at line 5 (7 lines), hit 2 at 12
    assert "'a'" in str(_raises_at(path, 12))


def test_empty_query_names_the_entry_line(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        [{"query": "ok", "hits": [_hit("a", 1)]}, {"query": " ", "hits": [_hit("b", 1, 8)]}],
    )
    lines = path.read_text().splitlines()
    second = max(i for i, ln in enumerate(lines, start=1) if ln == "  {")
    assert "query text" in str(_raises_at(path, second))


def test_non_numeric_score_and_rank(tmp_path: Path) -> None:
    bad = _hit("a", 1) | {"score": "high"}
    _raises_at(_write(tmp_path, [{"query": "q", "hits": [bad]}]), 5)
    bad = _hit("a", 1) | {"rank": "1"}
    _raises_at(_write(tmp_path, [{"query": "q", "hits": [bad]}]), 5)


def test_qid_mismatch_and_missing_qid(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"query": "q", "hits": [_hit("a", 1), _hit("b", 2, qid=8)]}])
    _raises_at(path, 12)
    path = _write(tmp_path, [{"query": "q", "hits": []}])
    _raises_at(path, 2)


def test_duplicate_query(tmp_path: Path) -> None:
    entry = {"query": {"text": "q", "qid": "1"}, "hits": []}
    path = tmp_path / "r.json"
    path.write_text("[\n" + json.dumps(entry) + ",\n" + json.dumps(entry) + "\n]\n")
    _raises_at(path, 3)


def test_malformed_json(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text('[\n{"query": "q",\n "hits": [}\n]\n')
    _raises_at(path, 3)
    path.write_text('[{"query": "q", "hits": []}] trailing\n')
    _raises_at(path, 1)
    path.write_text('{"query": {"text": "q", "qid": 1}, "hits": []}\n{"query": \n')
    _raises_at(path, 2)


def test_dl19_json(shared_data: Path) -> None:
    reqs = read_rankllm_json(shared_data / "trec-dl19-passage" / "bm25_top100_dl19.json")
    assert len(reqs) == 43
    assert all(len(r.candidates) == 100 for r in reqs)
    first = reqs[0]
    assert first.query == Query("264014", "how long is life cycle of flea")
    assert first.candidates[0].docid == "5611210" and first.candidates[0].rank == 1
    assert [c.rank for c in first.candidates] == list(range(1, 101))


# -- rank_llm's current Request/Result layout --------------------------------------------------

# Shaped as rank_llm's DataWriter.write_in_json_format writes a Result list (indent 2): "query"
# {"text", "qid"}, "candidates" [{"docid", "score", "doc"}], the doc as its retrievers fill it
# (Pyserini "contents", segmented MS MARCO v2 "segment" + "title", inline documents "text").
RANK_LLM_RESULTS = [
    {
        "query": {"text": "how long is life cycle of flea", "qid": 264014},
        "candidates": [
            {"docid": "5611210", "score": 15.78, "doc": {"contents": "The life cycle of a flea"}},
            {"docid": 6641238, "score": 15.09, "doc": {"segment": "Fleas live", "title": "Flea"}},
            {"docid": "4834547", "score": 14.97, "doc": {"text": "Eggs hatch", "title": ""}},
        ],
    },
    {"query": {"text": "second", "qid": "q2"}, "candidates": []},
]


def test_rank_llm_layout_json_and_jsonl(tmp_path: Path) -> None:
    path = _write(tmp_path, RANK_LLM_RESULTS)
    first, second = read_rankllm_json(path)
    assert first.query == Query("264014", "how long is life cycle of flea")
    assert [(c.docid, c.text, c.rank, c.score) for c in first.candidates] == [
        ("5611210", "The life cycle of a flea", 1, 15.78),
        ("6641238", "Flea Fleas live", 2, 15.09),  # title, one space, body (as BEIR)
        ("4834547", "Eggs hatch", 3, 14.97),
    ]
    assert second == RerankRequest(Query("q2", "second"))
    jsonl = tmp_path / "requests.jsonl"
    jsonl.write_text("".join(json.dumps(o) + "\n" for o in RANK_LLM_RESULTS))
    assert read_rankllm_json(jsonl) == [first, second]


def _candidate_lines(path: Path) -> list[int]:
    """Lines opening a candidate object (indent 6 with json.dumps(indent=2))."""
    return [i for i, ln in enumerate(path.read_text().splitlines(), 1) if ln == "      {"]


def test_rank_llm_layout_errors_name_the_candidate_line(tmp_path: Path) -> None:
    bad = json.loads(json.dumps(RANK_LLM_RESULTS))
    bad[0]["candidates"][1]["doc"] = {"url": "no text"}
    path = _write(tmp_path, bad)
    err = _raises_at(path, _candidate_lines(path)[1])
    assert "segment" in str(err) and "url" in str(err)
    bad = [{"query": {"text": "q"}, "candidates": []}]
    assert "query id" in str(_raises_at(_write(tmp_path, bad), 2))
    bad = [{"query": {"text": "q", "qid": 1}, "candidates": [{"docid": 1, "doc": {"text": "a"}}]}]
    bad[0]["candidates"].append(bad[0]["candidates"][0])
    path = _write(tmp_path, bad)
    assert "'1'" in str(_raises_at(path, _candidate_lines(path)[1]))


def _rank_llm_shaped(obj: dict) -> bool:
    """True when ``obj`` has exactly the fields of rank_llm's Request (Query, Candidate)."""
    return (
        set(obj) == {"query", "candidates"}
        and set(obj["query"]) == {"text", "qid"}
        and all(
            set(c) == {"docid", "score", "doc"} and isinstance(c["doc"], dict)
            for c in obj["candidates"]
        )
    )


def test_write_requests_in_rank_llm_layout_round_trips(tmp_path: Path) -> None:
    reqs = read_rankllm_json(_write(tmp_path, RANK_LLM_RESULTS))
    out = write_rankllm_json(reqs, tmp_path / "out.json", layout="candidates")
    assert all(_rank_llm_shaped(o) for o in json.loads(out.read_text()))
    assert read_rankllm_json(out) == reqs
    out = write_rankllm_json(reqs, tmp_path / "out.jsonl", layout="candidates")
    assert read_rankllm_json(out) == reqs
    with pytest.raises(ValueError, match="layout"):
        write_rankllm_json(reqs, tmp_path / "x.json", layout="docs")


def test_reranked_results_round_trip_in_rank_order(tmp_path: Path) -> None:
    (req, _) = read_rankllm_json(_write(tmp_path, RANK_LLM_RESULTS))
    result = RankResult.from_scores(req.query, req.candidates, [0.25, 2.75, 1.5])
    path = write_rankllm_results([result], tmp_path / "rerank_results.json")
    (saved,) = json.loads(path.read_text())
    assert _rank_llm_shaped(saved)
    assert [(c["docid"], c["score"]) for c in saved["candidates"]] == [
        ("6641238", 2.75),
        ("4834547", 1.5),
        ("5611210", 0.25),
    ]
    (back,) = read_rankllm_json(path)  # a valid request for a next stage
    assert [c.docid for c in back.candidates] == [it.candidate.docid for it in result.ranked()]
    assert [c.text for c in back.candidates] == [it.candidate.text for it in result.ranked()]


@pytest.mark.parametrize("layout", ["candidates", "hits"])
def test_written_scores_are_numbers_rank_llm_accepts(tmp_path: Path, layout: str) -> None:
    """rank_llm's Candidate.score is a float (its reader refuses null): a candidate without a
    score gets 1 / rank, rank_llm's own positional score; a known score is written as it is."""
    cands = (Candidate("a", "A", 1, 7.5), Candidate("b", "B", 2), Candidate("c", "C"))
    path = write_rankllm_json(
        [RerankRequest(Query("q", "t"), cands)], tmp_path / "r.json", layout=layout
    )
    (obj,) = json.loads(path.read_text())
    scores = [c["score"] for c in obj[layout]]
    assert all(isinstance(s, float) for s in scores)
    # rank_llm's rank is the list position; a RankGPT hit carries its own (c has rank 1).
    assert scores == ([7.5, 0.5, 1 / 3] if layout == "candidates" else [7.5, 0.5, 1.0])
    assert "null" not in path.read_text()
