"""Train a verdict readout judge with the student trainer (issue 37; docs/JUDGE-TRAINING.md).

:func:`train_judge` is :func:`~.trainer.train_student` for a judge: the same run folder, claim,
frozen config, checkpoints and resume (:mod:`.resume`: a killed run resumes to the adapter an
uninterrupted one gives), snapshots, progress log and ``train_log.jsonl``, pause, and the same
transformers ``Trainer`` subclass and arguments; only the data (:mod:`.judge_data`), the model's
readout (:mod:`.judge_model`) and the loss (:func:`~.loss.verdict_loss`) are the judge's.

``<output_dir>/`` (default ``runs/judge-train/<id>``) gets ``adapter/`` (written last),
``judge.yaml`` (the readout judge block with ``adapter_path``: ``presdep judge CONFIG
--override judge.adapter_path=<output_dir>/adapter`` evaluates it through the judge study
unchanged), ``resolved_config.yaml``, ``provenance.json`` and ``train_log.jsonl``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
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

from presentation_dependence.judge.items.records import ResponseItem
from presentation_dependence.models.embedded import resolve_model
from presentation_dependence.provenance import collect_provenance
from presentation_dependence.runners.run_folder import RunFolder
from presentation_dependence.training.claim import claim_training, refuse_foreign_folder
from presentation_dependence.training.inputs import TrainingInputs
from presentation_dependence.training.judge_config import JudgeTrainingConfig
from presentation_dependence.training.judge_data import JudgeDataset, VerdictCollator
from presentation_dependence.training.judge_model import (
    JudgeModel,
    load_judge_model,
    verdict_readout,
)
from presentation_dependence.training.judge_splits import load_split_items
from presentation_dependence.training.loss import verdict_loss
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
    prepare_checkpoints,
    resume_point,
)
from presentation_dependence.training.save import save_student
from presentation_dependence.training.trainer import run_trainer

__all__ = ["JudgeOutcome", "JudgeTrainer", "items_fingerprint", "train_judge", "training_items"]

log = logging.getLogger(__name__)


class JudgeTrainer(ReadoutTrainer):
    """The student ``Trainer`` with the verdict loss: cross-entropy on the correct response,
    plus λ · the consistency of the views' verdict distributions realigned by response."""

    def __init__(self, *args: Any, consistency_kind: str = "squared", **kwargs: Any) -> None:
        super().__init__(*args, grade_token_ids=(), **kwargs)
        self.consistency_kind = consistency_kind

    def compute_loss(
        self,
        model: torch.nn.Module,
        inputs: dict[str, Any],
        return_outputs: bool = False,
        num_items_in_batch: Any = None,
    ) -> Any:
        lp = verdict_readout(model, inputs, use_logits_to_keep=self.use_logits_to_keep)
        parts = verdict_loss(
            lp,
            inputs["correct"],
            inputs["response_mask"],
            self.lambda_,
            consistency_kind=self.consistency_kind,
        )
        if model.training:
            self.note_parts(parts, inputs["correct"].float())
        return (parts.total, {"log_probs": lp}) if return_outputs else parts.total


@dataclass(frozen=True)
class JudgeOutcome:
    """Where the trained judge went and how training ended (as :class:`~.trainer.TrainOutcome`)."""

    output_dir: Path
    adapter_dir: Path
    global_step: int
    train_loss: float
    log_history: list[dict[str, Any]]
    model: JudgeModel | None
    trainer: JudgeTrainer | None
    is_main_process: bool
    skipped: bool = False
    resumed_from_step: int | None = None
    paused: bool = False


def training_items(cfg: JudgeTrainingConfig) -> list[ResponseItem]:
    """The ``train`` split of ``cfg.sets`` (every trained set when empty), each set cut to its
    first ``max_items``."""
    items = load_split_items(cfg.splits, "train", cfg.sets)
    if cfg.max_items is None:
        return items
    out: list[ResponseItem] = []
    count: dict[str, int] = {}
    for it in items:
        k = count.get(it.source, 0)
        if k < cfg.max_items:
            out.append(it)
            count[it.source] = k + 1
    return out


def items_fingerprint(items: Sequence[ResponseItem]) -> str:
    """sha256 of what training reads from the items, in order (ids, prompts, responses, labels)."""
    h = hashlib.sha256()
    for it in items:
        row = [it.item_id, it.prompt, list(it.responses), list(it.labels)]
        h.update(json.dumps(row, ensure_ascii=False).encode("utf-8") + b"\n")
    return h.hexdigest()


def _inputs(
    cfg: JudgeTrainingConfig, items: Sequence[ResponseItem], model: JudgeModel | None
) -> TrainingInputs:
    o = cfg.judge_options
    resolved = model.resolved if model is not None else resolve_model(o.model_name, o.revision)
    return TrainingInputs(
        data=items_fingerprint(items),
        base=resolved.fingerprint(),
        silver_path=cfg.splits,
        model_name=resolved.model_name,
    )


def train_judge(
    cfg: JudgeTrainingConfig,
    *,
    argv: Sequence[str] | None = None,
    items: Sequence[ResponseItem] | None = None,
    model: JudgeModel | None = None,
    restart: bool = False,
    callbacks: Sequence[TrainerCallback] = (),
    pause_at: int | None = None,
    wait: bool = False,
) -> JudgeOutcome:
    """Train the judge ``cfg`` describes (``items`` default to its training split); save the
    adapter, ``judge.yaml`` and provenance. A finished folder of the same config and inputs is
    left as it is; checkpoints are resumed from (``restart`` discards them), as for students."""
    out = cfg.resolved_output_dir
    main = int(os.environ.get("RANK", "0")) == 0
    refuse_foreign_folder(out)
    items = list(items) if items is not None else training_items(cfg)
    with claim_training(out, wait=wait) if main else contextlib.nullcontext():
        if not restart:
            done = _done(cfg, _inputs(cfg, items, model), pause_at, main)
            if done is not None:
                return done
        with RunFolder(out).logging_to_file() if main else contextlib.nullcontext():
            return _train(cfg, argv, items, model, restart, callbacks, pause_at)


def _done(
    cfg: JudgeTrainingConfig, inputs: TrainingInputs, pause_at: int | None, main: bool
) -> JudgeOutcome | None:
    """The outcome of a folder that holds ``cfg``'s finished judge (or the ``pause_at``
    snapshot) made from ``inputs``; None when there is training to do."""
    out = cfg.resolved_output_dir
    snap = None if pause_at is None else snapshot_dir(out, pause_at)
    prov = finished_provenance(out, cfg)
    if prov is None and (snap is None or not snap.is_dir()):
        check_checkpoints(out, cfg, inputs)
        return None
    if prov is not None:
        check_finished(out, prov, inputs)
        log.info("%s already holds the judge of this config: nothing to train", out)
    prov = prov or {}
    return JudgeOutcome(
        output_dir=out,
        adapter_dir=snap if snap is not None else out / "adapter",
        global_step=int(prov.get("global_step", pause_at or 0)),
        train_loss=float(prov.get("train_loss", float("nan"))),
        log_history=list(prov.get("log_history", [])),
        model=None,
        trainer=None,
        is_main_process=main,
        skipped=True,
        paused=snap is not None and not prov,
    )


def _train(
    cfg: JudgeTrainingConfig,
    argv: Sequence[str] | None,
    items: list[ResponseItem],
    model: JudgeModel | None,
    restart: bool,
    callbacks: Sequence[TrainerCallback],
    pause_at: int | None,
) -> JudgeOutcome:
    out = cfg.resolved_output_dir
    if cfg.train.num_threads:
        torch.set_num_threads(cfg.train.num_threads)
    model = model if model is not None else load_judge_model(cfg)
    inputs = _inputs(cfg, items, model)
    dataset = JudgeDataset(items, views=cfg.views, seed=cfg.seed)
    args = training_arguments(cfg, model, out / CHECKPOINTS)
    if PartialState().is_main_process:
        prepare_checkpoints(out, cfg, inputs, restart)
    PartialState().wait_for_everyone()
    checkpoint, ckpt_state, resumed_step = resume_point(out, pause_at)
    if PartialState().is_main_process:
        start_log(out / TRAIN_LOG, resumed_step, checkpoint.name if checkpoint else None)
    trainer = _trainer(cfg, model, dataset, args, pause_at, callbacks)
    log.info(
        "training judge %s (%s): %d items, %d view(s), λ=%g (%s), world size %d%s",
        cfg.id,
        cfg.variant,
        len(dataset),
        cfg.views,
        cfg.lambda_,
        cfg.consistency,
        args.world_size,
        f", resuming from {checkpoint}" if checkpoint else "",
    )
    t0 = time.perf_counter()
    history, step = run_trainer(trainer, model.model, checkpoint, ckpt_state, resumed_step)
    train_loss = run_loss(history)
    run = {
        "global_step": step,
        "train_loss": train_loss,
        "resumed_from_step": resumed_step,
        "seconds": time.perf_counter() - t0,
        "log_history": history,
    }
    paused = pause_at is not None and step < int(trainer.state.max_steps)
    adapter = snapshot_dir(out, step) if paused else out / "adapter"
    if not paused and trainer.is_world_process_zero():
        prov = _provenance(cfg, argv, items, inputs, args, model, run)
        adapter = save_student(cfg, prov, trainer, out)
        log.info("saved the judge to %s (%d steps, %.1f s)", out, step, run["seconds"])
    trainer.accelerator.wait_for_everyone()
    return JudgeOutcome(
        output_dir=out,
        adapter_dir=adapter,
        global_step=step,
        train_loss=train_loss,
        log_history=history,
        model=model,
        trainer=trainer,
        is_main_process=bool(trainer.is_world_process_zero()),
        resumed_from_step=resumed_step,
        paused=paused,
    )


def _trainer(
    cfg: JudgeTrainingConfig,
    model: JudgeModel,
    dataset: JudgeDataset,
    args: Any,
    pause_at: int | None,
    callbacks: Sequence[TrainerCallback],
) -> JudgeTrainer:
    collator = VerdictCollator(
        model.tokenizer,
        model.resolved.path,
        cfg.judge_options,
        model.pad_token_id,
        model.max_context,
    )
    trainer = JudgeTrainer(
        model=model.model,
        args=args,
        train_dataset=dataset,
        data_collator=collator,
        callbacks=run_callbacks(cfg, dataset, pause_at, callbacks),
        lambda_=cfg.lambda_,
        use_logits_to_keep=model.use_logits_to_keep,
        consistency_kind=cfg.consistency,
    )
    trainer.remove_callback(PrinterCallback)  # ProgressLog logs instead of printing
    return trainer


def _provenance(
    cfg: JudgeTrainingConfig,
    argv: Sequence[str] | None,
    items: Sequence[ResponseItem],
    inputs: TrainingInputs,
    args: Any,
    model: JudgeModel,
    run: dict[str, Any],
) -> dict[str, Any]:
    sources: dict[str, int] = {}
    for it in items:
        sources[it.source] = sources.get(it.source, 0) + 1
    extra = {
        "phase": "train-judge",
        "config_id": cfg.id,
        "variant": cfg.variant,
        "views": cfg.views,
        "lambda": cfg.lambda_,
        "consistency": cfg.consistency,
        "judge": model.describe(),
        "splits": {"path": cfg.splits, "sets": list(cfg.sets), "items_by_source": sources},
        "training_items": [it.item_id for it in items],
        "training_data_sha256": inputs.data,
        "base_model_fingerprint": inputs.base,
        "world_size": args.world_size,
        **run,
    }
    return collect_provenance(argv=argv, seeds={"seed": cfg.seed}, extra=extra)
