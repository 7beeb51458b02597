"""rank_llm / RankGPT JSON: the real DL19 shape, round trips, and errors with line numbers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from presentation_dependence.errors import InputFormatError
from presentation_dependence.io.rankllm_json import read_rankllm_json, write_rankllm_json
from presentation_dependence.records import Candidate, Query, RerankRequest


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
    assert math.isnan(back[0].candidates[1].score)
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
