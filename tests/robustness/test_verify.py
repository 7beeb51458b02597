"""Re-scoring an archived PSI run: equal on the machine that made it, refused when it is not."""

from __future__ import annotations

import json

import pytest

from presentation_dependence.config import load_experiment_config
from presentation_dependence.data import load_dataset
from presentation_dependence.errors import PresdepError
from presentation_dependence.rerankers import build_reranker
from presentation_dependence.robustness.runner import PSIRunner
from presentation_dependence.robustness.verify import (
    CROSS_PROCESSOR_TOLERANCE,
    archive_dtype,
    rescore,
)
from tests.robustness.test_runner import make_fixture, write_config


@pytest.fixture()
def psi_run(tmp_path, tiny_model):
    make_fixture(tmp_path / "fixture.jsonl")
    cfg = load_experiment_config(write_config(tmp_path, tiny_model, "GradeReranker", chunk_size=6))
    PSIRunner(cfg, tmp_path / "run").run()
    return cfg, tmp_path / "run"


def _reranker(cfg, **change):
    block = {**cfg.reranker.to_plain(), **change}
    return build_reranker(block.pop("reranker_class"), **block)


def test_the_same_scorer_reproduces_the_archive_exactly(psi_run):
    cfg, run = psi_run
    requests = load_dataset(cfg.data).requests
    result = rescore(_reranker(cfg), run, requests, queries=2, presentations=3)
    assert result.same_processor and result.tolerance == 0.0
    assert result.max_abs_diff == 0.0 and result.ok
    assert result.queries == ("q0", "q1") and result.scores == 2 * 3 * 6
    assert "ok" in result.line()


def test_another_scorer_fails_and_another_processor_is_allowed_the_tolerance(psi_run):
    cfg, run = psi_run
    requests = load_dataset(cfg.data).requests
    other = rescore(_reranker(cfg, max_passage_chars=10), run, requests, queries=1)
    assert other.max_abs_diff > 0.0 and not other.ok and "FAILED" in other.line()
    costs = run / "unit_costs.jsonl"
    lines = [json.loads(line) for line in costs.read_text().splitlines()]
    for d in lines:
        d["cpu"] = "another processor [avx2]"
    costs.write_text("".join(json.dumps(d) + "\n" for d in lines))
    same = rescore(_reranker(cfg), run, requests, queries=1)
    assert not same.same_processor and same.tolerance == CROSS_PROCESSOR_TOLERANCE and same.ok


def test_other_candidates_are_refused(psi_run):
    cfg, run = psi_run
    req = load_dataset(cfg.data).requests[0]
    swapped = type(req)(req.query, (req.candidates[1], req.candidates[0], *req.candidates[2:]))
    with pytest.raises(PresdepError, match="candidates differ"):
        rescore(_reranker(cfg), run, [swapped])


def test_the_archive_dtype_is_read_from_its_provenance(psi_run):
    cfg, run = psi_run
    assert archive_dtype(run) == _reranker(cfg).describe()["dtype"]


def test_an_archive_without_a_psi_dtype_is_refused(tmp_path):
    (tmp_path / "provenance.json").write_text('{"invocations": [{"phase": "run"}]}')
    with pytest.raises(PresdepError, match="expected one dtype"):
        archive_dtype(tmp_path)
