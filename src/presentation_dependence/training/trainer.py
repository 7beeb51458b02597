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
folder (:mod:`.claim`). That run loop is :mod:`.run_loop`'s, shared with trained judges
(:mod:`.judge_trainer`).

The Trainer runs on accelerate: ``accelerate launch scripts/train/train_student.py CONFIG``
trains data-parallel on every visible GPU with no code change (each process takes its share
of the queries; only the main process writes). On GPU the base runs in bfloat16 with autocast
and gradient checkpointing; on CPU in bfloat16 on every processor
(``TRAINING_CPU_DTYPE``), without autocast and without checkpointing, each set explicitly.
``continue_in`` (``presdep train --continue-in float32``) finishes a resumed run in another
dtype, e.g. on a CPU that only emulates bfloat16: the frozen config is unchanged, and the
resume event and the provenance record the dtype and the step it took over at.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback

from presentation_dependence.errors import ConfigError
from presentation_dependence.training.claim import refuse_foreign_folder
from presentation_dependence.training.collate import ReadoutCollator, SilverDataset
from presentation_dependence.training.config import TrainingConfig
from presentation_dependence.training.debias import ips_weights, propensities_from_psi
from presentation_dependence.training.early_stop import student_early_stopping
from presentation_dependence.training.inputs import TrainingInputs, training_inputs
from presentation_dependence.training.model import Student, load_student
from presentation_dependence.training.readout_trainer import ReadoutTrainer, snapshot_dir
from presentation_dependence.training.resume import (
    check_checkpoints,
    check_finished,
    finished_provenance,
)
from presentation_dependence.training.run_loop import (
    RunOutcome,
    RunStart,
    build_trainer,
    check_continue_in,
    claimed_run,
    finish_run,
    skipped_outcome,
    start_run,
)
from presentation_dependence.training.save import student_provenance
from presentation_dependence.training.silver import SilverSet, read_silver
from presentation_dependence.training.splits import check_disjoint, load_split

__all__ = ["TrainOutcome", "train_student"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class TrainOutcome(RunOutcome):
    """Where the student went and how training ended (:class:`~.run_loop.RunOutcome`), with the
    student and its Trainer (None when ``skipped``: the folder held this config's finished
    student)."""

    student: Student | None
    trainer: ReadoutTrainer | None


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
    continue_in: str | None = None,
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

    ``continue_in``: a dtype (``float32``, ``bfloat16``, ``float16``) to resume in instead of
    ``student.dtype``'s; refused without a checkpoint to resume from (a fresh run names its
    dtype in the config) and with ``restart``.
    """
    out = cfg.resolved_output_dir
    if pause_at is not None and not cfg.train.keep_snapshots:
        raise ConfigError(
            f"{cfg.id}: pausing at step {pause_at} needs the step's snapshot. "
            "Fix: set train.keep_snapshots: true"
        )
    refuse_foreign_folder(out)
    if continue_in is not None:
        check_continue_in(out, continue_in, restart)
    return claimed_run(
        out,
        wait=wait,
        restart=restart,
        done=lambda main: _done(cfg, silver, student, pause_at, main),
        train=lambda: _train(cfg, argv, silver, student, restart, callbacks, pause_at, continue_in),
    )


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
    make = partial(TrainOutcome, student=None, trainer=None)
    return skipped_outcome(make, out, prov, snap, pause_at, main)


def _train(
    cfg: TrainingConfig,
    argv: Sequence[str] | None,
    silver: SilverSet | None,
    student: Student | None,
    restart: bool,
    callbacks: Sequence[TrainerCallback],
    pause_at: int | None,
    continue_in: str | None,
) -> TrainOutcome:
    silver, inputs, student = _inputs(cfg, silver, student, restart, continue_in)
    stopping = student_early_stopping(cfg)
    callbacks = [*([stopping] if stopping is not None else []), *callbacks]
    slot_weights = _slot_weights(cfg)
    dataset = _dataset(cfg, silver)
    start = start_run(
        cfg, student, inputs, restart=restart, pause_at=pause_at, continue_in=continue_in
    )
    trainer = build_trainer(
        ReadoutTrainer,
        start,
        student,
        dataset,
        ReadoutCollator(student.builder, student.pad_token_id),
        callbacks,
        grade_token_ids=student.grade_token_ids,
        loss_options=cfg.loss,
        slot_weights=None if slot_weights is None else slot_weights.tolist(),
    )
    _announce(cfg, dataset, student, start)
    provenance = partial(
        student_provenance,
        cfg,
        argv,
        silver,
        inputs,
        start.args,
        student,
        slot_weights,
        continued_in=continue_in,
    )
    make = partial(TrainOutcome, student=student, trainer=trainer)
    return finish_run(make, start, trainer, student, "student", provenance, stopping)


def _inputs(
    cfg: TrainingConfig,
    silver: SilverSet | None,
    student: Student | None,
    restart: bool,
    continue_in: str | None = None,
) -> tuple[SilverSet, TrainingInputs, Student]:
    """The silver labels (checked against the test split), their fingerprint (checked against
    the folder's checkpoints unless ``restart``) and the student (loaded if not given, in
    ``continue_in`` when given)."""
    if cfg.train.num_threads:
        torch.set_num_threads(cfg.train.num_threads)
    silver = silver if silver is not None else read_silver(cfg.silver.path)
    _check_test_split(cfg, silver)
    inputs = training_inputs(cfg, silver, student)
    if not restart:
        check_checkpoints(cfg.resolved_output_dir, cfg, inputs)
    if student is None:
        options = cfg.student_options
        if continue_in is not None:
            options = dataclasses.replace(options, dtype=continue_in)
        student = load_student(
            options,
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
    cfg: TrainingConfig, dataset: SilverDataset, student: Student, start: RunStart
) -> None:
    """Log what trains."""
    log.info(
        "training %s (%s): %d queries, T=%d, %d view(s), λ=%g, %s, world size %d%s",
        cfg.id,
        cfg.variant,
        len(dataset),
        cfg.teacher_orders,
        cfg.views,
        cfg.lambda_,
        student.describe()["dtype"],
        start.args.world_size,
        f", resuming from {start.checkpoint}" if start.checkpoint else "",
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
