"""Silver labels: format, provenance, BSC equivalence, resume and refusal."""

from __future__ import annotations

import json

import numpy as np
import pytest

from presentation_dependence.errors import ConfigError, InputFormatError
from presentation_dependence.records import Query
from presentation_dependence.rerankers.self_consistency import (
    BatchedSelfConsistencyOptions,
    BatchedSelfConsistencyReranker,
)
from presentation_dependence.training.config import SilverConfig
from presentation_dependence.training.silver import (
    SILVER_FORMAT,
    SilverQuery,
    generate_silver,
    read_silver,
    teacher_identity,
)
from tests.training.conftest import grade_block, noveleval_block


def test_header_and_records(silver_file, silver, tiny_model):
    header = json.loads(silver_file.read_text(encoding="utf-8").splitlines()[0])
    assert header["format"] == SILVER_FORMAT
    assert header["num_orders"] == 3 and header["seed"] == 0 and header["num_queries"] == 3
    assert header["teacher_id"] == f"GradeReranker:{tiny_model}"
    assert header["teacher_describe"]["dtype"] == "float32"
    assert "packages" in header["provenance"]
    assert [q.key for q in silver.queries] == ["noveleval/0", "noveleval/1", "noveleval/2"]
    for q in silver.queries:
        assert q.presentations.shape == q.order_scores.shape == (3, 5)
        for row in q.presentations:
            assert sorted(row.tolist()) == list(range(5))
        assert q.order_grade_probs is not None and q.order_grade_probs.shape == (3, 5, 4)
        np.testing.assert_allclose(q.order_grade_probs @ np.arange(4), q.order_scores)
        np.testing.assert_allclose(q.labels(3), q.order_scores.mean(axis=0))
        np.testing.assert_array_equal(q.labels(1), q.order_scores[0])
        assert SilverQuery.from_dict(q.to_dict()).to_dict() == q.to_dict()
    with pytest.raises(ConfigError):
        silver.queries[0].labels(4)


def test_silver_mean_is_exactly_batched_self_consistency(silver, tiny_model):
    bsc = BatchedSelfConsistencyReranker(
        BatchedSelfConsistencyOptions(base=grade_block(tiny_model), num_orders=3, seed=0)
    )
    for q in silver.queries[:2]:
        res = bsc.rank(Query(q.qid, q.query), list(q.candidates))
        assert [it.score for it in res.items] == q.labels(3).tolist()
        assert res.details["presentations"] == q.presentations.tolist()


def test_existing_file_is_kept_and_a_different_one_refused(silver_file, tiny_model):
    cfg = SilverConfig(
        path=str(silver_file),
        teacher=grade_block(tiny_model),
        num_orders=3,
        data=[noveleval_block(3, 5)],
    )
    before = silver_file.read_bytes()
    assert generate_silver(cfg) == silver_file
    assert silver_file.read_bytes() == before
    other = SilverConfig(
        path=str(silver_file), teacher=grade_block(tiny_model), num_orders=2, data=cfg.data
    )
    with pytest.raises(ConfigError, match="another teacher"):
        generate_silver(other)


def _started(tmp_path, tiny_model):
    """A finished silver file of 2 queries, and an empty ``.parts`` folder of its config."""
    cfg = SilverConfig(
        path=str(tmp_path / "s.jsonl"),
        teacher=grade_block(tiny_model),
        num_orders=2,
        data=[noveleval_block(2, 4)],
    )
    first = generate_silver(cfg).read_text(encoding="utf-8").splitlines()[1:]
    parts = tmp_path / "s.jsonl.parts"
    parts.mkdir()
    (parts / "config.json").write_text(
        json.dumps(
            {
                "teacher": cfg.teacher,
                "num_orders": 2,
                "seed": 0,
                "include_given_order": False,
                "data": [{k: v for k, v in vars(b).items()} for b in cfg.data],
            },
            sort_keys=True,
        )
    )
    return cfg, first, parts


class Boom:
    def rank(self, query, candidates):
        raise AssertionError(f"asked to score {query.qid}")

    def describe(self):
        return {"reranker_class": "Boom"}


def test_resume_uses_finished_parts(tmp_path, tiny_model):
    cfg, first, parts = _started(tmp_path, tiny_model)
    (parts / "000000.json").write_text(first[0] + "\n")
    qid1 = json.loads(first[1])["qid"]
    with pytest.raises(AssertionError, match=f"asked to score {qid1}$"):
        generate_silver(cfg, force=True, teacher=Boom())
    assert (parts / "000000.json").exists()


def test_a_part_of_another_query_is_scored_again(tmp_path, tiny_model):
    # The data file changed under the same data block: part 0 now holds another query.
    cfg, first, parts = _started(tmp_path, tiny_model)
    (parts / "000000.json").write_text(first[1] + "\n")
    qid0 = json.loads(first[0])["qid"]
    with pytest.raises(AssertionError, match=f"asked to score {qid0}$"):
        generate_silver(cfg, force=True, teacher=Boom())


def test_teacher_identity_of_wrappers():
    tid, rev = teacher_identity(
        {
            "reranker_class": "BatchedSelfConsistencyReranker",
            "base": {"model_name": "m", "revision": "r1"},
        }
    )
    assert (tid, rev) == ("BatchedSelfConsistencyReranker:m", "r1")
    assert teacher_identity({"reranker_class": "ApiReranker"}) == ("ApiReranker", None)


def test_bad_files(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "other"}\n')
    with pytest.raises(InputFormatError, match="presdep-silver/1"):
        read_silver(bad)
    with pytest.raises(ConfigError, match="not found"):
        read_silver(tmp_path / "missing.jsonl")


def test_sharded_silver_fills_parts_and_an_unsharded_run_assembles_the_same_file(
    tiny_model, tmp_path
):
    from presentation_dependence.training.config import SilverConfig
    from presentation_dependence.training.silver import generate_silver, read_silver
    from tests.training.conftest import grade_block, noveleval_block

    def cfg(path):
        return SilverConfig(
            path=str(path),
            teacher=grade_block(tiny_model),
            num_orders=2,
            data=[noveleval_block(3, 4)],
        )

    sharded = tmp_path / "sharded" / "silver.jsonl"
    generate_silver(cfg(sharded), shard=(1, 2))
    parts = sharded.with_name(sharded.name + ".parts")
    assert not sharded.exists()
    assert sorted(p.name for p in parts.glob("0*.json")) == ["000001.json"]
    generate_silver(cfg(sharded), shard=(0, 2))
    assert not sharded.exists() and len(list(parts.glob("0*.json"))) == 3
    generate_silver(cfg(sharded))  # reuses the three parts, writes the file
    whole = tmp_path / "whole" / "silver.jsonl"
    generate_silver(cfg(whole))
    a, b = read_silver(sharded), read_silver(whole)
    assert [q.to_dict() for q in a.queries] == [q.to_dict() for q in b.queries]
    with pytest.raises(ConfigError, match="shard"):
        generate_silver(cfg(tmp_path / "x.jsonl"), shard=(2, 2))
