"""Training never saves a wrong student silently (issue 38; tiny random model, peft needed).

A non-finite loss stops training at its step; weights are checked finite before every save; a
resumed checkpoint must hold the bytes it was saved with and finite weights; a finished student
or checkpoints are rechecked against the silver labels and the base model's weights they were
trained on; the silver file's settings must be the config's; another command's run folder is
refused without advising --restart; one process trains a folder at a time.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("peft")

import torch
from safetensors.torch import load_file, save_file
from transformers import TrainerCallback

from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.runners.run_folder import RunFolder
from presentation_dependence.training.claim import TRAIN_CLAIM
from presentation_dependence.training.finite import require_finite_loss
from presentation_dependence.training.inputs import TrainingInputs
from presentation_dependence.training.resume import CHECKPOINTS, MARKER, train_record
from presentation_dependence.training.silver import SilverSet
from presentation_dependence.training.trainer import train_student
from tests.training.conftest import grade_block, student_cfg


def _with_scores(silver: SilverSet, change) -> SilverSet:
    queries = tuple(
        dataclasses.replace(q, order_scores=change(q.order_scores.copy())) for q in silver.queries
    )
    return SilverSet(silver.headers, queries)


class CrashAt(TrainerCallback):
    """Raise at the end of step ``step`` (after the checkpoints before it were saved)."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.global_step == self.step:
            raise RuntimeError(f"crash at step {self.step}")


def _poison(model: Any) -> None:
    p = next(p for p in model.parameters() if p.requires_grad)
    with torch.no_grad():
        p.view(-1)[0] = float("nan")


class PoisonAt(TrainerCallback):
    """Put a NaN into one LoRA weight at the end of step ``step`` (before its checkpoint), or
    with ``step`` None once training ends (after the last checkpoint, before the adapter)."""

    def __init__(self, step: int | None) -> None:
        self.step = step

    def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any):
        if state.global_step == self.step:
            _poison(model)

    def on_train_end(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any):
        if self.step is None:
            _poison(model)


# --- 1: non-finite numbers ------------------------------------------------------------------


def test_a_nan_label_stops_training_at_its_step(tiny_model, silver_file, silver, tmp_path):
    out = tmp_path / "s"
    cfg = student_cfg(tiny_model, silver_file, out, train={"max_steps": 3, "save_steps": 1})
    poisoned = _with_scores(
        silver, lambda s: np.where(np.arange(s.size).reshape(s.shape) == 0, np.nan, s)
    )
    with pytest.raises(PresdepError) as e:
        train_student(cfg, silver=poisoned)
    msg = str(e.value)
    assert "training step 1 is nan" in msg and "silver labels hold NaN" in msg
    assert "presdep silver CONFIG --force" in msg
    assert not (out / "adapter").exists() and not list((out / CHECKPOINTS).glob("checkpoint-*"))


def test_a_finite_batch_with_a_non_finite_loss_reads_as_divergence():
    with pytest.raises(PresdepError, match=r"step 7 is inf \(fit inf\).*student diverged"):
        require_finite_loss(torch.tensor(float("inf")), 7, torch.ones(2), {"fit": float("inf")})
    require_finite_loss(torch.tensor(0.5), 7, torch.tensor([float("nan")]), {})  # finite: passes


def test_weights_are_checked_before_a_checkpoint_and_before_the_adapter(
    tiny_model, silver_file, silver, tmp_path
):
    out = tmp_path / "ckpt"
    cfg = student_cfg(tiny_model, silver_file, out, train={"max_steps": 3, "save_steps": 2})
    with pytest.raises(PresdepError, match=r"1 of \d+ trained weight tensors hold NaN.*checkpoint"):
        train_student(cfg, silver=silver, callbacks=[PoisonAt(2)])
    assert not (out / CHECKPOINTS / "checkpoint-2" / MARKER).exists()

    out = tmp_path / "final"
    cfg = student_cfg(tiny_model, silver_file, out, train={"max_steps": 2, "save_steps": 50})
    with pytest.raises(PresdepError, match=rf"the student in {out / 'adapter'} is not saved"):
        train_student(cfg, silver=silver, callbacks=[PoisonAt(None)])
    assert not (out / "adapter").exists() and not (out / "provenance.json").exists()


def _checkpointed(tiny_model: str, silver_file: Path, silver: SilverSet, out: Path, **raw: Any):
    """Train to step 3 of 4 (a checkpoint at step 2), then crash."""
    cfg = student_cfg(tiny_model, silver_file, out, train={"max_steps": 4, "save_steps": 2}, **raw)
    with pytest.raises(RuntimeError, match="crash at step 3"):
        train_student(cfg, silver=silver, callbacks=[CrashAt(3)])
    ckpt = out / CHECKPOINTS / "checkpoint-2"
    assert (ckpt / MARKER).is_file()
    return cfg, ckpt


def test_a_checkpoint_corrupted_at_the_same_size_is_not_resumed(
    tiny_model, silver_file, silver, tmp_path
):
    cfg, ckpt = _checkpointed(tiny_model, silver_file, silver, tmp_path / "s")
    weights = ckpt / "adapter_model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-4:] = np.float32(np.nan).tobytes()  # the last value of the last tensor
    weights.write_bytes(bytes(data))
    with pytest.raises(PresdepError, match=rf"{weights} changed since it was saved.*delete {ckpt}"):
        train_student(cfg, silver=silver)
    # A marker from before sha256s were recorded: the NaN itself is found.
    marker = json.loads((ckpt / MARKER).read_text())
    del marker["sha256"]
    (ckpt / MARKER).write_text(json.dumps(marker))
    with pytest.raises(PresdepError, match=r"holds NaN or Infinity in 1 tensor"):
        train_student(cfg, silver=silver)
    assert not (tmp_path / "s" / "adapter").exists()


# --- 2: stale training inputs ---------------------------------------------------------------


def test_silver_labels_made_with_other_settings_are_refused(tiny_model, silver_file, tmp_path):
    cfg = student_cfg(tiny_model, silver_file, tmp_path / "s", silver={"seed": 5})
    with pytest.raises(ConfigError, match=r"silver\.seed: 0 in the file, 5 in the config"):
        train_student(cfg)
    cdf = student_cfg(
        tiny_model, silver_file, tmp_path / "c", silver={"calibration": {"kind": "cdf"}}
    )
    with pytest.raises(ConfigError, match=r"silver\.calibration: .*identity.* in the file"):
        train_student(cdf)
    assert not (tmp_path / "s" / "adapter").exists() and not (tmp_path / "c" / "adapter").exists()


def test_a_finished_student_is_rechecked_against_changed_labels(
    tiny_model, silver_file, silver, tmp_path
):
    out = tmp_path / "s"
    cfg = student_cfg(tiny_model, silver_file, out, train={"max_steps": 1})
    first = train_student(cfg, silver=silver)
    assert train_record(out)["training_data_sha256"]
    assert train_student(cfg, silver=silver).skipped
    changed = _with_scores(silver, lambda s: s + 1)
    with pytest.raises(
        ConfigError, match=r"holds a student of this config trained on other training data"
    ):
        train_student(cfg, silver=changed)
    again = train_student(cfg, silver=changed, restart=True)
    assert not again.skipped and again.global_step == first.global_step


# --- 4: the base model's weights ------------------------------------------------------------


def _reseed_base(folder: Path) -> None:
    """Other weights of the same shapes at the same path."""
    path = folder / "model.safetensors"
    tensors = load_file(str(path))
    name = next(k for k in sorted(tensors) if "mlp" in k)
    tensors[name] = tensors[name] * 0.5
    save_file(tensors, str(path), metadata={"format": "pt"})


def test_base_weights_replaced_at_the_same_path_are_refused(
    tiny_model, silver_file, silver, tmp_path
):
    base = tmp_path / "base"
    shutil.copytree(tiny_model, base)
    raw = {"student": grade_block(str(base))}
    out = tmp_path / "s"
    cfg, _ = _checkpointed(tiny_model, silver_file, silver, out, **raw)
    run = json.loads((out / CHECKPOINTS / "run.json").read_text())
    assert run["base_model"].startswith("files-sha256:")
    _reseed_base(base)
    with pytest.raises(
        ConfigError, match=r"checkpoints trained on another base model \(files-sha256:"
    ):
        train_student(cfg, silver=silver)
    done = train_student(cfg, silver=silver, restart=True)
    prov = train_record(out)
    assert (
        prov["base_model_fingerprint"]
        == json.loads((out / "provenance.json").read_text())["invocations"][-1][
            "base_model_fingerprint"
        ]
        != run["base_model"]
    )
    assert done.global_step == 4
    _reseed_base(base)
    with pytest.raises(
        ConfigError, match=r"holds a student of this config trained on another base"
    ):
        train_student(cfg, silver=silver)


def test_inputs_not_recorded_or_not_fingerprintable_are_not_compared():
    now = TrainingInputs("d1", "files-sha256:aa", "s.jsonl", "m")
    assert now.problem(None, None) is None and now.problem("d1", "files-sha256:aa") is None
    assert "other training data" in now.problem("d0", None)
    assert "another base model (files-sha256:bb;" in now.problem("d1", "files-sha256:bb")
    gone = TrainingInputs("d1", "unpinned:/gone/base", "s.jsonl", "/gone/base")
    assert gone.problem("d1", "files-sha256:bb") is None


def test_a_finished_student_whose_silver_file_is_gone_is_kept(
    tiny_model, silver_file, silver, tmp_path, caplog
):
    copy = tmp_path / "silver.jsonl"
    shutil.copy(silver_file, copy)
    out = tmp_path / "s"
    cfg = student_cfg(tiny_model, copy, out, train={"max_steps": 1})
    train_student(cfg)
    copy.unlink()
    with caplog.at_level(logging.INFO, logger="presentation_dependence.training"):
        assert train_student(cfg).skipped
    assert "cannot be rechecked" in caplog.text and "nothing to train" in caplog.text


# --- 8: another command's run folder --------------------------------------------------------


@pytest.mark.parametrize("kind", ["run", "judge"])
def test_another_commands_run_folder_is_refused_without_advising_restart(
    tiny_model, silver_file, silver, tmp_path, kind
):
    out = tmp_path / kind
    out.mkdir()
    if kind == "run":
        (out / "per_query_results").mkdir()
        (out / "per_query_results" / "q1.json").write_text("{}")
        (out / "resolved_config.yaml").write_text("reranker:\n  reranker_class: X\n")
    else:
        (out / "resolved_config.yaml").write_text("judge:\n  judge_class: X\ndata: {}\n")
    (out / "provenance.json").write_text('{"invocations": []}')
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    cfg = student_cfg(tiny_model, silver_file, out)
    for restart in (False, True):
        with pytest.raises(ConfigError) as e:
            train_student(cfg, silver=silver, restart=restart)
        msg = str(e.value)
        assert f"{out} is the run folder of another command" in msg
        assert "choose another output_dir" in msg and "--restart" not in msg.split("Fix:")[1]
    assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


# --- 13: one training process per folder ----------------------------------------------------


def test_a_folder_another_process_trains_is_refused_or_waited_for(
    tiny_model, silver_file, silver, tmp_path, caplog
):
    out = tmp_path / "s"
    cfg = student_cfg(tiny_model, silver_file, out, train={"max_steps": 1})
    with RunFolder(out).claim(TRAIN_CLAIM) as held:
        assert held
        with pytest.raises(PresdepError) as e:
            train_student(cfg, silver=silver)
    msg = str(e.value)
    assert f"{out} is being trained by process {os.getpid()} on " in msg and "--wait" in msg
    assert not (out / "adapter").exists()

    released = threading.Event()

    def hold() -> None:
        with RunFolder(out).claim(TRAIN_CLAIM):
            started.set()
            time.sleep(1.0)
        released.set()

    started = threading.Event()
    holder = threading.Thread(target=hold)
    holder.start()
    started.wait(5)
    with caplog.at_level(logging.INFO, logger="presentation_dependence.training"):
        done = train_student(cfg, silver=silver, wait=True)
    holder.join()
    assert released.is_set() and done.global_step == 1 and (out / "adapter").is_dir()
    assert "waiting for it to finish" in caplog.text
