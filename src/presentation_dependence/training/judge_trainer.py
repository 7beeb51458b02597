"""Train a verdict readout judge with the student trainer (issue 37; docs/JUDGE-TRAINING.md).

:func:`train_judge` is :func:`~.trainer.train_student` for a judge: the same run loop
(:mod:`.run_loop`: run folder, claim, frozen config, checkpoints and resume, :mod:`.resume`: a
killed run resumes to the adapter an uninterrupted one gives), snapshots, progress log and
``train_log.jsonl``, pause, and the same transformers ``Trainer`` subclass and arguments; only
the data (:mod:`.judge_data`), the model's readout (:mod:`.judge_model`) and the loss
(:func:`~.loss.verdict_loss`) are the judge's.

``<output_dir>/`` (default ``runs/judge-train/<id>``) gets ``adapter/`` (written last),
``judge.yaml`` (the readout judge block with ``adapter_path``: ``presdep judge CONFIG
--override judge.adapter_path=<output_dir>/adapter`` evaluates it through the judge study
unchanged), ``resolved_config.yaml``, ``provenance.json`` and ``train_log.jsonl``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
from transformers import TrainerCallback

from presentation_dependence.judge.items.records import ResponseItem
from presentation_dependence.models.embedded import ResolvedModel, resolve_model
from presentation_dependence.provenance import collect_provenance
from presentation_dependence.training.claim import refuse_foreign_folder
from presentation_dependence.training.inputs import TrainingInputs
from presentation_dependence.training.judge_config import JudgeTrainingConfig
from presentation_dependence.training.judge_data import JudgeDataset, VerdictCollator
from presentation_dependence.training.judge_heldout import judge_early_stopping
from presentation_dependence.training.judge_model import (
    JudgeModel,
    load_judge_model,
    verdict_readout,
)
from presentation_dependence.training.judge_splits import load_split_items
from presentation_dependence.training.loss import verdict_loss
from presentation_dependence.training.readout_trainer import ReadoutTrainer, snapshot_dir
from presentation_dependence.training.resume import (
    check_checkpoints,
    check_finished,
    finished_provenance,
)
from presentation_dependence.training.reward_config import RewardModelConfig
from presentation_dependence.training.run_loop import (
    RunOutcome,
    build_trainer,
    check_continue_in,
    claimed_run,
    finish_run,
    skipped_outcome,
    start_run,
)

__all__ = [
    "JudgeOutcome",
    "JudgeTrainer",
    "items_fingerprint",
    "items_inputs",
    "train_judge",
    "training_items",
]

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


@dataclass(frozen=True, kw_only=True)
class JudgeOutcome(RunOutcome):
    """Where the trained judge went and how training ended (:class:`~.run_loop.RunOutcome`),
    with the judge and its Trainer (None when ``skipped``)."""

    model: JudgeModel | None
    trainer: JudgeTrainer | None


def training_items(cfg: JudgeTrainingConfig | RewardModelConfig) -> list[ResponseItem]:
    """The ``train`` split of ``cfg.sets`` (every trained set when empty), each set cut to its
    first ``max_items`` (a readout arm's or the reward model's config)."""
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


def items_inputs(
    items: Sequence[ResponseItem], resolved: ResolvedModel, splits: str
) -> TrainingInputs:
    """The content fingerprints a judge's checkpoints and finished folder are checked
    against: the items (:func:`items_fingerprint`) and the base model ``resolved``."""
    return TrainingInputs(
        data=items_fingerprint(items),
        base=resolved.fingerprint(),
        silver_path=splits,
        model_name=resolved.model_name,
    )


def _inputs(
    cfg: JudgeTrainingConfig, items: Sequence[ResponseItem], model: JudgeModel | None
) -> TrainingInputs:
    o = cfg.judge_options
    resolved = model.resolved if model is not None else resolve_model(o.model_name, o.revision)
    return items_inputs(items, resolved, cfg.splits)


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
    continue_in: str | None = None,
) -> JudgeOutcome:
    """Train the judge ``cfg`` describes (``items`` default to its training split); save the
    adapter, ``judge.yaml`` and provenance. A finished folder of the same config and inputs is
    left as it is; checkpoints are resumed from (``restart`` discards them), as for students.

    ``continue_in``: a dtype to resume the checkpoints in instead of ``judge.dtype``'s, the
    held-out points early stopping reads served in it too (``presdep train-judge
    --continue-in float32`` on a CPU that emulates bfloat16); refused without a checkpoint.
    The frozen config is unchanged; the progress log's resume event and the provenance say
    which steps ran in which dtype, each held-out point in which it was served.
    """
    out = cfg.resolved_output_dir
    refuse_foreign_folder(out)
    if continue_in is not None:
        check_continue_in(out, continue_in, restart)
    train_items = list(items) if items is not None else training_items(cfg)
    return claimed_run(
        out,
        wait=wait,
        restart=restart,
        done=lambda main: _done(cfg, _inputs(cfg, train_items, model), pause_at, main),
        train=lambda: _train(
            cfg, argv, train_items, model, restart, callbacks, pause_at, continue_in
        ),
    )


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
    make = partial(JudgeOutcome, model=None, trainer=None)
    return skipped_outcome(make, out, prov, snap, pause_at, main)


def _train(
    cfg: JudgeTrainingConfig,
    argv: Sequence[str] | None,
    items: list[ResponseItem],
    model: JudgeModel | None,
    restart: bool,
    callbacks: Sequence[TrainerCallback],
    pause_at: int | None,
    continue_in: str | None,
) -> JudgeOutcome:
    if cfg.train.num_threads:
        torch.set_num_threads(cfg.train.num_threads)
    model = model if model is not None else load_judge_model(cfg, dtype=continue_in)
    inputs = _inputs(cfg, items, model)
    dataset = JudgeDataset(items, views=cfg.views, seed=cfg.seed)
    stopping = judge_early_stopping(cfg, dtype=continue_in)
    callbacks = [*([stopping] if stopping is not None else []), *callbacks]
    start = start_run(
        cfg, model, inputs, restart=restart, pause_at=pause_at, continue_in=continue_in
    )
    collator = VerdictCollator(
        model.tokenizer,
        model.resolved.path,
        cfg.judge_options,
        model.pad_token_id,
        model.max_context,
    )
    trainer = build_trainer(
        JudgeTrainer, start, model, dataset, collator, callbacks, consistency_kind=cfg.consistency
    )
    log.info(
        "training judge %s (%s): %d items, %d view(s), λ=%g (%s), world size %d%s",
        cfg.id,
        cfg.variant,
        len(dataset),
        cfg.views,
        cfg.lambda_,
        cfg.consistency,
        start.args.world_size,
        f", resuming from {start.checkpoint}" if start.checkpoint else "",
    )
    provenance = partial(_provenance, cfg, argv, items, inputs, start.args, model, continue_in)
    make = partial(JudgeOutcome, model=model, trainer=trainer)
    return finish_run(make, start, trainer, model, "judge", provenance, stopping)


def _provenance(
    cfg: JudgeTrainingConfig,
    argv: Sequence[str] | None,
    items: Sequence[ResponseItem],
    inputs: TrainingInputs,
    args: Any,
    model: JudgeModel,
    continued_in: str | None,
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
        "continued_in": continued_in,
        **run,
    }
    return collect_provenance(argv=argv, seeds={"seed": cfg.seed}, extra=extra)
