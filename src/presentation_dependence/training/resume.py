"""Stopping and resuming a training run: checkpoints, their completeness, the run's identity.

``<output_dir>`` is a run folder (:class:`~presentation_dependence.runners.run_folder.RunFolder`):
its ``resolved_config.yaml`` is frozen when training starts, ``provenance.json`` gets one
invocation record per finished training and ``run.log`` every invocation's log.
``<output_dir>/checkpoints/`` holds ``run.json`` (the fingerprints of the training data and the
base model the checkpoints are made from: :mod:`.inputs`) and the transformers ``Trainer``'s
``checkpoint-<step>/``
folders (adapter, optimizer, scheduler, RNG states, ``trainer_state.json``). The Trainer writes
a checkpoint file by file into its final folder, so a kill mid-save leaves a partial folder
under the name its ``get_last_checkpoint`` would pick. Here a checkpoint counts only once
:class:`CheckpointMarker` has fsynced its files and written ``checkpoint_complete.json``
(atomically, listing every file's size and sha256); partial folders are deleted before a
resume, and the rotation to ``train.save_total_limit`` runs only after the new checkpoint is
complete, so a kill never leaves fewer complete checkpoints than before. The checkpoint a run
resumes from must still match its sha256s and hold finite weights (:func:`check_resumable`).

A *finished* ``output_dir`` has ``adapter/`` (``model/``; written last, after ``provenance.json``).
Rerunning the same config on the same inputs does nothing; a different config is refused with
the diff (for a finished folder, checkpoints or a progress log alike), as are a finished student
and checkpoints of other training data or another base model. ``restart`` (``--restart``)
discards both and trains from scratch.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.runners.run_folder import (
    PROVENANCE,
    RESOLVED_CONFIG,
    RunFolder,
    invocations,
)
from presentation_dependence.training.config import TrainingConfig, training_config_from_raw
from presentation_dependence.training.finite import non_finite_tensors
from presentation_dependence.training.inputs import TrainingInputs, data_fingerprint
from presentation_dependence.training.judge_config import (
    JudgeTrainingConfig,
    judge_training_config_from_raw,
)
from presentation_dependence.training.progress import TRAIN_LOG
from presentation_dependence.training.reward_config import (
    RewardModelConfig,
    reward_model_config_from_raw,
)

__all__ = [
    "CHECKPOINTS",
    "CheckpointMarker",
    "check_checkpoints",
    "check_finished",
    "check_resumable",
    "checkpoint_state",
    "data_fingerprint",
    "discard",
    "finished_provenance",
    "freeze",
    "is_complete",
    "latest_checkpoint",
    "load_adapter_weights",
    "mark_complete",
    "prepare_checkpoints",
    "prune",
    "resume_point",
    "train_record",
]

log = logging.getLogger(__name__)

CHECKPOINTS = "checkpoints"
RUN_FILE = "run.json"
MARKER = "checkpoint_complete.json"
# Keys that change how a run is watched or stored, not the adapter it trains.
OPERATIONAL_KEYS = (
    "description",
    "output_dir",
    "train.logging_steps",
    "train.save_steps",
    "train.save_total_limit",
    "train.keep_snapshots",
    "train.num_threads",
    "selection",  # how a student is chosen among others (select_lambda), not how it trains
    "splits.heldout",  # what λ selection and the curve score on, not what the student sees
)
_STEP = re.compile(r"^checkpoint-(\d+)$")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


AnyTrainingConfig = TrainingConfig | JudgeTrainingConfig  # a student's or a judge's
FolderConfig = AnyTrainingConfig | RewardModelConfig  # ... or a reward model's (trl)


def freeze(out: Path, cfg: FolderConfig) -> None:
    """Freeze ``cfg`` into ``out/resolved_config.yaml`` (the shared run folder): a folder that
    holds a student, checkpoints or a progress log of another config is refused with the diff.
    :data:`OPERATIONAL_KEYS` are not compared; keys a folder lacks take their defaults."""
    from_raw: Any = training_config_from_raw
    if isinstance(cfg, JudgeTrainingConfig):
        from_raw = judge_training_config_from_raw
    elif isinstance(cfg, RewardModelConfig):
        from_raw = reward_model_config_from_raw
    RunFolder(out).freeze_config(
        cfg,
        from_raw=from_raw,
        ignore=OPERATIONAL_KEYS,
        fix="Rerun with the config it was made with, point output_dir elsewhere, or pass "
        "--restart (train_student(restart=True)) to discard it.",
    )


def train_record(out: Path) -> dict[str, Any] | None:
    """The provenance record of the student finished in ``out`` (the last training invocation
    of its ``provenance.json``: steps, losses, log history), or None when none is finished."""
    prov = _read_json(out / PROVENANCE)
    finished = (out / "adapter").is_dir() or (out / "model").is_dir()  # renamed in last
    return dict(invocations(prov)[-1]) if finished and isinstance(prov, dict) else None


def finished_provenance(out: Path, cfg: AnyTrainingConfig) -> dict[str, Any] | None:
    """The provenance of the student finished from ``cfg`` in ``out`` (logged: nothing to
    train), or None when ``out`` is unfinished; another config's folder is refused."""
    freeze(out, cfg)
    prov = train_record(out)
    if prov is None:
        return None
    shutil.rmtree(out / CHECKPOINTS, ignore_errors=True)  # left by a kill after the save
    return prov


def check_finished(out: Path, prov: dict[str, Any], inputs: TrainingInputs) -> None:
    """Refuse the finished student of ``out`` (its provenance ``prov``) when it was trained on
    other inputs than ``inputs``."""
    problem = inputs.problem(prov.get("training_data_sha256"), prov.get("base_model_fingerprint"))
    if problem is not None:
        raise ConfigError(
            f"{out} holds a student of this config trained on {problem}. Fix: restore the "
            "inputs it was trained on, or pass --restart to retrain it on these"
        )


def discard(out: Path) -> None:
    """Remove a previous run's student, checkpoints and progress log (``--restart``).

    The adapter goes first, so a kill midway never leaves a folder that looks finished."""
    shutil.rmtree(out / "adapter", ignore_errors=True)
    shutil.rmtree(out / ".adapter.tmp", ignore_errors=True)
    for name in (PROVENANCE, "reranker.yaml", "judge.yaml", RESOLVED_CONFIG, TRAIN_LOG):
        (out / name).unlink(missing_ok=True)
    shutil.rmtree(out / CHECKPOINTS, ignore_errors=True)


# --- checkpoints ------------------------------------------------------------------------------


def _step(path: Path) -> int | None:
    m = _STEP.match(path.name)
    return int(m.group(1)) if m and path.is_dir() else None


def is_complete(ckpt: Path) -> bool:
    """A checkpoint folder whose marker is valid and whose files all have their marked sizes."""
    marker = _read_json(ckpt / MARKER)
    if not isinstance(marker, dict) or marker.get("global_step") != _step(ckpt):
        return False
    files = marker.get("files")
    if not isinstance(files, dict) or "trainer_state.json" not in files:
        return False
    for name, size in files.items():
        try:
            if (ckpt / name).stat().st_size != size:
                return False
        except OSError:
            return False
    return True


def _entries(folder: Path) -> list[tuple[int, Path]]:
    if not folder.is_dir():
        return []
    found = [(_step(p), p) for p in folder.iterdir()]
    return sorted((s, p) for s, p in found if s is not None)


def latest_checkpoint(folder: Path) -> Path | None:
    """The complete checkpoint of the highest step in ``folder``, or None."""
    complete = [p for _, p in _entries(folder) if is_complete(p)]
    return complete[-1] if complete else None


def checkpoint_state(ckpt: Path) -> dict[str, Any]:
    """The Trainer's ``trainer_state.json`` of a checkpoint."""
    state = _read_json(ckpt / "trainer_state.json")
    if not isinstance(state, dict):
        raise ConfigError(f"{ckpt}/trainer_state.json is unreadable; delete {ckpt} and rerun")
    return state


def _sha256(path: Path) -> str:
    """sha256 of a file as it is on disk now (never a cached value)."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def mark_complete(ckpt: Path, step: int) -> None:
    """fsync every file of ``ckpt``, then write its marker atomically."""
    files: dict[str, int] = {}
    sha256: dict[str, str] = {}
    for f in sorted(ckpt.rglob("*")):
        if f.is_file() and f.name != MARKER:
            with f.open("rb") as fh:
                os.fsync(fh.fileno())
            sha256[f.relative_to(ckpt).as_posix()] = _sha256(f)
            files[f.relative_to(ckpt).as_posix()] = f.stat().st_size
    marker = {"global_step": step, "files": files, "sha256": sha256}
    atomic_write_text(ckpt / MARKER, json.dumps(marker) + "\n")


def _remove(ckpt: Path) -> None:
    (ckpt / MARKER).unlink(missing_ok=True)  # first: a half-deleted folder is never complete
    shutil.rmtree(ckpt, ignore_errors=True)


def prune(folder: Path, keep: int | None) -> None:
    """Delete every partial checkpoint and all but the newest ``keep`` complete ones (None: keep
    every complete one)."""
    entries = _entries(folder)
    complete = [p for _, p in entries if is_complete(p)]
    for p in (p for _, p in entries if p not in complete):
        log.info("deleting the partial checkpoint %s (a save that did not finish)", p)
        _remove(p)
    if keep is not None:
        for p in complete[: max(len(complete) - keep, 0)]:
            _remove(p)


def check_checkpoints(out: Path, cfg: FolderConfig, inputs: TrainingInputs) -> None:
    """Refuse checkpoints in ``out`` made from other training data or another base model
    (their config is the folder's, checked by :func:`freeze`)."""
    folder = out / CHECKPOINTS
    if latest_checkpoint(folder) is None:
        return  # nothing to lose: a new run starts over
    run = _read_json(folder / RUN_FILE)
    data = run.get("training_data") if isinstance(run, dict) else None
    if data is None:
        raise ConfigError(
            f"{folder}/{RUN_FILE} is unreadable: the checkpoints cannot be matched to their "
            "training data. Fix: pass --restart to discard the checkpoints"
        )
    problem = inputs.problem(data, run.get("base_model"))
    if problem is not None:
        raise ConfigError(
            f"{folder} holds checkpoints trained on {problem}. Fix: restore the inputs they "
            "were trained on, or pass --restart to discard the checkpoints"
        )


def prepare_checkpoints(
    out: Path, cfg: FolderConfig, inputs: TrainingInputs, restart: bool
) -> None:
    """Main process, before training: discard (``restart``) and freeze the config anew, drop
    partial checkpoints, and record the inputs' fingerprints in ``checkpoints/run.json``."""
    if restart:
        log.info("--restart: discarding the student and checkpoints in %s", out)
        discard(out)
        freeze(out, cfg)
    folder = out / CHECKPOINTS
    prune(folder, keep=None)
    run = {"training_data": inputs.data, "base_model": inputs.base}
    atomic_write_text(folder / RUN_FILE, json.dumps(run, indent=1, default=str) + "\n")


def check_resumable(ckpt: Path) -> None:
    """Refuse to resume from ``ckpt`` when a file no longer has the sha256 its marker recorded
    (bytes changed at the same size) or its weights hold NaN or Infinity."""
    from safetensors.torch import load_file

    fix = f"Fix: delete {ckpt} to resume from the checkpoint before it, or pass --restart"
    recorded = (_read_json(ckpt / MARKER) or {}).get("sha256") or {}
    for name, digest in sorted(recorded.items()):
        if not (ckpt / name).is_file() or _sha256(ckpt / name) != digest:
            raise PresdepError(f"{ckpt / name} changed since it was saved. {fix}")
    for name in ("adapter_model.safetensors", "model.safetensors"):
        if (ckpt / name).is_file():
            try:
                bad = non_finite_tensors(load_file(str(ckpt / name)))
            except Exception as e:  # safetensors raises its own error on a damaged header
                raise PresdepError(f"{ckpt / name} is unreadable ({e}). {fix}") from None
            if bad:
                raise PresdepError(
                    f"{ckpt / name} holds NaN or Infinity in {len(bad)} tensor(s) (e.g. "
                    f"{bad[0]}): resuming would train on. {fix}"
                )


def load_adapter_weights(model: Any, ckpt: Path) -> None:
    """Put the LoRA weights of checkpoint ``ckpt`` into the peft ``model``."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    set_peft_model_state_dict(model, load_file(str(ckpt / "adapter_model.safetensors")))


def resume_point(out: Path, pause_at: int | None) -> tuple[Path | None, dict[str, Any], int | None]:
    """The checkpoint to resume from (checked), its trainer state and its step."""
    checkpoint = latest_checkpoint(out / CHECKPOINTS)
    if checkpoint is not None:
        check_resumable(checkpoint)
    ckpt_state = checkpoint_state(checkpoint) if checkpoint is not None else {}
    resumed_step = int(ckpt_state["global_step"]) if checkpoint is not None else None
    if pause_at is not None and resumed_step is not None and resumed_step >= pause_at:
        raise ConfigError(
            f"{checkpoint} is past step {pause_at} and no snapshot of step {pause_at} is kept: "
            "the pause cannot be reproduced. Fix: train on without pause_at, or --restart"
        )
    return checkpoint, ckpt_state, resumed_step


class CheckpointMarker(TrainerCallback):
    """After each Trainer save: wait for every process, mark the checkpoint complete, rotate."""

    def __init__(self, keep: int) -> None:
        self.keep = keep

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if args.world_size > 1:
            from accelerate import PartialState

            PartialState().wait_for_everyone()  # every rank's RNG file is written
        if state.is_world_process_zero:
            folder = Path(args.output_dir)
            mark_complete(folder / f"checkpoint-{state.global_step}", state.global_step)
            prune(folder, self.keep)
