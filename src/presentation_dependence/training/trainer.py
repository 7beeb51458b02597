"""Train a student: transformers ``Trainer`` with the readout loss, LoRA via peft, accelerate-ready.

:func:`train_student` runs one training config end to end: read the silver labels, refuse
training queries that are test queries, load the student (base + LoRA), train with
:class:`~.readout_trainer.ReadoutTrainer`, and save ``<output_dir>/``:

* ``adapter/`` — the LoRA adapter (``adapter_config.json``, ``adapter_model.safetensors``);
* ``resolved_config.yaml`` — the training config as it ran;
* ``reranker.yaml`` — the reranker block that serves the student (student block +
  ``adapter_path``), ready for an experiment config or ``--override reranker.adapter_path=...``;
* ``provenance.json`` — packages, git, base model revision and fingerprint, silver file and
  teacher, the training data's fingerprint, seeds, parameter counts, world size, the loss log
  and the final loss;
* ``train_log.jsonl`` — the progress, one JSON line per logging step (:mod:`.progress`).

``adapter/`` is written last (:mod:`.save`): a folder that has it is finished, and rerunning
the same config on the same inputs (:mod:`.inputs`: the silver labels and the base weights, by
content) does nothing. Until then the Trainer writes a checkpoint every ``train.save_steps``
steps to ``checkpoints/`` and a rerun resumes from the latest complete one, to an adapter equal
to an uninterrupted run's (:mod:`.resume`; ``restart=True`` discards them); they are deleted
once the student is saved. A non-finite loss stops training and no non-finite weight is saved
(:mod:`.finite`); one process trains a folder at a time, and never another command's run
folder (:mod:`.claim`).

The Trainer runs on accelerate: ``accelerate launch scripts/train/train_student.py CONFIG``
trains data-parallel on every visible GPU with no code change (each process takes its share
of the queries; only the main process writes). On GPU the base runs in bfloat16 with autocast
and gradient checkpointing; on CPU in bfloat16 on every processor
(``TRAINING_CPU_DTYPE``), without autocast and without checkpointing, each set explicitly.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from accelerate import PartialState
from transformers import PrinterCallback, TrainerCallback

from presentation_dependence.errors import ConfigError
from presentation_dependence.runners.run_folder import RunFolder
from presentation_dependence.training.claim import claim_training, refuse_foreign_folder
from presentation_dependence.training.collate import ReadoutCollator, SilverDataset
from presentation_dependence.training.config import TrainingConfig
from presentation_dependence.training.debias import ips_weights, propensities_from_psi
from presentation_dependence.training.inputs import TrainingInputs, training_inputs
from presentation_dependence.training.model import Student, load_student
from presentation_dependence.training.progress import TRAIN_LOG, run_loss, start_log
from presentation_dependence.training.readout_trainer import (
    ReadoutTrainer,
    run_callbacks,
    snapshot_dir,
    training_arguments,
)
from presentation_dependence.training.resume import (
    CHECKPOINTS,
    check_checkpoints,
    check_finished,
    finished_provenance,
    load_adapter_weights,
    prepare_checkpoints,
    resume_point,
)
from presentation_dependence.training.save import save_student, student_provenance
from presentation_dependence.training.silver import SilverSet, read_silver
from presentation_dependence.training.splits import check_disjoint, load_split

__all__ = ["TrainOutcome", "run_trainer", "train_student"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainOutcome:
    """Where the student went and how training ended.

    ``skipped``: the folder held this config's finished student and nothing ran (``student``
    and ``trainer`` are None). ``resumed_from_step``: the checkpoint step training resumed at.
    ``train_loss`` is the mean loss over every step of the run, resumed or not.
    ``is_main_process``: the Trainer's world process zero (the launcher's ``RANK`` 0 when
    nothing ran). ``paused``: training stopped at the ``pause_at`` step (now or in an earlier
    call); ``adapter_dir`` is that step's snapshot and nothing is saved as finished.
    """

    output_dir: Path
    adapter_dir: Path
    global_step: int
    train_loss: float
    log_history: list[dict[str, Any]]
    student: Student | None
    trainer: ReadoutTrainer | None
    is_main_process: bool
    skipped: bool = False
    resumed_from_step: int | None = None
    paused: bool = False


def train_student(
    cfg: TrainingConfig,
    *,
    argv: Sequence[str] | None = None,
    silver: SilverSet | None = None,
    student: Student | None = None,
    restart: bool = False,
    callbacks: Sequence[TrainerCallback] = (),
    pause_at: int | None = None,
    wait: bool = False,
) -> TrainOutcome:
    """Train the student ``cfg`` describes; save adapter, config and provenance (main process).

    ``silver`` and ``student`` default to ``cfg.silver.path`` and a fresh :func:`load_student`.
    A finished ``output_dir`` of the same config and inputs (:mod:`.inputs`) is left as it is;
    checkpoints of the same config and inputs are resumed from; either of another config or
    other inputs is refused unless ``restart`` (which discards them). Another command's run
    folder is refused, ``restart`` or not; a folder another process trains is refused, or
    with ``wait`` waited for (:mod:`.claim`). ``callbacks`` are added to the Trainer's, after
    this module's.

    ``pause_at``: stop after that step with a checkpoint, the schedule still the full run's
    (a rerun without it trains on to the end, as after a kill); the outcome's ``adapter_dir``
    is the step's snapshot, also when the run had paused or finished before (which needs
    ``train.keep_snapshots``).
    """
    out = cfg.resolved_output_dir
    main = int(os.environ.get("RANK", "0")) == 0
    if pause_at is not None and not cfg.train.keep_snapshots:
        raise ConfigError(
            f"{cfg.id}: pausing at step {pause_at} needs the step's snapshot. "
            "Fix: set train.keep_snapshots: true"
        )
    refuse_foreign_folder(out)
    with claim_training(out, wait=wait) if main else contextlib.nullcontext():
        done = None if restart else _done(cfg, silver, student, pause_at, main)
        if done is not None:
            return done
        with RunFolder(out).logging_to_file() if main else contextlib.nullcontext():
            return _train(cfg, argv, silver, student, restart, callbacks, pause_at)


def _done(
    cfg: TrainingConfig,
    silver: SilverSet | None,
    student: Student | None,
    pause_at: int | None,
    main: bool,
) -> TrainOutcome | None:
    """The outcome of a folder that holds ``cfg``'s finished student (or the snapshot
    ``pause_at`` asks for) made from today's inputs; None when there is training to do."""
    out = cfg.resolved_output_dir
    snap = None if pause_at is None else snapshot_dir(out, pause_at)
    prov = finished_provenance(out, cfg)  # refuses another config before anything loads
    if prov is None and (snap is None or not snap.is_dir()):
        return None
    if snap is not None and not snap.is_dir():
        raise ConfigError(
            f"{out} holds a finished student without a snapshot of step {pause_at}. "
            f"Fix: pause at a multiple of train.save_steps ({cfg.train.save_steps})"
        )
    if silver is None and not Path(cfg.silver.path).is_file():
        log.warning("%s is gone: the inputs of %s cannot be rechecked", cfg.silver.path, out)
    else:
        inputs = training_inputs(cfg, silver or read_silver(cfg.silver.path), student)
        if prov is not None:
            check_finished(out, prov, inputs)
        else:
            check_checkpoints(out, cfg, inputs)  # a paused run's
    if prov is not None:
        log.info(
            "%s already holds the student of this config: nothing to train (--restart, "
            "train_student(restart=True), retrains it)",
            out,
        )
    prov = prov or {}
    return TrainOutcome(
        output_dir=out,
        adapter_dir=snap if snap is not None else out / "adapter",
        global_step=int(prov.get("global_step", pause_at or 0)),
        train_loss=float(prov.get("train_loss", float("nan"))),
        log_history=list(prov.get("log_history", [])),
        student=None,
        trainer=None,
        is_main_process=main,
        skipped=True,
        paused=snap is not None and not prov,
    )


def _train(
    cfg: TrainingConfig,
    argv: Sequence[str] | None,
    silver: SilverSet | None,
    student: Student | None,
    restart: bool,
    callbacks: Sequence[TrainerCallback],
    pause_at: int | None,
) -> TrainOutcome:
    out = cfg.resolved_output_dir
    silver, inputs, student = _inputs(cfg, silver, student, restart)
    slot_weights = _slot_weights(cfg)
    dataset = _dataset(cfg, silver)
    args = training_arguments(cfg, student, out / CHECKPOINTS)
    if PartialState().is_main_process:
        prepare_checkpoints(out, cfg, inputs, restart)
    PartialState().wait_for_everyone()
    checkpoint, ckpt_state, resumed_step = resume_point(out, pause_at)
    trainer = _trainer(cfg, student, dataset, args, slot_weights, pause_at, callbacks)
    _announce(cfg, dataset, student, args, checkpoint, resumed_step)
    t0 = time.perf_counter()
    history, global_step = run_trainer(trainer, student.model, checkpoint, ckpt_state, resumed_step)
    seconds = time.perf_counter() - t0
    train_loss = run_loss(history)
    paused = pause_at is not None and global_step < int(trainer.state.max_steps)
    adapter = snapshot_dir(out, global_step) if paused else out / "adapter"
    if paused:
        log.info("paused %s at step %d of %d", cfg.id, global_step, trainer.state.max_steps)
    elif trainer.is_world_process_zero():
        run = {
            "global_step": global_step,
            "train_loss": train_loss,
            "resumed_from_step": resumed_step,
            "seconds": seconds,
            "log_history": history,
        }
        prov = student_provenance(cfg, argv, silver, inputs, args, student, slot_weights, run)
        adapter = save_student(cfg, prov, trainer, out, student.tokenizer)
        log.info("saved the student to %s (%d steps, %.1f s)", out, global_step, seconds)
    trainer.accelerator.wait_for_everyone()
    return TrainOutcome(
        output_dir=out,
        adapter_dir=adapter,
        global_step=global_step,
        train_loss=train_loss,
        log_history=history,
        student=student,
        trainer=trainer,
        is_main_process=bool(trainer.is_world_process_zero()),
        resumed_from_step=resumed_step,
        paused=paused,
    )


def _inputs(
    cfg: TrainingConfig, silver: SilverSet | None, student: Student | None, restart: bool
) -> tuple[SilverSet, TrainingInputs, Student]:
    """The silver labels (checked against the test split), their fingerprint (checked against
    the folder's checkpoints unless ``restart``) and the student (loaded if not given)."""
    if cfg.train.num_threads:
        torch.set_num_threads(cfg.train.num_threads)
    silver = silver if silver is not None else read_silver(cfg.silver.path)
    _check_test_split(cfg, silver)
    inputs = training_inputs(cfg, silver, student)
    if not restart:
        check_checkpoints(cfg.resolved_output_dir, cfg, inputs)
    if student is None:
        student = load_student(
            cfg.student_options,
            cfg.lora,
            reranker_class=cfg.student_class,
            seed=cfg.seed,
            finetune=cfg.finetune,
        )
    return silver, inputs, student


def _dataset(cfg: TrainingConfig, silver: SilverSet) -> SilverDataset:
    """The training queries with the config's teacher orders and views."""
    return SilverDataset(
        silver.queries,
        teacher_orders=cfg.teacher_orders,
        views=cfg.views,
        view_orders=cfg.view_orders,
        seed=cfg.seed,
        max_candidates=cfg.student_options.chunk_size,
    )


def _announce(
    cfg: TrainingConfig,
    dataset: SilverDataset,
    student: Student,
    args: Any,
    checkpoint: Path | None,
    resumed_step: int | None,
) -> None:
    """Open the progress log (main process) and log what trains."""
    if PartialState().is_main_process:
        start_log(
            cfg.resolved_output_dir / TRAIN_LOG,
            resumed_step,
            checkpoint.name if checkpoint else None,
        )
    log.info(
        "training %s (%s): %d queries, T=%d, %d view(s), λ=%g, %s, world size %d%s",
        cfg.id,
        cfg.variant,
        len(dataset),
        cfg.teacher_orders,
        cfg.views,
        cfg.lambda_,
        student.describe()["dtype"],
        args.world_size,
        f", resuming from {checkpoint}" if checkpoint else "",
    )


def _check_test_split(cfg: TrainingConfig, silver: SilverSet) -> None:
    """Refuse training queries that overlap the config's test queries."""
    if cfg.splits.test:
        check_disjoint(
            "training (silver) queries",
            [(q.source, q.qid, q.query) for q in silver.queries],
            "test",
            load_split(cfg.splits.test, "splits.test"),
        )


def _slot_weights(cfg: TrainingConfig) -> Any:
    """DebiasFirst's per-slot inverse-propensity weights (None for the other variants)."""
    if cfg.variant != "debias_first":
        return None
    weights = ips_weights(propensities_from_psi(cfg.propensity.psi_dir), cfg.propensity.clip)
    log.info("DebiasFirst slot weights: %s", " ".join(f"{w:.2f}" for w in weights))
    return weights


def run_trainer(
    trainer: ReadoutTrainer,
    model: Any,
    checkpoint: Path | None,
    ckpt_state: dict[str, Any],
    resumed_step: int | None,
) -> tuple[list[dict[str, Any]], int]:
    """Train (resuming from ``checkpoint``); the log history and the final global step
    (``model``: the peft model whose adapter a checkpoint of the finished run restores)."""
    if (
        checkpoint is not None
        and resumed_step is not None
        and (resumed_step >= int(ckpt_state.get("max_steps") or 0) > 0)
    ):
        # Training had ended in that checkpoint (the kill came during the final save); the
        # Trainer would resume into one step too many when max_steps ends mid-epoch.
        log.info(
            "training had ended at step %d in %s: saving its adapter", resumed_step, checkpoint
        )
        load_adapter_weights(model, checkpoint)
        return list(ckpt_state.get("log_history", [])), resumed_step
    trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    return list(trainer.state.log_history), int(trainer.state.global_step)


def _trainer(
    cfg: TrainingConfig,
    student: Student,
    dataset: SilverDataset,
    args: Any,
    slot_weights: Any,
    pause_at: int | None,
    callbacks: Sequence[TrainerCallback],
) -> ReadoutTrainer:
    """The Trainer with the run folder's callbacks (views per epoch, checkpoint markers,
    snapshots, the progress log, the pause, the heap trim) and the caller's."""
    trainer = ReadoutTrainer(
        model=student.model,
        args=args,
        train_dataset=dataset,
        data_collator=ReadoutCollator(student.builder, student.pad_token_id),
        callbacks=run_callbacks(cfg, dataset, pause_at, callbacks),
        grade_token_ids=student.grade_token_ids,
        lambda_=cfg.lambda_,
        use_logits_to_keep=student.use_logits_to_keep,
        loss_options=cfg.loss,
        slot_weights=None if slot_weights is None else slot_weights.tolist(),
    )
    trainer.remove_callback(PrinterCallback)  # ProgressLog logs instead of printing
    return trainer
