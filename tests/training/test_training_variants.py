"""The content study's training options on the tiny model: DebiasFirst's weighted fit and
balanced views, the cross-entropy and ListNet terms, full fine-tuning, adapter snapshots and the
learning curve over them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

pytest.importorskip("peft")

from presentation_dependence.cli import main
from presentation_dependence.records import Query
from presentation_dependence.report.figures import base_tau_psi
from presentation_dependence.rerankers.grade import GradeReranker, GradeRerankerOptions
from presentation_dependence.studies.curve import (
    checkpoint_adapters,
    curve_markdown,
    curve_paired,
    learning_curve_points,
)
from presentation_dependence.training import heldout_curve as curve_module
from presentation_dependence.training.collate import SilverDataset
from presentation_dependence.training.config import load_training_config
from presentation_dependence.training.heldout_curve import is_model_folder, weights_sha256
from presentation_dependence.training.resume import train_record
from presentation_dependence.training.silver import read_silver
from presentation_dependence.training.trainer import train_student
from tests.training.conftest import NOVELEVAL, grade_block, student_cfg, student_raw


def cfg_for(tiny_model: str, silver_file: Path, out: Path, **raw: Any):
    """A single-order student (1 view, no λ) checkpointing every step, unless ``raw`` says."""
    base = {"variant": "single_order", "views": 1, "lambda_": 0.0}
    train = {"save_steps": 1, **raw.pop("train", {})}
    return student_cfg(tiny_model, silver_file, out, **{**base, **raw, "train": train})


CURVE_RAW: dict[str, Any] = {
    "variant": "single_order",
    "views": 1,
    "lambda_": 0.0,
    "train": {"save_steps": 1, "keep_snapshots": True},
    "splits": {"heldout": [{"path": NOVELEVAL, "top_k": 4, "max_queries": 2}]},
}


def _psi_folder(root: Path) -> Path:
    (root / "psi").mkdir(parents=True)
    slots = np.tile(np.arange(1, 9), 4)
    np.savez(
        root / "psi" / "grade_distributions.npz",
        variant=np.array(["random_shuffle"] * slots.size),
        slot=slots,
        chunk=np.zeros(slots.size, dtype=int),
        score=np.linspace(2.0, 1.0, 8)[slots - 1],
    )
    return root


def test_debias_first_trains_with_inverse_propensity_weights(tiny_model, silver_file, tmp_path):
    cfg = cfg_for(
        tiny_model,
        silver_file,
        tmp_path / "s",
        variant="debias_first",
        views=2,
        view_orders="balanced",
        propensity={"psi_dir": str(_psi_folder(tmp_path / "psi-run"))},
    )
    out = train_student(cfg)
    assert out.global_step == 2 and np.isfinite(out.train_loss)
    prov = train_record(out.output_dir)
    w = np.array(prov["slot_weights"])
    assert w.shape == (8,) and w.mean() == pytest.approx(1.0)
    assert np.all(np.diff(w) > 0)  # early slots inflate grades here, so they weigh less


def test_ce_and_listnet_terms_train_and_are_logged(tiny_model, silver_file, tmp_path):
    cfg = cfg_for(
        tiny_model,
        silver_file,
        tmp_path / "s",
        loss={"fit": "ce", "rank_weight": 0.5},
        student=grade_block(tiny_model, template="interleaved_grade_v1"),
    )
    out = train_student(cfg)
    logged = [h for h in out.log_history if "rank" in h]
    assert logged and all(np.isfinite(h["rank"]) and h["rank"] > 0 for h in logged)


def test_full_fine_tuning_saves_a_servable_model(tiny_model, silver_file, tmp_path):
    cfg = cfg_for(tiny_model, silver_file, tmp_path / "s", finetune="full")
    out = train_student(cfg)
    model_dir = out.output_dir / "model"
    assert (model_dir / "config.json").is_file() and out.adapter_dir == model_dir
    block = {k: v for k, v in grade_block(str(model_dir)).items() if k != "reranker_class"}
    res = GradeReranker(GradeRerankerOptions(**block)).rank(
        Query("q", "fleas"), list(_candidates())
    )
    assert len(res.items) == 3 and all(np.isfinite(it.score) for it in res.items)


def _candidates():
    from presentation_dependence.records import Candidate

    return [Candidate(f"d{i}", f"passage {i} about fleas", i + 1) for i in range(3)]


def _must_not_run(*args, **kwargs):
    raise AssertionError("the base model was measured again")


def test_snapshots_give_a_learning_curve(tiny_model, silver_file, tmp_path, monkeypatch):
    cfg = student_cfg(tiny_model, silver_file, tmp_path / "s", **CURVE_RAW)
    train_student(cfg)
    steps = [s for s, _ in checkpoint_adapters(cfg.resolved_output_dir)]
    assert steps == [1, 2]
    points = learning_curve_points(cfg, num_presentations=2, max_queries=2)
    assert [p["step"] for p in points] == [0, 1, 2]
    assert all(0.0 <= p["tau_psi"] <= 1.0 and p["num_queries"] == 2 for p in points)
    again = learning_curve_points(cfg, num_presentations=2, max_queries=2)  # from the cache
    assert again == points
    assert base_tau_psi({"s": points}) == points[0]["tau_psi"]  # the goal line: half of it
    # every 2nd step: the base model, step 2 (a multiple of 2 and the final adapter)
    sparse = learning_curve_points(cfg, num_presentations=2, max_queries=2, every=2)
    assert sparse == [points[0], points[2]]
    listed = learning_curve_points(cfg, num_presentations=2, max_queries=2, steps=[1])
    assert listed == points  # step 1, then the final adapter (step 2)
    # a second student served the same way on the same queries: its base point is not re-measured
    shared: dict = {}
    assert learning_curve_points(cfg, num_presentations=2, max_queries=2, base_points=shared)
    monkeypatch.setattr(curve_module, "evaluate_heldout", _must_not_run)
    other = dataclasses.replace(cfg, output_dir=str(tmp_path / "other"))
    kw = {"num_presentations": 2, "max_queries": 2, "base_points": shared}
    assert learning_curve_points(other, **kw) == [points[0]]
    table = curve_markdown({"s": points})
    assert table.count("\n| s | ") == 3 and f"| {points[1]['tau_psi']:.3f} |" in table
    # the command: the points from the cache, as a table in the doc's block and a plot
    raw = student_raw(tiny_model, silver_file, tmp_path / "s", **CURVE_RAW)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(raw))
    doc = tmp_path / "docs" / "T.md"
    doc.parent.mkdir()
    doc.write_text("a\n<!-- learning-curve:start -->\nold\n<!-- learning-curve:end -->\nb\n")
    png = tmp_path / "docs" / "results" / "c.png"
    args = ["study", "curve", str(path), "--presentations", "2", "--max-queries", "2"]
    assert main([*args, "--every", "2", "--png", str(png), "--doc", str(doc)]) == 0
    text = doc.read_text()
    assert "old" not in text and "](results/c.png)" in text and png.stat().st_size > 0
    assert curve_markdown({load_training_config(path).id: [points[0], points[2]]}) in text
    assert main([*args, "--every", "0"]) == 2
    assert main([*args, "--steps", "1,x"]) == 2
    assert main([*args, "--paired-against", "nobody"]) == 2

    # Paired against another series: the per-query differences of the last points.
    assert all(set(p["per_query"]) == set(points[0]["per_query"]) for p in points)
    paired = curve_paired({"s": points, "base": [points[0]]}, "base")
    for metric in ("ndcg_mean", "tau_psi"):
        assert f"{points[2][metric] - points[0][metric]:+.3f} [" in paired
    assert paired.count("\n| s | 2 | 2 | ") == 1
    # A point cached before per-query scores were kept is measured again when they are needed.
    cached_file = cfg.resolved_output_dir / "curve" / "step-000001.json"
    saved = json.loads(cached_file.read_text())
    del saved["point"]["per_query"]
    cached_file.write_text(json.dumps(saved))
    again = learning_curve_points(cfg, num_presentations=2, max_queries=2, steps=[1])
    assert "per_query" not in again[1]  # reused as cached
    monkeypatch.undo()
    again = learning_curve_points(
        cfg, num_presentations=2, max_queries=2, steps=[1], per_query=True
    )

    def without_cost(point: dict) -> dict:
        return {k: v for k, v in point.items() if k != "cpu_s"}  # measured again: its own cost

    assert without_cost(again[1]) == without_cost(points[1])


def test_full_fine_tuning_snapshots_give_a_learning_curve(tiny_model, silver_file, tmp_path):
    """Snapshots of a fully fine-tuned model are whole models (weights, config, tokenizer)
    that serve as model_name, so the curve and the recipe search measure that arm too."""
    cfg = student_cfg(tiny_model, silver_file, tmp_path / "s", finetune="full", **CURVE_RAW)
    train_student(cfg)
    out = cfg.resolved_output_dir
    found = checkpoint_adapters(out)
    assert [s for s, _ in found] == [1, 2]
    assert all(is_model_folder(p) for _, p in found)
    assert (found[0][1] / "tokenizer_config.json").is_file()
    points = learning_curve_points(cfg, num_presentations=2, max_queries=2)
    assert [p["step"] for p in points] == [0, 1, 2]
    # each point served its own weights: the trained model's scores differ from the base's
    assert points[2]["per_query"] != points[0]["per_query"]
    assert weights_sha256(found[0][1]) != weights_sha256(found[1][1])


def test_listmle_on_the_teachers_raw_scores_trains(tiny_model, silver_file, tmp_path):
    """rank_target: raw reaches the loss through the collator's teacher_raw (the silver's raw
    scores, before calibration) and trains with ListMLE."""
    silver = read_silver(silver_file)
    dataset = SilverDataset(silver.queries, teacher_orders=1, views=1, seed=0)
    ex = dataset[0]
    assert ex.raw_labels is not None
    assert np.array_equal(ex.raw_labels, silver.queries[0].raw_labels(1))
    cfg = cfg_for(
        tiny_model,
        silver_file,
        tmp_path / "s",
        loss={"rank_weight": 1.0, "rank_loss": "listmle", "rank_target": "raw"},
    )
    out = train_student(cfg)
    logged = [h for h in out.log_history if "rank" in h]
    assert logged and all(np.isfinite(h["rank"]) and h["rank"] > 0 for h in logged)
