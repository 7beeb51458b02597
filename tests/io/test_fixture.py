"""The fixture JSONL: defaults, round trip, strict errors with line numbers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from presentation_dependence.errors import InputFormatError
from presentation_dependence.io.fixture import read_fixture, write_fixture
from presentation_dependence.records import Candidate, Qrels, Query, RerankRequest


def _write(tmp_path: Path, *objs: object) -> Path:
    path = tmp_path / "fixture.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))
    return path


def _raises_at(path: Path, line: int) -> InputFormatError:
    with pytest.raises(InputFormatError) as e:
        read_fixture(path)
    assert e.value.line == line, str(e.value)
    assert str(path) in str(e.value)
    return e.value


GOOD = {"qid": "q1", "query": "text", "candidates": [{"docid": "a", "text": "A"}]}


def test_defaults(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            "qid": 1,
            "query": "q",
            "candidates": [{"docid": "a", "text": "A"}, {"docid": 5, "text": ""}],
        },
    )
    reqs, qrels = read_fixture(path)
    assert [(c.docid, c.rank) for c in reqs[0].candidates] == [("a", 1), ("5", 2)]
    assert math.isnan(reqs[0].candidates[0].score)
    assert reqs[0].query.qid == "1"
    assert qrels.judgements == {}


def test_round_trip(tmp_path: Path) -> None:
    reqs = [
        RerankRequest(
            Query("q1", "first query"),
            (Candidate("a", "A text", 2, 1.5), Candidate("b", "B ünïcode", 1)),
        ),
        RerankRequest(Query("q2", "second"), (Candidate("c", "C", 1, -3.0),)),
    ]
    qrels = Qrels({"q1": {"a": 2, "zz": -1}})
    path = write_fixture(tmp_path / "sub" / "f.jsonl", reqs, qrels)
    back, back_qrels = read_fixture(path)
    assert [r.to_dict() for r in back] == [r.to_dict() for r in reqs]
    assert back_qrels.to_dict() == {"q1": {"a": 2, "zz": -1}}


def test_duplicate_docid(tmp_path: Path) -> None:
    bad = {"qid": "q2", "query": "t", "candidates": [{"docid": "a", "text": ""}] * 2}
    _raises_at(_write(tmp_path, GOOD, bad), 2)


def test_empty_query(tmp_path: Path) -> None:
    _raises_at(_write(tmp_path, GOOD | {"qid": "q0"}, GOOD | {"query": "  "}), 2)


def test_malformed_json_line(tmp_path: Path) -> None:
    path = tmp_path / "fixture.jsonl"
    path.write_text(json.dumps(GOOD) + "\n\n" + '{"qid": "q2", \n')
    _raises_at(path, 3)


def test_non_integer_grade_rank_and_score(tmp_path: Path) -> None:
    _raises_at(_write(tmp_path, GOOD | {"qrels": {"a": 1.5}}), 1)
    _raises_at(
        _write(tmp_path, GOOD | {"candidates": [{"docid": "a", "text": "", "rank": "1"}]}), 1
    )
    _raises_at(
        _write(tmp_path, GOOD | {"candidates": [{"docid": "a", "text": "", "score": "x"}]}), 1
    )


def test_unknown_key_suggests_the_right_one(tmp_path: Path) -> None:
    err = _raises_at(_write(tmp_path, GOOD, {"qid": "q2", "query": "t", "candidate": []}), 2)
    assert "candidates" in str(err)


def test_duplicate_qid(tmp_path: Path) -> None:
    _raises_at(_write(tmp_path, GOOD, GOOD), 2)
