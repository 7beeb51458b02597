"""presdep qa end to end on the tiny model: 3 questions, M=2 (fast)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from presentation_dependence.cli import main as cli_main
from presentation_dependence.config import load_experiment_config
from presentation_dependence.data.hotpotqa import HotpotQALoader
from presentation_dependence.errors import ConfigError
from presentation_dependence.qa.runner import QARunner
from presentation_dependence.robustness.runner import PSIRunner

WORDS = ["flea", "egg", "host", "cat", "blood", "jump", "week", "larva", "skin", "bite"]


def _hotpot(path: Path, n_questions: int = 3, n: int = 5) -> Path:
    rng = np.random.default_rng(0)
    rows = []
    for q in range(n_questions):
        rows.append(
            {
                "question_id": f"hq{q}",
                "question_text": f"Which flea bites cat number {q}?",
                "answers_objects": [{"number": "", "spans": ["yes" if q == 0 else "cat flea"]}],
                "contexts": [
                    {
                        "id": str(i),
                        "title": f"Flea {q}-{i}",
                        "paragraph_text": " ".join(rng.choice(WORDS, size=8)),
                        "is_supporting": i in (1, 3),
                    }
                    for i in range(n)
                ],
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture()
def qa_cfg(tmp_path: Path, tiny_model: str) -> Path:
    reader = tmp_path / "tiny-reader.yaml"
    reader.write_text(
        yaml.safe_dump({"model_name": tiny_model, "device": "cpu", "max_new_tokens": 3}),
        encoding="utf-8",
    )
    body: dict[str, Any] = {
        "reranker": {
            "reranker_class": "GradeReranker",
            "model_name": tiny_model,
            "device": "cpu",
            "dtype": "float32",
            "chunk_size": 10,
        },
        "data": {
            "dataloader_class": "HotpotQALoader",
            "path": str(_hotpot(tmp_path / "hq.jsonl")),
            "top_k": 10,
        },
        "robustness": {
            "perturbations": ["random_shuffle"],
            "num_presentations": 2,
            "null_repeats": 2,
            "bootstrap_resamples": 200,
        },
        "qa": {"reader": str(reader), "retain_top_k": 2},
    }
    path = tmp_path / "qa-tiny.yaml"
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return path


def test_qa_end_to_end_resume_and_from_records(qa_cfg: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert cli_main(["qa", str(qa_cfg), "--run-dir", str(run)]) == 0
    metrics_bytes = (run / "qa" / "qa_metrics.json").read_bytes()
    m = json.loads(metrics_bytes)
    assert m["num_questions"] == 3
    assert set(m["variants"]) == {"random_shuffle", "same_order"}
    null = m["variants"]["same_order"]["summary"]
    assert null["tau_psi"]["mean"] == 0.0 and null["answer_flip"]["mean"] == 0.0
    assert null["jaccard_retained"]["mean"] == 1.0
    for key in ("ndcg_mean", "tau_psi", "answer_flip", "em", "f1", "jaccard_retained"):
        block = m["variants"]["random_shuffle"]["summary"][key]
        assert block["ci_low"] <= block["mean"] <= block["ci_high"]
    assert {"em", "f1"} <= set(m["control"]) and m["setup"]["retention"] == "top-2"

    records = [json.loads(x) for x in (run / "qa" / "qa_records.jsonl").read_text().splitlines()]
    assert [r["qid"] for r in records] == ["hq0", "hq1", "hq2"]
    rec = records[0]
    row = rec["variants"]["random_shuffle"][0]
    for key in ("retained", "prompt_hash", "raw_answer", "answer", "normalized_answer", "em", "f1"):
        assert key in row
    assert len(row["retained"]) == 2 and len(row["prompt_hash"]) == 64
    assert row["forward_passes"] == 1 and row["prompt_tokens"] > 0  # the scoring pass
    assert row["reader_prompt_tokens"] > 0 and row["generated_tokens"] <= 3
    assert rec["control"]["retained"] == ["0", "1", "2", "3", "4"]
    # the null's repeats read the same prompt: the second is answered from the cache
    null_rows = rec["variants"]["same_order"]
    assert null_rows[0]["prompt_hash"] == null_rows[1]["prompt_hash"] and null_rows[1]["cached"]

    # presentations are the ones 'presdep psi' draws for the same config (same seeds)
    cfg = load_experiment_config(qa_cfg)
    ds = HotpotQALoader(cfg.data).load()
    grades = np.array([ds.qrels.grade("hq0", c.docid) for c in ds.requests[0].candidates])  # type: ignore[union-attr]
    drawn = PSIRunner(cfg, tmp_path / "psi").presentations(ds.requests[0], grades)
    assert [r["perm"] for r in rec["variants"]["random_shuffle"]] == drawn[
        "random_shuffle"
    ].tolist()

    # a rerun reuses every question (no model call) and writes the same metrics
    runner = QARunner(cfg, run, reranker=_Forbidden(), reader=_Forbidden())  # type: ignore[arg-type]
    assert runner.run() is not None
    assert (run / "qa" / "qa_metrics.json").read_bytes() == metrics_bytes
    assert cli_main(["qa", str(qa_cfg), "--run-dir", str(run), "--from-records"]) == 0
    assert (run / "qa" / "qa_metrics.json").read_bytes() == metrics_bytes


def test_qa_refuses_another_reader_or_loader(qa_cfg: Path, tmp_path: Path) -> None:
    cfg = load_experiment_config(qa_cfg)
    run = tmp_path / "run2"
    (run / "qa").mkdir(parents=True)
    (run / "qa" / "reader.json").write_text('{"name": "someone-else"}', encoding="utf-8")
    (run / "qa" / "per_question").mkdir()  # a folder with answers (one without takes any reader)
    (run / "qa" / "per_question" / "hq9.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ConfigError, match="another reader config"):
        QARunner(cfg, run).run()
    fixture_cfg = load_experiment_config(qa_cfg, ["data.dataloader_class=FixtureLoader"])
    with pytest.raises(ConfigError, match="HotpotQALoader"):
        QARunner(fixture_cfg, tmp_path / "run3").run()


class _Forbidden:
    """A reranker/reader that fails when used: proves a rerun computes nothing."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"model used on a complete run folder ({name})")
