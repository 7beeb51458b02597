"""Train the order-free reference judge with trl's ``RewardTrainer`` (issue 37).

:func:`train_reward_model` turns the ``train`` split of the judge sets (:mod:`.judge_splits`,
the readout arms' items) into (chosen, rejected) pairs, each response in a conversation of its
own encoded as the serving judge encodes it
(:func:`~presentation_dependence.judge.judges.reward.reward_ids`), and fits the embedded base
with a scalar head and a LoRA adapter (``modules_to_save=["score"]``: the head is trained in
full) by trl's Bradley-Terry loss, −log σ(r_chosen − r_rejected).

Why trl here and the project's own trainer for the readout arms: a reward model is exactly
what ``RewardTrainer`` trains, while the readout arms read one forward pass's letter
distribution under a placement pair, which no trl trainer computes (docs/JUDGE-TRAINING.md).
The run folder is the students': the config frozen in ``resolved_config.yaml`` (another config
refused with the diff), one process at a time (:mod:`.claim`), checkpoints marked complete
with their sha256s (:class:`~.resume.CheckpointMarker`) and resumed from through the Trainer's
own ``resume_from_checkpoint``, ``adapter/`` written last beside ``judge.yaml`` (the serving
block: ``judge_class: reward_model``) and ``provenance.json``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.judge.items.records import ResponseItem
from presentation_dependence.judge.judges.reward import load_reward_model, reward_ids
from presentation_dependence.models.embedded import resolve_model
from presentation_dependence.provenance import collect_provenance
from presentation_dependence.readout.options import ModelOptions
from presentation_dependence.runners.run_folder import RunFolder
from presentation_dependence.secrets import redact_obj
from presentation_dependence.training.claim import claim_training, refuse_foreign_folder
from presentation_dependence.training.inputs import TrainingInputs
from presentation_dependence.training.judge_trainer import items_inputs, training_items
from presentation_dependence.training.resume import (
    CHECKPOINTS,
    CheckpointMarker,
    check_checkpoints,
    check_finished,
    discard,
    freeze,
    prepare_checkpoints,
    resume_point,
    train_record,
)
from presentation_dependence.training.reward_config import RewardModelConfig

__all__ = ["RewardOutcome", "preference_pairs", "train_reward_model"]


log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RewardOutcome:
    """Where the reward model went: its adapter, steps, mean loss; ``skipped`` when the folder
    already held this config's finished model."""

    output_dir: Path
    adapter_dir: Path
    global_step: int
    train_loss: float
    skipped: bool = False
    resumed_from_step: int | None = None


def preference_pairs(items: Sequence[ResponseItem]) -> list[tuple[str, str, str, str]]:
    """(pair id, prompt, chosen, rejected): a pair item once, an N-way item with one correct
    response once per incorrect one, in the items' order."""
    out = []
    for it in items:
        c = it.correct_index
        for j, r in enumerate(it.responses):
            if j != c:
                out.append((f"{it.item_id}#{j}", it.prompt, it.responses[c], r))
    return out


def train_reward_model(
    cfg: RewardModelConfig,
    *,
    argv: Sequence[str] | None = None,
    items: Sequence[ResponseItem] | None = None,
    restart: bool = False,
    wait: bool = False,
    callbacks: Sequence[Any] = (),
) -> RewardOutcome:
    """Train (or resume, or find finished) the reward model ``cfg`` describes, on ``items``
    (default: its splits' ``train`` split); ``callbacks`` join the Trainer's."""
    out = cfg.resolved_output_dir
    refuse_foreign_folder(out)
    with claim_training(out, wait=wait):
        if restart:
            discard(out)
        freeze(out, cfg)
        items = list(items) if items is not None else training_items(cfg)
        inputs = items_inputs(items, resolve_model(cfg.model_name, cfg.revision), cfg.splits)
        rec = train_record(out)
        if rec is not None:
            check_finished(out, rec, inputs)
            log.info("%s already holds the reward model of this config: nothing to train", out)
            step, loss = int(rec["global_step"]), float(rec["train_loss"])
            return RewardOutcome(out, out / "adapter", step, loss, skipped=True)
        check_checkpoints(out, cfg, inputs)
        with RunFolder(out).logging_to_file():
            return _train(cfg, out, argv, items, inputs, callbacks)


def _train(
    cfg: RewardModelConfig,
    out: Path,
    argv: Sequence[str] | None,
    items: Sequence[ResponseItem],
    inputs: TrainingInputs,
    callbacks: Sequence[Any],
) -> RewardOutcome:
    from datasets import Dataset
    from peft import LoraConfig, TaskType
    from transformers import set_seed
    from trl import RewardTrainer

    if cfg.train.num_threads:
        import torch

        torch.set_num_threads(cfg.train.num_threads)
    pairs = preference_pairs(items)
    set_seed(cfg.seed)  # the data order and LoRA's init
    options = ModelOptions(cfg.model_name, cfg.revision, "auto", cfg.dtype, cfg.trust_remote_code)
    model, tokenizer, snapshot = load_reward_model(options, None, seed=cfg.seed)

    def ids(prompt: str, response: str) -> list[int]:
        return reward_ids(tokenizer, prompt, response, cfg.max_response_chars, cfg.max_length)

    rows = [{"chosen_ids": ids(p, c), "rejected_ids": ids(p, r)} for _, p, c, r in pairs]
    lora = LoraConfig(
        task_type=TaskType.SEQ_CLS,
        r=cfg.lora.r,
        lora_alpha=cfg.lora.alpha,
        lora_dropout=cfg.lora.dropout,
        target_modules=list(cfg.lora.target_modules),
        modules_to_save=["score"],
    )
    ckpt_dir = out / CHECKPOINTS
    prepare_checkpoints(out, cfg, inputs, restart=False)  # run.json: what a resume is checked on
    trainer = RewardTrainer(
        model=model,
        args=_reward_config(cfg, ckpt_dir, model.device.type),
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=lora,
        callbacks=[CheckpointMarker(cfg.train.save_total_limit), *callbacks],
    )
    checkpoint, _, resumed = resume_point(out, None)
    if checkpoint is not None:
        log.info("resuming %s from %s", cfg.id, checkpoint)
    result = trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    step = int(trainer.state.global_step)
    run = {
        "pairs": len(pairs),
        "items": len(items),
        "global_step": step,
        "train_loss": float(result.training_loss),
        "resumed_from_step": resumed,
        "log_history": trainer.state.log_history,
    }
    adapter = _save(cfg, out, trainer, argv, items, inputs, snapshot, run)
    log.info("saved the reward model to %s (%d steps)", out, step)
    return RewardOutcome(out, adapter, step, float(result.training_loss), False, resumed)


def _reward_config(cfg: RewardModelConfig, ckpt_dir: Path, device: str) -> Any:
    from trl import RewardConfig

    t = cfg.train
    return RewardConfig(
        output_dir=str(ckpt_dir),
        seed=cfg.seed,
        data_seed=cfg.seed,
        learning_rate=t.learning_rate,
        num_train_epochs=t.epochs,
        max_steps=t.max_steps if t.max_steps is not None else -1,
        per_device_train_batch_size=t.batch_size,
        gradient_accumulation_steps=t.grad_accum,
        warmup_steps=t.warmup_steps,
        lr_scheduler_type=t.lr_scheduler,
        weight_decay=t.weight_decay,
        max_grad_norm=t.max_grad_norm,
        optim=t.optim,
        logging_steps=t.logging_steps,
        save_steps=t.save_steps,
        save_total_limit=None,  # CheckpointMarker rotates, after a checkpoint is complete
        report_to=[],
        use_cpu=device == "cpu",
        bf16=False,
        max_length=None,  # reward_ids cut each sequence as serving does
        # the pad token is the tokenizer's: load_reward_model set it (REWARD_PAD)
        disable_dropout=True,
        dataloader_num_workers=0,
        disable_tqdm=True,  # progress goes to the run log, not a bar
    )


def _save(
    cfg: RewardModelConfig,
    out: Path,
    trainer: Any,
    argv: Sequence[str] | None,
    items: Sequence[ResponseItem],
    inputs: TrainingInputs,
    snapshot: str,
    run: dict[str, Any],
) -> Path:
    """The adapter (LoRA + head) to a temporary folder, then ``judge.yaml`` and the provenance,
    then the rename that marks the folder finished; the checkpoints go last."""
    tmp, adapter = out / ".adapter.tmp", out / "adapter"
    shutil.rmtree(tmp, ignore_errors=True)
    trainer.save_model(str(tmp))
    for saved in tmp.iterdir():  # the tokenizer files: the base's own are used
        if saved.name not in ("adapter_config.json", "adapter_model.safetensors"):
            saved.unlink() if saved.is_file() else shutil.rmtree(saved)
    block = cfg.serving_block(adapter.resolve())
    atomic_write_text(out / "judge.yaml", yaml.safe_dump(block, sort_keys=False))
    extra = {
        "phase": "train-reward",
        "config_id": cfg.id,
        "base_model": snapshot,
        "splits": {"path": cfg.splits, "sets": list(cfg.sets)},
        "training_items": [it.item_id for it in items],
        "training_data_sha256": inputs.data,
        "base_model_fingerprint": inputs.base,
        "world_size": int(os.environ.get("WORLD_SIZE", "1")),
        **run,
    }
    prov = collect_provenance(argv=argv, seeds={"seed": cfg.seed}, extra=extra)
    RunFolder(out).append_provenance(json.loads(json.dumps(redact_obj(prov), default=str)))
    shutil.rmtree(adapter, ignore_errors=True)
    tmp.rename(adapter)
    shutil.rmtree(out / CHECKPOINTS, ignore_errors=True)
    return adapter
