"""λ selection: refuses held-out/test overlap, trains one student per λ, records the curve."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

pytest.importorskip("peft")

from presentation_dependence.errors import ConfigError
from presentation_dependence.io.fixture import read_fixture, write_fixture
from presentation_dependence.training.config import training_config_from_raw
from presentation_dependence.training.lambda_select import (
    choose_lambda,
    run_lambda_selection,
    student_reranker,
)
from presentation_dependence.training.splits import SplitOverlapError
from tests.training.conftest import NOVELEVAL, grade_block


def fixture_of(path: Path, qids: list[str], top_k: int = 5) -> dict:
    requests, qrels = read_fixture(NOVELEVAL)
    from presentation_dependence.records import RerankRequest

    chosen = [RerankRequest(r.query, r.candidates[:top_k]) for r in requests if r.query.qid in qids]
    write_fixture(path, chosen, qrels)
    return {"dataloader_class": "FixtureLoader", "path": str(path), "top_k": top_k}


def cfg_for(tiny_model, silver_file, tmp_path, heldout_qids, test_qids, lambdas=(0.5, 2.0)):
    return training_config_from_raw(
        {
            "variant": "oc_sft",
            "output_dir": str(tmp_path / "student"),
            "views": 2,
            "lambda_": 1.0,
            "student": grade_block(tiny_model),
            "silver": {
                "path": str(silver_file),
                "num_orders": 3,
                "teacher": grade_block(tiny_model),
            },
            "train": {"max_steps": 1, "learning_rate": 1e-2},
            "lora": {"r": 4, "alpha": 8},
            "splits": {
                "heldout": [fixture_of(tmp_path / "heldout.jsonl", heldout_qids)],
                "test": [fixture_of(tmp_path / "test.jsonl", test_qids)],
            },
            "selection": {"lambdas": list(lambdas), "num_presentations": 2, "seed": 0},
        },
        "oc-sft-test",
    )


def test_refuses_heldout_that_overlaps_the_test_set(tiny_model, silver_file, tmp_path):
    cfg = cfg_for(tiny_model, silver_file, tmp_path, ["10", "11"], ["11", "12"])
    with pytest.raises(SplitOverlapError, match="held-out queries overlap the test"):
        run_lambda_selection(cfg, out_dir=tmp_path / "sel")
    assert not (tmp_path / "sel").exists(), "nothing may be trained before the check"


def test_refuses_heldout_that_overlaps_training(tiny_model, silver_file, tmp_path):
    cfg = cfg_for(tiny_model, silver_file, tmp_path, ["0", "11"], ["12"])  # "0" is a silver query
    with pytest.raises(SplitOverlapError, match="training"):
        run_lambda_selection(cfg, out_dir=tmp_path / "sel")


@pytest.mark.slow
def test_selects_and_records_the_curve(tiny_model, silver_file, tmp_path):
    cfg = cfg_for(tiny_model, silver_file, tmp_path, ["10", "11"], ["12", "13"])
    out = tmp_path / "sel"
    result = run_lambda_selection(cfg, out_dir=out)
    saved = json.loads((out / "lambda_selection.json").read_text())
    assert saved["chosen_lambda"] == result["chosen_lambda"] in (0.5, 2.0)
    assert [r["lambda"] for r in saved["curve"]] == [0.5, 2.0]
    assert saved["base"]["lambda"] is None and saved["heldout_queries"] == 2
    assert saved["test_queries_checked"] == 2 and saved["criterion"] == "ndcg_mean"
    for row in saved["curve"]:
        assert 0 <= row["ndcg_mean"] <= 1 and 0 <= row["tau_psi"] <= 1
        assert Path(row["adapter"], "adapter_model.safetensors").is_file()
    assert Path(saved["chosen_adapter"]).parent.name == f"lambda-{saved['chosen_lambda']:g}"
    assert "(chosen)" in (out / "lambda_curve.md").read_text()
    stamp = Path(saved["curve"][0]["adapter"], "adapter_model.safetensors").stat().st_mtime_ns
    run_lambda_selection(cfg, out_dir=out)  # rerun: the students are reused
    assert (
        Path(saved["curve"][0]["adapter"], "adapter_model.safetensors").stat().st_mtime_ns == stamp
    )


@pytest.mark.slow
def test_the_configs_own_lambda_is_the_configs_own_student(tiny_model, silver_file, tmp_path):
    cfg = cfg_for(tiny_model, silver_file, tmp_path, ["10", "11"], ["12", "13"], (1.0, 2.0))
    out = tmp_path / "sel"
    result = run_lambda_selection(cfg, out_dir=out)
    own = next(r for r in result["curve"] if r["lambda"] == cfg.lambda_)
    assert Path(own["adapter"]) == cfg.resolved_output_dir / "adapter"
    assert not (out / "lambda-1").exists() and (out / "lambda-2" / "adapter").is_dir()


@pytest.mark.slow
def test_selection_at_a_step_trains_only_the_chosen_run_to_the_end(
    tiny_model, silver_file, tmp_path
):
    cfg = cfg_for(tiny_model, silver_file, tmp_path, ["10", "11"], ["12", "13"], (1.0, 2.0))
    bad = dataclasses.replace(cfg, selection=dataclasses.replace(cfg.selection, at_step=1))
    with pytest.raises(ConfigError, match="keep_snapshots: true"):
        run_lambda_selection(bad, out_dir=tmp_path / "sel")
    with pytest.raises(ConfigError, match=r"selection\.at_step is not set"):
        run_lambda_selection(cfg, out_dir=tmp_path / "sel", choose_only=True)
    train = dataclasses.replace(cfg.train, max_steps=2, save_steps=1, keep_snapshots=True)
    cfg = dataclasses.replace(bad, train=train)
    out = tmp_path / "sel"
    # choose only: the runs compared at step 1, none trained on, the choice kept apart
    first = run_lambda_selection(cfg, out_dir=out, choose_only=True)
    assert first["chosen_final"] is None and first["chosen_adapter"] is None
    assert (out / "lambda_choice.json").is_file() and not (out / "lambda_selection.json").exists()
    assert not (cfg.resolved_output_dir / "adapter").exists()
    assert not (out / "lambda-2" / "adapter").exists()
    assert "has not trained to the end yet" in (out / "lambda_curve.md").read_text()
    result = run_lambda_selection(cfg, out_dir=out)  # completes it: the chosen run trains on
    assert [r["ndcg_mean"] for r in result["curve"]] == [r["ndcg_mean"] for r in first["curve"]]
    assert result["chosen_lambda"] == first["chosen_lambda"]
    assert result["at_step"] == 1 and [r["step"] for r in result["curve"]] == [1, 1]
    for row in result["curve"]:
        assert Path(row["adapter"]).name == "step-000001"
    chosen = result["chosen_lambda"]
    folders = {1.0: cfg.resolved_output_dir, 2.0: out / "lambda-2"}
    assert (folders[chosen] / "adapter").is_dir()  # trained on to the end
    assert not any((f / "adapter").exists() for lam, f in folders.items() if lam != chosen)
    final = result["chosen_final"]
    assert final["step"] == 2 and final["lambda"] == chosen
    assert result["chosen_adapter"] == str(folders[chosen] / "adapter")
    assert "chosen, trained to the end" in (out / "lambda_curve.md").read_text()


def test_choose_lambda_rule():
    curve = [
        {"lambda": 0.3, "ndcg_mean": 0.5, "tau_psi": 0.2},
        {"lambda": 1.0, "ndcg_mean": 0.6, "tau_psi": 0.1},
        {"lambda": 3.0, "ndcg_mean": 0.6, "tau_psi": 0.05},
    ]
    assert choose_lambda(curve, "ndcg_mean") == 1.0  # tie -> smaller λ
    assert choose_lambda(curve, "tau_psi") == 3.0


def test_held_out_scoring_uses_the_trainings_threads_unless_the_block_names_its_own(
    tiny_model, silver_file, tmp_path
):
    cfg = cfg_for(tiny_model, silver_file, tmp_path, ["10"], ["12"])
    one = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, num_threads=1))
    assert student_reranker(one, None).options.num_threads == 1
    own = dataclasses.replace(one, student={**one.student, "num_threads": 2})
    assert student_reranker(own, None).options.num_threads == 2
