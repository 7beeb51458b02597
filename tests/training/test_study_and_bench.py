"""The study plan and table, the training-step benchmark, and the missing-extra error."""

from __future__ import annotations

import json

import pytest

from presentation_dependence.optional import MissingExtraError, import_optional
from presentation_dependence.training.study import study_plan, study_table


def test_missing_extra_names_it():
    with pytest.raises(MissingExtraError, match=r"presentation-dependence\[train\]"):
        import_optional("surely_not_installed_pkg", extra="train", purpose="testing")


def test_study_plan_runs_every_scorer_through_the_normal_runners():
    steps = study_plan()
    names = [s.name for s in steps]
    assert names[:3] == ["data", "silver", "lambda"]
    for scorer in ("off-the-shelf", "bsc", "single-order", "order-averaged", "perm-aug", "oc-sft"):
        assert f"run {scorer}" in names and f"psi {scorer}" in names
    run_oc = next(s for s in steps if s.name == "run oc-sft")
    assert run_oc.needs_chosen_adapter and "scripts/run_experiment.py" in run_oc.argv
    train = [s for s in steps if s.name.startswith("train ")]
    assert len(train) == 3 and all("scripts/train/train_student.py" in s.argv for s in train)
    launched = study_plan(launcher=["accelerate", "launch"])
    assert next(s for s in launched if s.name == "train perm-aug").argv[:2] == [
        "accelerate",
        "launch",
    ]


def _fake_run(folder, ndcg):
    (folder / "psi").mkdir(parents=True)
    (folder / "metrics.json").write_text(json.dumps({"num_queries": 2, "mean": {"ndcg@10": ndcg}}))
    summary = {
        m: {"mean": v, "ci_low": v - 0.1, "ci_high": v + 0.1}
        for m, v in (
            ("ndcg_mean", ndcg - 0.05),
            ("tau_psi", 0.3),
            ("delta_ndcg", 0.2),
            ("changed_topk", 0.5),
        )
    }
    psi = {
        "variants": {
            "random_shuffle": {"summary": summary},
            "same_order": {"summary": {"tau_psi": {"mean": 0.0}}},
        },
        "cost": {"same_order": {"forward_passes_per_query": 2.0}},
    }
    (folder / "psi" / "psi_metrics.json").write_text(json.dumps(psi))


def test_study_table(tmp_path):
    _fake_run(tmp_path / "off-the-shelf", 0.4)
    _fake_run(tmp_path / "oc-sft", 0.45)
    table = study_table([tmp_path / "off-the-shelf", tmp_path / "oc-sft"])
    lines = table.splitlines()
    assert len(lines) == 4 and lines[2].startswith(
        "| off-the-shelf | 2 | 0.400 | 0.350 [0.250, 0.450]"
    )
    assert "| oc-sft |" in lines[3]


@pytest.mark.slow
def test_training_step_benchmark_on_the_tiny_model(tiny_model):
    pytest.importorskip("peft")
    from presentation_dependence.bench.training import (
        training_benchmark_markdown,
        training_step_benchmark,
    )

    r = training_step_benchmark(
        tiny_model,
        num_candidates=4,
        max_passage_chars=60,
        dtype="float32",
        repeats=1,
        isolate=False,
    )
    assert r["single_view"]["views"] == 1 and r["oc_sft"]["views"] == 2
    assert r["oc_sft"]["prompt_tokens"] > r["single_view"]["prompt_tokens"]
    assert r["time_ratio"] > 0 and r["goal_ratio"] == 2.1
    assert "OC-SFT / single view" in training_benchmark_markdown(r)
