"""The teacher scores archived without texts (``silver.scores_archive``): written once a silver
file is complete, read back so a matching query skips the teacher, refused when made otherwise."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from presentation_dependence.errors import ConfigError, InputFormatError
from presentation_dependence.records import Candidate, Query, RankResult
from presentation_dependence.rerankers import Paradigm
from presentation_dependence.training.config import SilverConfig
from presentation_dependence.training.silver import generate_silver, read_silver
from presentation_dependence.training.silver_scores import SCORES_FORMAT
from tests.training.conftest import noveleval_block


class PositionTeacher:
    """A listwise teacher whose scores depend on the slot (so T orders differ), counting calls."""

    paradigm: ClassVar[Paradigm] = Paradigm.LISTWISE_READOUT

    def __init__(self, revision: str = "r1") -> None:
        self.calls, self.revision = 0, revision

    def rank(self, query: Query, candidates: Sequence[Candidate]) -> RankResult:
        self.calls += 1
        scores = [(sum(map(ord, c.text)) % 89) / 89 + 0.1 * j for j, c in enumerate(candidates)]
        return RankResult.from_scores(query, candidates, scores)

    def describe(self) -> dict[str, Any]:
        return {"reranker_class": "PositionTeacher", "model_name": "m", "revision": self.revision}


class RaisingTeacher(PositionTeacher):
    def rank(self, query: Query, candidates: Sequence[Candidate]) -> RankResult:
        raise AssertionError("the teacher must not be asked: the archive holds every query")


def cfg(tmp_path: Path, name: str, **kw: Any) -> SilverConfig:
    base: dict[str, Any] = {
        "path": str(tmp_path / name),
        "teacher": {"reranker_class": "IdentityReranker"},  # the block; the teacher is passed
        "num_orders": 3,
        "data": [noveleval_block(3, 5)],
        "scores_archive": str(tmp_path / "archive" / "scores.jsonl"),
    }
    return SilverConfig(**{**base, **kw})


def records(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()[1:]


def test_the_archive_holds_no_text_and_rebuilds_the_file_without_the_teacher(tmp_path):
    first = generate_silver(cfg(tmp_path, "a.jsonl"), teacher=PositionTeacher())
    archive = tmp_path / "archive" / "scores.jsonl"
    header, *lines = archive.read_text(encoding="utf-8").splitlines()
    assert json.loads(header)["format"] == SCORES_FORMAT and len(lines) == 3
    for q in read_silver(first).queries:  # no query or passage text reaches the archive
        line = next(ln for ln in lines if json.loads(ln)["qid"] == q.qid)
        assert q.query not in line and all(c.text not in line for c in q.candidates)
        assert json.loads(line)["candidates"] == [c.docid for c in q.candidates]
    before = archive.read_bytes()
    second = generate_silver(cfg(tmp_path, "b.jsonl"), teacher=RaisingTeacher())
    assert records(second) == records(first)  # bit for bit: scores, orders, texts from the data
    assert archive.read_bytes() == before  # nothing changed, nothing rewritten


def test_a_query_the_archive_lacks_is_scored_and_added(tmp_path):
    generate_silver(cfg(tmp_path, "a.jsonl"), teacher=PositionTeacher())
    archive = tmp_path / "archive" / "scores.jsonl"
    header, *lines = archive.read_text(encoding="utf-8").splitlines()
    archive.write_text("\n".join([header, *lines[1:]]) + "\n", encoding="utf-8")
    teacher = PositionTeacher()
    out = generate_silver(cfg(tmp_path, "b.jsonl"), teacher=teacher)
    assert teacher.calls == 3  # T = 3 orders of the one missing query
    assert records(out) == records(tmp_path / "a.jsonl")
    assert len(archive.read_text(encoding="utf-8").splitlines()) == 4  # written again, whole


def test_another_teacher_revision_is_scored_again(tmp_path):
    generate_silver(cfg(tmp_path, "a.jsonl"), teacher=PositionTeacher("r1"))
    teacher = PositionTeacher("r2")
    out = generate_silver(cfg(tmp_path, "b.jsonl"), teacher=teacher)
    assert teacher.calls == 9  # 3 queries x 3 orders: no stored score is the new model's
    assert {q.teacher_revision for q in read_silver(out).queries} == {"r2"}


def test_an_existing_file_is_archived_without_the_teacher(tmp_path):
    made = generate_silver(cfg(tmp_path, "a.jsonl", scores_archive=None), teacher=PositionTeacher())
    generate_silver(cfg(tmp_path, "a.jsonl"), teacher=RaisingTeacher())
    archive = tmp_path / "archive" / "scores.jsonl"
    assert len(records(archive)) == len(records(made)) == 3


def test_an_archive_made_otherwise_is_refused(tmp_path):
    generate_silver(cfg(tmp_path, "a.jsonl"), teacher=PositionTeacher())
    with pytest.raises(ConfigError, match=r"scores\.jsonl holds teacher scores .*silver\.seed"):
        generate_silver(cfg(tmp_path, "b.jsonl", seed=7), teacher=PositionTeacher())
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "presdep-silver/1"}\n', encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"bad\.jsonl:1: expected a silver scores archive"):
        generate_silver(
            cfg(tmp_path, "c.jsonl", scores_archive=str(bad)), teacher=PositionTeacher()
        )
