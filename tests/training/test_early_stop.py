"""Early stopping on the held-out curve: the rule by hand, and on the tiny model a run that
stops, saves its best checkpoint's adapter, and resumes to the same decision after a kill."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("peft")

from safetensors.torch import load_file

from presentation_dependence.errors import ConfigError
from presentation_dependence.training import early_stop as early_stop_module
from presentation_dependence.training import heldout_curve, run_loop
from presentation_dependence.training.early_stop import EARLY_STOPPING_FILE, stop_decision
from presentation_dependence.training.progress import training_cost
from presentation_dependence.training.readout_trainer import snapshot_dir
from presentation_dependence.training.resume import train_record
from presentation_dependence.training.trainer import train_student
from tests.training.conftest import NOVELEVAL, student_cfg


def test_rule_by_hand() -> None:
    vals = [(100, 0.50), (200, 0.55), (300, 0.54), (400, 0.555), (500, 0.53)]
    d = stop_decision(vals, criterion="ndcg_mean", patience=2)
    assert (d.best_step, d.since_best, d.stop) == (400, 1, False)
    # with min_delta 0.01, step 400's +0.005 is no improvement: 2 in a row after step 200
    d = stop_decision(vals, criterion="ndcg_mean", patience=2, min_delta=0.01)
    assert (d.best_step, d.best_value, d.since_best, d.stop) == (200, 0.55, 3, True)
    # τ-PSI is lower-is-better; the order of the pairs given does not matter
    d = stop_decision(list(reversed(vals)), criterion="tau_psi", patience=1)
    assert (d.best_step, d.since_best, d.stop) == (100, 4, True)
    assert [s for s, _ in d.values] == [100, 200, 300, 400, 500]
    with pytest.raises(ValueError, match="no checkpoint"):
        stop_decision([], criterion="ndcg_mean", patience=1)
    # a judge's share right in both orders is higher-is-better, its flip share lower: placement
    # augmentation's held-out points at steps 250-400 (accuracy − flips / 2 for pairs)
    judge = [(250, 0.640 - 0.30 / 2), (300, 0.625 - 0.21 / 2), (350, 0.620 - 0.16 / 2)]
    judge += [(400, 0.615 - 0.21 / 2)]
    assert stop_decision(judge, criterion="consistent_accuracy", patience=3).best_step == 350
    flips = [(250, 0.30), (300, 0.21), (350, 0.16), (400, 0.21)]
    assert stop_decision(flips, criterion="flip_share", patience=3).best_step == 350


STOP_RAW: dict[str, Any] = {
    "variant": "single_order",
    "views": 1,
    "lambda_": 0.0,
    "train": {"save_steps": 1, "keep_snapshots": True, "max_steps": 4},
    "splits": {"heldout": [{"path": NOVELEVAL, "top_k": 4, "max_queries": 2}]},
    "early_stopping": {"patience": 1, "min_delta": 5.0, "max_queries": 2, "num_presentations": 2},
}


def _scripted(values: dict[int, float]) -> Any:
    """A held-out measurement whose nDCG over the shuffles is ``values[step]``."""

    def measure(cfg, heldout, step, adapter, num_presentations, seed):
        return {"step": step, "ndcg_mean": values[step], "tau_psi": 0.5, "num_queries": 2}

    return measure


class _Rule:
    patience, min_delta, criterion = 3, 0.0, "accuracy"


class _Source:
    """Points of the snapshots on disk; counts what it measures."""

    def __init__(self, out: Path, values: dict[int, float]) -> None:
        self.out, self.values, self.measured = out, values, []

    def point(self, step: int, snapshot: Path) -> dict[str, Any]:
        self.measured.append(step)
        return {"accuracy": self.values[step], "consistent_accuracy": self.values[step]}

    def settings(self) -> dict[str, Any]:
        return {}


def test_a_checkpoint_whose_snapshot_is_gone_still_counts_by_its_recorded_point(
    tmp_path: Path,
) -> None:
    # A run resumed from a copy keeping the best (200) and newest (300) snapshots: step 250's
    # point is recorded in curve/ but its snapshot is gone. Best 200, then 250 and 300 worse:
    # two checkpoints without improvement, not one.
    for step in (200, 300):
        snap = tmp_path / "snapshots" / f"step-{step:06d}"
        snap.mkdir(parents=True)
        (snap / "adapter_model.safetensors").write_bytes(b"")
    (tmp_path / "curve").mkdir()
    for step, acc in ((200, 0.64), (250, 0.525), (300, 0.61), (350, 0.9)):  # 350: not yet
        point = {"key": {}, "point": {"step": step, "accuracy": acc}}
        (tmp_path / "curve" / f"step-{step:06d}.json").write_text(json.dumps(point))
    source = _Source(tmp_path, {200: 0.64, 300: 0.61})
    rule = early_stop_module.HeldoutEarlyStopping(source, _Rule(), "r")
    d = rule.decision(300)
    assert d is not None
    assert [s for s, _ in d.values] == [200, 250, 300] and sorted(source.measured) == [200, 300]
    assert (d.best_step, d.since_best, d.stop) == (200, 2, False)
    snapshot, _ = rule.selected(300)  # type: ignore[misc]
    assert snapshot == tmp_path / "snapshots" / "step-000200"
    # a rule on a figure the recorded point lacks, or a best without its snapshot, is refused
    _Rule.criterion = "consistent_accuracy"
    with pytest.raises(ConfigError, match="step 250 has no 'consistent_accuracy'"):
        early_stop_module.HeldoutEarlyStopping(source, _Rule(), "r").decision(300)
    _Rule.criterion = "accuracy"
    (tmp_path / "curve" / "step-000250.json").write_text(
        json.dumps({"key": {}, "point": {"step": 250, "accuracy": 0.99}})
    )
    with pytest.raises(ConfigError, match="step 250\\) has no snapshot"):
        rule.selected(300)


def test_a_run_stops_and_saves_its_best_checkpoint(
    tiny_model, silver_file, tmp_path, monkeypatch
) -> None:
    # min_delta 5: nothing improves on the first checkpoint, so patience 1 stops at step 2
    cfg = student_cfg(tiny_model, silver_file, tmp_path / "s", **STOP_RAW)
    outcome = train_student(cfg)
    out = cfg.resolved_output_dir
    assert outcome.global_step == 2
    record = train_record(out)["early_stopping"]
    assert (record["best_step"], record["stopped_at"], record["stop"]) == (1, 2, True)
    assert [v["step"] for v in record["values"]] == [1, 2]
    assert record["heldout_queries"] == 2 and record["patience"] == 1
    best = load_file(str(snapshot_dir(out, 1) / "adapter_model.safetensors"))
    saved = load_file(str(out / "adapter" / "adapter_model.safetensors"))
    assert best.keys() == saved.keys() and all((best[k] == saved[k]).all() for k in best)
    last = load_file(str(snapshot_dir(out, 2) / "adapter_model.safetensors"))
    assert any((last[k] != saved[k]).any() for k in last)
    # the points are the learning curve's cache: the curve measures nothing again
    assert (out / "curve" / "step-000002.json").is_file()
    assert json.loads((out / "early_stopping.json").read_text())["stop"] is True
    assert json.loads((out / "curve" / "step-000001.json").read_text())["point"]["cpu_s"] > 0
    # the cost a recipe table reads: CPU seconds and prompt tokens per log window, summed
    lines = [json.loads(x) for x in (out / "train_log.jsonl").read_text().splitlines()]
    steps = [r for r in lines if "event" not in r]
    assert [r["step"] for r in steps] == [1, 2]
    assert all(r["tokens"] > 0 and r["cpu_s"] > 0 for r in steps)
    cost = training_cost(out / "train_log.jsonl")
    assert cost["steps"] == 2 and cost["tokens"] == sum(r["tokens"] for r in steps)
    assert cost["cpu_s"] == pytest.approx(sum(r["cpu_s"] for r in steps))


def test_the_rule_follows_the_curve_and_a_resume_after_the_stop_trains_no_step(
    tiny_model, silver_file, tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(heldout_curve, "_measure", _scripted({1: 0.3, 2: 0.4, 3: 0.35, 4: 0.2}))
    raw = {**STOP_RAW, "early_stopping": {**STOP_RAW["early_stopping"], "min_delta": 0.0}}
    cfg = student_cfg(tiny_model, silver_file, tmp_path / "s", **raw)
    out = cfg.resolved_output_dir
    # a kill after the stop was decided, during the final save: the checkpoints stay
    with monkeypatch.context() as m:
        m.setattr(run_loop, "save_student", _killed)
        with pytest.raises(RuntimeError, match="killed"):
            train_student(cfg)
    assert (out / "checkpoints" / "checkpoint-3").is_dir() and not (out / "adapter").exists()
    # the rerun resumes at step 3, where the rule had stopped (best 2, then 3 did not
    # improve): it trains no step 4 and measures no point again, and saves step 2's adapter
    monkeypatch.setattr(early_stop_module, "curve_point", _no_new_point(early_stop_module))
    (out / EARLY_STOPPING_FILE).unlink()  # as if killed before the checkpoint's record
    again = train_student(cfg)
    record = json.loads((out / EARLY_STOPPING_FILE).read_text())  # written again on resume
    assert (record["best_step"], record["stop"]) == (2, True)
    assert again.global_step == 3 and again.resumed_from_step == 3
    assert train_record(out)["early_stopping"]["best_step"] == 2
    best = (snapshot_dir(out, 2) / "adapter_model.safetensors").read_bytes()
    assert (out / "adapter" / "adapter_model.safetensors").read_bytes() == best


def _killed(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("killed during the final save")


def _no_new_point(module: Any) -> Any:
    """curve_point that fails on a point not in the cache."""
    real = module.curve_point

    def point(cfg, heldout, step, adapter, **kw):
        assert heldout_curve.point_path(cfg, step).is_file(), f"step {step} measured again"
        return real(cfg, heldout, step, adapter, **kw)

    return point


def test_config_refusals(tiny_model, silver_file, tmp_path) -> None:
    raw = {**STOP_RAW, "train": {**STOP_RAW["train"], "keep_snapshots": False}}
    with pytest.raises(ConfigError, match=r"keep_snapshots is false.*Fix"):
        student_cfg(tiny_model, silver_file, tmp_path / "a", **raw)
    raw = {**STOP_RAW, "splits": {}}
    with pytest.raises(ConfigError, match=r"splits\.heldout is empty"):
        student_cfg(tiny_model, silver_file, tmp_path / "b", **raw)
    with pytest.raises(ConfigError, match="patience must be >= 1"):
        student_cfg(
            tiny_model,
            silver_file,
            tmp_path / "c",
            **{**STOP_RAW, "early_stopping": {"patience": 0}},
        )
