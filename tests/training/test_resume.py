"""Training that survives a stop (tiny random model; peft needed).

A real SIGKILL mid-run, then a rerun, gives an adapter tensor-equal to an uninterrupted run's,
with the same data order and per-epoch views (the resumed epoch is the second one); a partial
checkpoint is never resumed from; a kill during the final save resumes without training; a
changed config or changed training data is refused with the keys named; a finished folder is a
no-op; progress lines and ``train_log.jsonl`` come without a terminal and hold each step once.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("peft")

import dataclasses

import torch
import yaml
from safetensors.torch import load_file
from transformers import TrainerCallback
from transformers.trainer_utils import get_last_checkpoint

from presentation_dependence.errors import ConfigError
from presentation_dependence.readout.speed import cxx_compiler
from presentation_dependence.training.collate import SilverDataset, TrainExample
from presentation_dependence.training.config import training_config_from_raw
from presentation_dependence.training.progress import TRAIN_LOG, run_loss, start_log
from presentation_dependence.training.resume import (
    CHECKPOINTS,
    MARKER,
    freeze,
    is_complete,
    latest_checkpoint,
    mark_complete,
    prune,
    train_record,
)
from presentation_dependence.training.silver import SilverSet
from presentation_dependence.training.trainer import train_student
from tests.training.conftest import grade_block

ROOT = Path(__file__).resolve().parents[2]
KILL_RUN = Path(__file__).with_name("kill_run.py")


def raw_cfg(tiny_model: str, silver_file: Path, out: Path, **train: Any) -> dict[str, Any]:
    return {
        "variant": "oc_sft",
        "views": 2,
        "lambda_": 1.0,
        "output_dir": str(out),
        "student": grade_block(tiny_model),
        "silver": {"path": str(silver_file), "num_orders": 3, "teacher": grade_block(tiny_model)},
        "train": {"learning_rate": 1e-2, "logging_steps": 1, "save_steps": 2, **train},
        "lora": {"r": 4, "alpha": 8},
    }


def record(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every example the dataset hands out in this process: key, epoch, views."""
    seen: list[dict[str, Any]] = []
    original = SilverDataset.__getitem__

    def getitem(self: SilverDataset, index: int) -> TrainExample:
        ex = original(self, index)
        seen.append({"key": ex.key, "epoch": self.epoch, "views": ex.views.tolist()})
        return ex

    monkeypatch.setattr(SilverDataset, "__getitem__", getitem)
    return seen


def tensors(path: Path) -> dict[str, torch.Tensor]:
    return load_file(str(path))


def assert_same_tensors(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys() and a
    unequal = [k for k in a if not torch.equal(a[k], b[k])]
    assert not unequal, f"{len(unequal)} of {len(a)} tensors differ, e.g. {unequal[0]}"


def log_lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / TRAIN_LOG).read_text(encoding="utf-8").splitlines()]


def test_sigkill_then_rerun_gives_the_uninterrupted_adapter(
    tiny_model, silver_file, silver, tmp_path, monkeypatch
):
    # 3 queries, batch 1, 2 epochs: steps 1-3 are epoch 0, steps 4-6 epoch 1. Checkpoints at
    # 2 and 4; the kill comes after step 5 is logged, so the rerun resumes inside epoch 1.
    ref_out, out = tmp_path / "uninterrupted", tmp_path / "killed"
    seen = record(monkeypatch)
    ref = train_student(
        training_config_from_raw(
            raw_cfg(tiny_model, silver_file, ref_out, epochs=2), "resume-test"
        ),
        silver=silver,
    )
    assert ref.global_step == 6 and ref.resumed_from_step is None
    ref_seen = list(seen)
    assert [r["epoch"] for r in ref_seen] == [0, 0, 0, 1, 1, 1]

    raw = raw_cfg(tiny_model, silver_file, out, epochs=2)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(KILL_RUN), json.dumps(raw), "5", str(tmp_path / "views.jsonl")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == -9, proc.stderr[-3000:]
    # Progress through logging, with no terminal (stdout and stderr are pipes), nothing printed.
    assert "step 5/6 (epoch 1.67): loss" in proc.stderr and "s/step, ETA" in proc.stderr
    assert re.search(r"ETA [0-9:]+, RSS [0-9.]+ GB", proc.stderr)
    assert "'loss'" not in proc.stdout
    ckpts = out / CHECKPOINTS
    assert not (out / "adapter").exists()
    assert sorted(p.name for p in ckpts.glob("checkpoint-*")) == ["checkpoint-2", "checkpoint-4"]
    assert latest_checkpoint(ckpts) == ckpts / "checkpoint-4"

    # A save killed midway: checkpoint-6 with a marker but a short optimizer file. The Trainer's
    # own get_last_checkpoint would resume from it; the run must not.
    partial = ckpts / "checkpoint-6"
    shutil.copytree(ckpts / "checkpoint-4", partial)
    (partial / MARKER).write_text(
        (partial / MARKER).read_text().replace('"global_step": 4', '"global_step": 6')
    )
    (partial / "optimizer.pt").write_bytes((partial / "optimizer.pt").read_bytes()[:100])
    assert get_last_checkpoint(str(ckpts)).endswith("checkpoint-6")
    assert not is_complete(partial)

    seen.clear()
    again = train_student(training_config_from_raw(raw, "resume-test"), silver=silver)
    assert again.resumed_from_step == 4 and again.global_step == 6
    assert_same_tensors(
        tensors(ref.adapter_dir / "adapter_model.safetensors"),
        tensors(again.adapter_dir / "adapter_model.safetensors"),
    )
    # Steps 5 and 6 saw the examples (order and epoch-1 views) the uninterrupted run saw.
    assert seen == ref_seen[-2:] and [r["epoch"] for r in seen] == [1, 1]
    assert not ckpts.exists()

    prov = train_record(out)
    ref_prov = train_record(ref_out)
    assert prov["resumed_from_step"] == 4 and prov["global_step"] == 6
    assert prov["train_loss"] == ref_prov["train_loss"] == ref.train_loss
    losses = [h["loss"] for h in prov["log_history"] if "loss" in h]
    assert losses == [h["loss"] for h in ref_prov["log_history"] if "loss" in h]

    lines = log_lines(out)
    assert [x["step"] for x in lines if "loss" in x] == [1, 2, 3, 4, 5, 6]
    resume = [x for x in lines if x.get("event") == "resume"]
    assert len(resume) == 1 and resume[0]["step"] == 4 and resume[0]["dropped_lines"] == 1
    ref_lines = [x for x in log_lines(ref_out) if "loss" in x]
    assert [x["loss"] for x in lines if "loss" in x] == [x["loss"] for x in ref_lines]
    assert all(x["eta_s"] is not None and x["s_per_step"] > 0 for x in ref_lines)
    assert all(x["rss_gb"] > 0 for x in ref_lines)
    assert all(x["peak_rss_gb"] >= x["rss_gb"] for x in ref_lines)  # the peak, not between steps


class CrashAtTrainEnd(TrainerCallback):
    """Raise once training ends: the process dies during the final save."""

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        raise RuntimeError("crash before the student is saved")


def test_final_save_interrupted_then_refusals_noop_and_restart(
    tiny_model, silver_file, silver, tmp_path, caplog
):
    out = tmp_path / "s"
    cfg = training_config_from_raw(
        raw_cfg(tiny_model, silver_file, out, max_steps=4, save_steps=3), "resume-test"
    )
    with pytest.raises(RuntimeError, match="crash before"):
        train_student(cfg, silver=silver, callbacks=[CrashAtTrainEnd()])
    final = out / CHECKPOINTS / "checkpoint-4"  # max_steps=4 ends mid-epoch 1
    assert is_complete(final) and not (out / "adapter").exists()
    trained = tensors(final / "adapter_model.safetensors")

    # Checkpoints of another config, or of other training data, are refused.
    changed = raw_cfg(tiny_model, silver_file, out, max_steps=4, save_steps=3)
    changed["lambda_"] = 2.0
    with pytest.raises(ConfigError, match=r"(?s)different config.*-lambda_: 1\.0\n\+lambda_: 2\.0"):
        train_student(training_config_from_raw(changed, "resume-test"), silver=silver)
    q0 = silver.queries[0]
    other = SilverSet(
        silver.headers,
        (dataclasses.replace(q0, order_scores=q0.order_scores + 1), *silver.queries[1:]),
    )
    with pytest.raises(ConfigError, match="other training data"):
        train_student(cfg, silver=other)

    # The rerun finds training ended in the final checkpoint: no step more, same weights.
    done = train_student(cfg, silver=silver)
    assert done.resumed_from_step == 4 and done.global_step == 4
    assert_same_tensors(trained, tensors(done.adapter_dir / "adapter_model.safetensors"))
    assert np.isfinite(done.train_loss)

    # Finished: a rerun (even with another logging_steps) does nothing.
    adapter_file = out / "adapter" / "adapter_model.safetensors"
    mtime = adapter_file.stat().st_mtime_ns
    watched = raw_cfg(tiny_model, silver_file, out, max_steps=4, save_steps=3, logging_steps=2)
    with caplog.at_level(logging.INFO, logger="presentation_dependence.training"):
        noop = train_student(training_config_from_raw(watched, "resume-test"), silver=silver)
    assert noop.skipped and noop.trainer is None and noop.global_step == 4
    assert noop.train_loss == done.train_loss
    assert "nothing to train" in caplog.text
    assert adapter_file.stat().st_mtime_ns == mtime

    # Another config on a finished folder is refused; restart retrains it.
    shorter = raw_cfg(tiny_model, silver_file, out, max_steps=1)
    with pytest.raises(
        ConfigError, match=r"(?s)different config.*-  max_steps: 4\n\+  max_steps: 1"
    ):
        train_student(training_config_from_raw(shorter, "resume-test"), silver=silver)
    redone = train_student(
        training_config_from_raw(shorter, "resume-test"), silver=silver, restart=True
    )
    assert redone.global_step == 1 and not redone.skipped and redone.resumed_from_step is None
    assert [x["step"] for x in log_lines(out) if "loss" in x] == [1]


def test_pause_then_train_on_gives_the_uninterrupted_adapter(
    tiny_model, silver_file, silver, tmp_path
):
    """A run paused at step 3 (its schedule the full run's) holds the uninterrupted run's step-3
    adapter as its snapshot, and trained on later ends with the uninterrupted run's adapter."""
    ref_raw = raw_cfg(tiny_model, silver_file, tmp_path / "ref", epochs=2, save_steps=1)
    ref_raw["train"]["keep_snapshots"] = True
    ref = train_student(training_config_from_raw(ref_raw, "pause-test"), silver=silver)
    assert ref.global_step == 6

    no_snapshots = raw_cfg(tiny_model, silver_file, tmp_path / "x", epochs=2)
    with pytest.raises(ConfigError, match="keep_snapshots: true"):
        train_student(training_config_from_raw(no_snapshots, "pause-test"), pause_at=3)
    out = tmp_path / "paused"
    raw = raw_cfg(tiny_model, silver_file, out, epochs=2)
    raw["train"]["keep_snapshots"] = True
    cfg = training_config_from_raw(raw, "pause-test")
    paused = train_student(cfg, silver=silver, pause_at=3)
    assert paused.paused and not paused.skipped and paused.global_step == 3
    assert paused.adapter_dir == out / "snapshots" / "step-000003"
    assert not (out / "adapter").exists()  # not finished
    step3 = tensors(paused.adapter_dir / "adapter_model.safetensors")
    assert_same_tensors(
        step3, tensors(ref.output_dir / "snapshots/step-000003/adapter_model.safetensors")
    )

    again = train_student(cfg, silver=silver, pause_at=3)  # paused before: nothing trains
    assert again.skipped and again.paused and again.adapter_dir == paused.adapter_dir

    done = train_student(cfg, silver=silver)  # trains on from the pause to the end
    assert done.resumed_from_step == 3 and done.global_step == 6 and not done.paused
    assert_same_tensors(
        tensors(ref.adapter_dir / "adapter_model.safetensors"),
        tensors(done.adapter_dir / "adapter_model.safetensors"),
    )
    assert [x["step"] for x in log_lines(out) if "loss" in x] == [1, 2, 3, 4, 5, 6]

    # Finished: a pause at a kept step answers with its snapshot; at another step, a clear error.
    kept = train_student(cfg, silver=silver, pause_at=4)
    assert kept.skipped and not kept.paused and kept.adapter_dir.name == "step-000004"
    with pytest.raises(ConfigError, match="without a snapshot of step 5"):
        train_student(cfg, silver=silver, pause_at=5)


def test_frozen_config_fills_defaults_and_skips_operational_keys(tiny_model, silver_file, tmp_path):
    """The training folder is a run folder: its config is frozen at the start; a folder made
    before a key existed, or run with other logging, saving, naming or held-out queries (what
    select-lambda scores on, so the config's own λ student is reused), is the same config."""
    raw = raw_cfg(tiny_model, silver_file, tmp_path, max_steps=4)
    cfg = training_config_from_raw(raw, "t")
    old = cfg.to_plain()
    del old["train"]["save_total_limit"]  # a folder made before the key existed
    old["train"]["logging_steps"] = 7
    old["description"] = "renamed"
    old["output_dir"] = "elsewhere"
    old["splits"]["heldout"] = [{"dataloader_class": "FixtureLoader", "path": "other.jsonl"}]
    frozen = yaml.safe_dump(old, sort_keys=False)
    (tmp_path / "resolved_config.yaml").write_text(frozen)
    (tmp_path / TRAIN_LOG).write_text("{}\n")  # a result: another config is refused
    freeze(tmp_path, cfg)
    assert (tmp_path / "resolved_config.yaml").read_text() == frozen  # kept as frozen
    changed = dict(raw, lora={**raw.get("lora", {}), "r": 16})
    with pytest.raises(ConfigError, match=r"(?s)different config.*--restart.*-  r: 4\n\+  r: 16"):
        freeze(tmp_path, training_config_from_raw(changed, "t"))


def fake_checkpoint(folder: Path, step: int, *, complete: bool = True) -> Path:
    ckpt = folder / f"checkpoint-{step}"
    ckpt.mkdir(parents=True)
    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    (ckpt / "optimizer.pt").write_bytes(b"x" * step)
    if complete:
        mark_complete(ckpt, step)
    return ckpt


def test_prune_keeps_the_newest_complete_and_drops_partial(tmp_path):
    for step in (2, 4, 6):
        fake_checkpoint(tmp_path, step)
    fake_checkpoint(tmp_path, 8, complete=False)
    assert latest_checkpoint(tmp_path) == tmp_path / "checkpoint-6"
    prune(tmp_path, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-4", "checkpoint-6"]
    prune(tmp_path, None)
    assert latest_checkpoint(tmp_path) == tmp_path / "checkpoint-6"


def test_start_log_cuts_back_to_the_resumed_step(tmp_path):
    path = tmp_path / TRAIN_LOG
    start_log(path, None)
    with path.open("a") as fh:
        for step in (1, 2, 3):
            fh.write(json.dumps({"step": step, "loss": 1.0 / step}) + "\n")
        fh.write('{"step": 4, "lo')  # the line a kill cut
    assert start_log(path, 2, "checkpoint-2") == 2
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [x.get("event") or x["step"] for x in lines] == ["start", 1, 2, "resume"]
    assert start_log(path, None) == 0 and len(path.read_text().splitlines()) == 1


def test_run_loss_weights_each_logged_window_by_its_steps():
    history = [{"loss": 2.0, "step": 2}, {"loss": 1.0, "step": 3}, {"train_runtime": 1.0}]
    assert run_loss(history) == pytest.approx((2.0 * 2 + 1.0) / 3)
    assert np.isnan(run_loss([]))


@pytest.mark.skipif(cxx_compiler() is None, reason="compile on CPU needs a C++ compiler")
@pytest.mark.parametrize(("dtype", "compile"), [("float32", True), ("bfloat16", None)])
def test_compiled_training_killed_and_resumed_gives_the_uninterrupted_adapter(
    tiny_model, silver_file, tmp_path, dtype, compile
):
    """With compiled decoder layers (``student.compile: true``, or bfloat16 under the default
    ``auto``) a SIGKILLed run, resumed in a fresh process, ends with the adapter of a run that
    was never stopped: every run is its own process, so each compiles its graphs from scratch
    at a different step (issue 39, item 3)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}

    def run(out: Path, kill_step: int) -> int:
        raw = raw_cfg(tiny_model, silver_file, out, epochs=2)
        raw["student"] = {**raw["student"], "dtype": dtype}
        if compile is not None:  # None: the default, auto
            raw["student"]["compile"] = compile
        argv = [sys.executable, str(KILL_RUN), json.dumps(raw), str(kill_step)]
        proc = subprocess.run(
            [*argv, str(out.parent / f"{out.name}-views.jsonl")],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert "compiled layers" in proc.stderr, proc.stderr[-3000:]
        return proc.returncode

    ref, killed = tmp_path / "uninterrupted", tmp_path / "killed"
    assert run(ref, 99) == 3  # kill_run's "no kill happened"
    assert run(killed, 5) == -9
    assert latest_checkpoint(killed / CHECKPOINTS) == killed / CHECKPOINTS / "checkpoint-4"
    assert run(killed, 99) == 3
    assert train_record(killed)["resumed_from_step"] == 4
    assert_same_tensors(
        tensors(ref / "adapter" / "adapter_model.safetensors"),
        tensors(killed / "adapter" / "adapter_model.safetensors"),
    )
