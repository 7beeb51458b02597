"""The run loop a student's and a trained judge's training share (:mod:`.trainer`, :mod:`.judge_trainer`).

:func:`claimed_run` claims the run folder (:mod:`.claim`) and lets a finished folder or a paused
snapshot answer before anything trains (:func:`skipped_outcome`); :func:`start_run` prepares the
folder's checkpoints, finds the point training resumes from (:mod:`.resume`) and opens the
progress log; :func:`build_trainer` makes the ``Trainer`` with the run folder's callbacks; and
:func:`finish_run` trains (:func:`run_trainer`), saves the trained weights unless the run paused
(:func:`~.save.save_student`, world process zero only) and says how the run ended
(:class:`RunOutcome`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from accelerate import PartialState
from transformers import PrinterCallback, TrainerCallback

from presentation_dependence.errors import ConfigError
from presentation_dependence.readout.options import check_dtype
from presentation_dependence.runners.run_folder import RunFolder
from presentation_dependence.training.claim import claim_training
from presentation_dependence.training.collate import ViewsDataset
from presentation_dependence.training.inputs import TrainingInputs
from presentation_dependence.training.model import TrainableModel
from presentation_dependence.training.progress import TRAIN_LOG, run_loss, start_log
from presentation_dependence.training.readout_trainer import (
    ReadoutTrainer,
    run_callbacks,
    snapshot_dir,
    training_arguments,
)
from presentation_dependence.training.resume import (
    CHECKPOINTS,
    AnyTrainingConfig,
    latest_checkpoint,
    load_adapter_weights,
    prepare_checkpoints,
    resume_point,
)
from presentation_dependence.training.save import save_student

__all__ = [
    "CheckpointSelection",
    "RunOutcome",
    "RunStart",
    "build_trainer",
    "check_continue_in",
    "claimed_run",
    "finish_run",
    "run_trainer",
    "skipped_outcome",
    "start_run",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunOutcome:
    """Where the trained weights went and how training ended (:class:`~.trainer.TrainOutcome`
    and :class:`~.judge_trainer.JudgeOutcome` add the model and its Trainer).

    ``skipped``: the folder held this config's finished run and nothing ran (the model and the
    Trainer are None). ``resumed_from_step``: the checkpoint step training resumed at.
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
    is_main_process: bool
    skipped: bool = False
    resumed_from_step: int | None = None
    paused: bool = False


OutcomeT = TypeVar("OutcomeT", bound=RunOutcome)
TrainerT = TypeVar("TrainerT", bound=ReadoutTrainer)


def claimed_run(
    out: Path,
    *,
    wait: bool,
    restart: bool,
    done: Callable[[bool], OutcomeT | None],
    train: Callable[[], OutcomeT],
) -> OutcomeT:
    """``done(main)``'s outcome when it has one (a finished folder or a paused snapshot; not
    asked with ``restart``), else ``train()``'s, logging to the folder's log file. The main
    process (the launcher's ``RANK`` 0: ``main``) claims ``out`` for both (:mod:`.claim`;
    ``wait``: for another process's claim to end, instead of refusing)."""
    main = int(os.environ.get("RANK", "0")) == 0
    with claim_training(out, wait=wait) if main else contextlib.nullcontext():
        outcome = None if restart else done(main)
        if outcome is not None:
            return outcome
        with RunFolder(out).logging_to_file() if main else contextlib.nullcontext():
            return train()


def skipped_outcome(
    make: Callable[..., OutcomeT],
    out: Path,
    prov: dict[str, Any] | None,
    snap: Path | None,
    pause_at: int | None,
    main: bool,
) -> OutcomeT:
    """The outcome of a folder with nothing to train, made by ``make`` (the outcome class with
    its model and Trainer, None): the finished run that ``prov`` (its provenance) records, or
    with no ``prov`` the run paused at ``pause_at``, whose snapshot is ``snap``."""
    prov = prov or {}
    return make(
        output_dir=out,
        adapter_dir=snap if snap is not None else out / "adapter",
        global_step=int(prov.get("global_step", pause_at or 0)),
        train_loss=float(prov.get("train_loss", float("nan"))),
        log_history=list(prov.get("log_history", [])),
        is_main_process=main,
        skipped=True,
        paused=snap is not None and not prov,
    )


@dataclass(frozen=True)
class RunStart:
    """A run about to train: its config, its Trainer arguments, the pause it was asked for,
    and the checkpoint it resumes from (None: from scratch) with that checkpoint's trainer
    state and step."""

    cfg: AnyTrainingConfig
    args: Any  # transformers.TrainingArguments
    pause_at: int | None
    checkpoint: Path | None
    checkpoint_state: dict[str, Any]
    resumed_step: int | None


def check_continue_in(out: Path, dtype: str, restart: bool) -> None:
    """Refuse ``continue_in`` (``--continue-in DTYPE`` of ``presdep train`` and ``train-judge``:
    finish a resumed run in another dtype) where there is no run to continue."""
    check_dtype(dtype)
    if dtype == "auto":
        raise ConfigError("--continue-in auto: name a dtype (float32, bfloat16, float16)")
    if restart or latest_checkpoint(out / CHECKPOINTS) is None:
        why = "--restart trains from scratch" if restart else f"{out} has no checkpoint"
        raise ConfigError(
            f"--continue-in {dtype} finishes a resumed run, but {why}. Fix: set the config's "
            f"dtype to {dtype} to train a new run in it"
        )


def start_run(
    cfg: AnyTrainingConfig,
    model: TrainableModel,
    inputs: TrainingInputs,
    *,
    restart: bool,
    pause_at: int | None,
    continue_in: str | None = None,
) -> RunStart:
    """The Trainer arguments of ``model``; the folder's checkpoints prepared for ``inputs``
    (main process: :func:`~.resume.prepare_checkpoints`, ``restart`` discards them), the point
    training resumes from, and the progress log begun or cut back to it (main process; its
    resume event records ``continue_in``, the dtype a resumed run continues in)."""
    out = cfg.resolved_output_dir
    args = training_arguments(cfg, model, out / CHECKPOINTS)
    if PartialState().is_main_process:
        prepare_checkpoints(out, cfg, inputs, restart)
    PartialState().wait_for_everyone()
    checkpoint, state, resumed_step = resume_point(out, pause_at)
    if PartialState().is_main_process:
        start_log(
            out / TRAIN_LOG,
            resumed_step,
            checkpoint.name if checkpoint else None,
            continued_in=continue_in,
        )
    return RunStart(cfg, args, pause_at, checkpoint, state, resumed_step)


def build_trainer(
    cls: type[TrainerT],
    start: RunStart,
    model: TrainableModel,
    dataset: ViewsDataset[Any],
    collator: Any,
    callbacks: Sequence[TrainerCallback],
    **loss: Any,
) -> TrainerT:
    """The ``cls`` Trainer of ``model`` on ``dataset`` with the run folder's callbacks (views
    per epoch, checkpoint markers, snapshots, the progress log, the pause, the heap trim:
    :func:`~.readout_trainer.run_callbacks`) then ``callbacks``; ``loss``: ``cls``'s own
    loss options beside ``cfg.lambda_``."""
    trainer = cls(
        model=model.model,
        args=start.args,
        train_dataset=dataset,
        data_collator=collator,
        callbacks=run_callbacks(start.cfg, dataset, start.pause_at, callbacks, model.tokenizer),
        lambda_=start.cfg.lambda_,
        use_logits_to_keep=model.use_logits_to_keep,
        **loss,
    )
    trainer.remove_callback(PrinterCallback)  # ProgressLog logs instead of printing
    return trainer


class CheckpointSelection(Protocol):
    """Picks the checkpoint a run saves instead of its last weights (early stopping:
    :class:`~.early_stop.HeldoutEarlyStopping`)."""

    def stopped(self, step: int | None) -> bool:
        """Whether training had already ended at checkpoint ``step`` (a resumed run)."""
        ...

    def selected(self, step: int) -> tuple[Path, dict[str, Any]] | None:
        """At the run's end (step ``step``): the snapshot to save and its provenance record."""
        ...


def finish_run(
    make: Callable[..., OutcomeT],
    start: RunStart,
    trainer: ReadoutTrainer,
    model: TrainableModel,
    what: str,
    provenance: Callable[[dict[str, Any]], dict[str, Any]],
    selection: CheckpointSelection | None = None,
) -> OutcomeT:
    """Train from ``start``'s checkpoint; unless the run paused at ``start.pause_at``, save the
    trained ``what`` (world process zero: :func:`~.save.save_student`) with the provenance record
    ``provenance(run)`` (``run``: the global step, train loss, resumed step, seconds and log
    history); the outcome, made by ``make`` (the outcome class with its model and Trainer).
    With ``selection`` the saved weights are the checkpoint it selects, and ``run`` records
    why (``early_stopping``)."""
    cfg, out = start.cfg, start.cfg.resolved_output_dir
    t0 = time.perf_counter()
    ended = selection is not None and selection.stopped(start.resumed_step)
    history, step = run_trainer(
        trainer,
        model.model,
        start.checkpoint,
        start.checkpoint_state,
        start.resumed_step,
        ended=ended,
    )
    seconds = time.perf_counter() - t0
    train_loss = run_loss(history)
    paused = start.pause_at is not None and step < int(trainer.state.max_steps)
    adapter = snapshot_dir(out, step) if paused else out / "adapter"
    if paused:
        log.info("paused %s at step %d of %d", cfg.id, step, trainer.state.max_steps)
    elif trainer.is_world_process_zero():
        run: dict[str, Any] = {
            "global_step": step,
            "train_loss": train_loss,
            "resumed_from_step": start.resumed_step,
            "seconds": seconds,
            "log_history": history,
        }
        chosen = None if selection is None else selection.selected(step)
        if chosen is not None:
            snapshot, record = chosen
            run["early_stopping"] = record
            load_adapter_weights(model.model, snapshot)
            log.info("saving the weights of %s (the selected checkpoint)", snapshot)
        adapter = save_student(cfg, provenance(run), trainer, out, model.tokenizer)
        log.info("saved the %s to %s (%d steps, %.1f s)", what, out, step, seconds)
    trainer.accelerator.wait_for_everyone()
    return make(
        output_dir=out,
        adapter_dir=adapter,
        global_step=step,
        train_loss=train_loss,
        log_history=history,
        is_main_process=bool(trainer.is_world_process_zero()),
        resumed_from_step=start.resumed_step,
        paused=paused,
    )


def run_trainer(
    trainer: ReadoutTrainer,
    model: Any,
    checkpoint: Path | None,
    ckpt_state: dict[str, Any],
    resumed_step: int | None,
    *,
    ended: bool = False,
) -> tuple[list[dict[str, Any]], int]:
    """Train (resuming from ``checkpoint``); the log history and the final global step
    (``model``: the peft model whose adapter a checkpoint of the finished run restores).
    ``ended``: training had stopped at that checkpoint (early stopping decided there)."""
    if (
        checkpoint is not None
        and resumed_step is not None
        and (ended or resumed_step >= int(ckpt_state.get("max_steps") or 0) > 0)
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
