"""Train a student: transformers ``Trainer`` with the readout loss, LoRA via peft, accelerate-ready.

:func:`train_student` runs one training config end to end: read the silver labels, refuse
training queries that are test queries, load the student (base + LoRA), train with
:class:`ReadoutTrainer`, and save ``<output_dir>/``:

* ``adapter/`` — the LoRA adapter (``adapter_config.json``, ``adapter_model.safetensors``);
* ``resolved_config.yaml`` — the training config as it ran;
* ``reranker.yaml`` — the reranker block that serves the student (student block +
  ``adapter_path``), ready for an experiment config or ``--override reranker.adapter_path=...``;
* ``provenance.json`` — packages, git, base model revision, silver file and teacher, seeds,
  parameter counts, world size, the loss log and the final loss.

The Trainer runs on accelerate: ``accelerate launch scripts/train/train_student.py CONFIG``
trains data-parallel on every visible GPU with no code change (each process takes its share
of the queries; only the main process writes). On GPU the base runs in bfloat16 with autocast
and gradient checkpointing; on CPU in the dtype the readout benchmark chose
(``CPU_DEFAULT_DTYPE``), without autocast and without checkpointing, each set explicitly.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import yaml
from transformers import Trainer, TrainerCallback, TrainingArguments

from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.provenance import collect_provenance
from presentation_dependence.secrets import redact
from presentation_dependence.training.collate import ReadoutCollator, SilverDataset
from presentation_dependence.training.config import LossOptions, TrainingConfig
from presentation_dependence.training.debias import ips_weights, propensities_from_psi
from presentation_dependence.training.loss import readout_loss
from presentation_dependence.training.model import Student, load_student, student_readout
from presentation_dependence.training.silver import SilverSet, read_silver
from presentation_dependence.training.splits import check_disjoint, load_split

__all__ = ["ReadoutTrainer", "TrainOutcome", "train_student", "training_arguments"]

log = logging.getLogger(__name__)


class ReadoutTrainer(Trainer):
    """``Trainer`` whose loss is the readout loss of :mod:`~presentation_dependence.training.loss`.

    The batch carries no ``labels`` (the silver scores are ``teacher_scores``), the loss is a
    per-batch mean (the Trainer divides it by the accumulation steps), and the fit and
    consistency terms are logged beside the loss.
    """

    def __init__(
        self,
        *args: Any,
        grade_token_ids: Sequence[int],
        lambda_: float,
        use_logits_to_keep: bool = True,
        loss_options: LossOptions | None = None,
        slot_weights: Sequence[float] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.grade_token_ids = tuple(grade_token_ids)
        self.lambda_ = float(lambda_)
        self.use_logits_to_keep = use_logits_to_keep
        self.loss_options = loss_options or LossOptions()
        self.slot_weights = (
            None if slot_weights is None else torch.tensor(list(slot_weights), dtype=torch.float32)
        )
        self.loss_is_scaled_for_ga = False
        self.model_accepts_loss_kwargs = False
        self._parts: dict[str, list[float]] = {"fit": [], "consistency": [], "rank": []}

    def _weights(self, slots: torch.Tensor) -> torch.Tensor | None:
        """Per (query, view, candidate) inverse-propensity weight of the slot it was shown in."""
        if self.slot_weights is None:
            return None
        w = self.slot_weights.to(slots.device)
        shown = slots >= 0
        n_slots = shown.sum(dim=-1, keepdim=True).clamp(min=1)
        idx = torch.div(slots.clamp(min=0) * w.numel(), n_slots, rounding_mode="floor")
        return torch.where(shown, w[idx.clamp(max=w.numel() - 1)], torch.zeros_like(w[:1]))

    def compute_loss(
        self,
        model: torch.nn.Module,
        inputs: dict[str, Any],
        return_outputs: bool = False,
        num_items_in_batch: Any = None,
    ) -> Any:
        ro = student_readout(
            model, inputs, self.grade_token_ids, use_logits_to_keep=self.use_logits_to_keep
        )
        opts = self.loss_options
        parts = readout_loss(
            ro.scores,
            inputs["teacher_scores"],
            inputs["candidate_mask"],
            self.lambda_,
            log_probs=ro.log_probs,
            fit=opts.fit,
            rank_weight=opts.rank_weight,
            rank_temperature=opts.rank_temperature,
            weights=self._weights(ro.slots),
        )
        if model.training:
            self._parts["fit"].append(float(parts.fit.detach()))
            self._parts["consistency"].append(float(parts.consistency.detach()))
            self._parts["rank"].append(float(parts.rank.detach()))
        return (parts.total, {"scores": ro.scores}) if return_outputs else parts.total

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if "loss" in logs and self._parts["fit"]:
            for name, values in self._parts.items():
                logs[name] = round(sum(values) / len(values), 6)
                values.clear()
        super().log(logs, start_time)


class _EpochViews(TrainerCallback):
    """Gives the dataset the epoch number, so every epoch draws fresh views."""

    def __init__(self, dataset: SilverDataset) -> None:
        self.dataset = dataset
        self.epoch = 0

    def on_epoch_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.dataset.set_epoch(self.epoch)
        self.epoch += 1


def training_arguments(cfg: TrainingConfig, student: Student, workdir: Path) -> TrainingArguments:
    """TrainingArguments with every device-dependent switch set explicitly."""
    gpu = student.device.type == "cuda"
    ckpt = cfg.train.gradient_checkpointing
    if ckpt is None:
        ckpt = gpu
    # transformers >= 5.2x renamed gradient_checkpointing* to activation_checkpointing*.
    names = {f.name for f in dataclasses.fields(TrainingArguments)}
    prefix = "activation" if "activation_checkpointing" in names else "gradient"
    checkpointing: dict[str, Any] = {
        f"{prefix}_checkpointing": ckpt,
        f"{prefix}_checkpointing_kwargs": {"use_reentrant": False},
    }
    return TrainingArguments(
        output_dir=str(workdir),
        per_device_train_batch_size=cfg.train.batch_size,
        gradient_accumulation_steps=cfg.train.grad_accum,
        learning_rate=cfg.train.learning_rate,
        num_train_epochs=cfg.train.epochs,
        max_steps=cfg.train.max_steps if cfg.train.max_steps is not None else -1,
        lr_scheduler_type=cfg.train.lr_scheduler,
        warmup_steps=cfg.train.warmup_steps,
        weight_decay=cfg.train.weight_decay,
        max_grad_norm=cfg.train.max_grad_norm,
        optim=cfg.train.optim,
        logging_steps=cfg.train.logging_steps,
        logging_strategy="steps",
        save_strategy="no",
        eval_strategy="no",
        report_to="none",
        remove_unused_columns=False,
        bf16=gpu and student.dtype == torch.bfloat16,
        fp16=gpu and student.dtype == torch.float16,
        **checkpointing,
        use_cpu=not gpu,
        seed=cfg.seed,
        data_seed=cfg.seed,
        dataloader_num_workers=0,
        ddp_find_unused_parameters=False,
        disable_tqdm=True,
    )


@dataclass(frozen=True)
class TrainOutcome:
    """Where the student went and how training ended."""

    output_dir: Path
    adapter_dir: Path
    global_step: int
    train_loss: float
    log_history: list[dict[str, Any]]
    student: Student
    trainer: ReadoutTrainer


def _save(
    cfg: TrainingConfig,
    outcome: dict[str, Any],
    trainer: ReadoutTrainer,
    out: Path,
    tokenizer: Any = None,
) -> Path:
    """Save the adapter (LoRA) or the whole model (``finetune: full``) and its serving block."""
    full = cfg.finetune == "full"
    adapter = out / ("model" if full else "adapter")
    tmp = out / f".{adapter.name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    trainer.accelerator.unwrap_model(trainer.model).save_pretrained(str(tmp))
    if full and tokenizer is not None:
        tokenizer.save_pretrained(str(tmp))
    shutil.rmtree(adapter, ignore_errors=True)
    tmp.rename(adapter)
    atomic_write_text(out / "resolved_config.yaml", cfg.to_yaml())
    if full:
        block = {**cfg.student, "model_name": str(adapter), "revision": None}
        how = f"--override reranker.model_name={adapter}"
    else:
        block = {**cfg.student, "adapter_path": str(adapter)}
        how = f"--override reranker.adapter_path={adapter}"
    atomic_write_text(
        out / "reranker.yaml",
        "# serve this student: paste as an experiment config's reranker block, or run\n"
        f"# presdep run CONFIG {how}\n" + yaml.safe_dump(block, sort_keys=False),
    )
    text = json.dumps(outcome, indent=1, default=str, ensure_ascii=False)
    atomic_write_text(out / "provenance.json", redact(text) + "\n")
    return adapter


def train_student(
    cfg: TrainingConfig,
    *,
    argv: Sequence[str] | None = None,
    silver: SilverSet | None = None,
    student: Student | None = None,
) -> TrainOutcome:
    """Train the student ``cfg`` describes; save adapter, config and provenance (main process).

    ``silver`` and ``student`` default to ``cfg.silver.path`` and a fresh :func:`load_student`.
    """
    if cfg.train.num_threads:
        torch.set_num_threads(cfg.train.num_threads)
    silver = silver if silver is not None else read_silver(cfg.silver.path)
    if cfg.splits.test:
        check_disjoint(
            "training (silver) queries",
            [(q.source, q.qid, q.query) for q in silver.queries],
            "test",
            load_split(cfg.splits.test),
        )
    opts = cfg.student_options
    if student is None:
        student = load_student(
            opts,
            cfg.lora,
            reranker_class=cfg.student_class,
            seed=cfg.seed,
            finetune=cfg.finetune,
        )
    slot_weights = None
    if cfg.variant == "debias_first":
        slot_weights = ips_weights(
            propensities_from_psi(cfg.propensity.psi_dir), cfg.propensity.clip
        )
        log.info("DebiasFirst slot weights: %s", " ".join(f"{w:.2f}" for w in slot_weights))
    dataset = SilverDataset(
        silver.queries,
        teacher_orders=cfg.teacher_orders,
        views=cfg.views,
        view_orders=cfg.view_orders,
        seed=cfg.seed,
        max_candidates=opts.chunk_size,
    )
    out = cfg.resolved_output_dir
    args = training_arguments(cfg, student, out / "trainer")
    trainer = ReadoutTrainer(
        model=student.model,
        args=args,
        train_dataset=dataset,
        data_collator=ReadoutCollator(student.builder, student.pad_token_id),
        callbacks=[_EpochViews(dataset)],
        grade_token_ids=student.grade_token_ids,
        lambda_=cfg.lambda_,
        use_logits_to_keep=student.use_logits_to_keep,
        loss_options=cfg.loss,
        slot_weights=None if slot_weights is None else slot_weights.tolist(),
    )
    log.info(
        "training %s (%s): %d queries, T=%d, %d view(s), λ=%g, %s, world size %d",
        cfg.id,
        cfg.variant,
        len(dataset),
        cfg.teacher_orders,
        cfg.views,
        cfg.lambda_,
        student.describe()["dtype"],
        args.world_size,
    )
    t0 = time.perf_counter()
    result = trainer.train()
    seconds = time.perf_counter() - t0
    history = list(trainer.state.log_history)
    adapter = out / "adapter"
    if trainer.is_world_process_zero():
        silver_info = [
            {
                k: h.get(k)
                for k in ("teacher_id", "teacher_revision", "num_orders", "seed", "num_queries")
            }
            for h in silver.headers
        ]
        outcome = collect_provenance(
            argv=argv,
            seeds={"seed": cfg.seed, "silver_seed": cfg.silver.seed},
            extra={
                "phase": "train",
                "config_id": cfg.id,
                "variant": cfg.variant,
                "teacher_orders": cfg.teacher_orders,
                "views": cfg.views,
                "view_orders": cfg.view_orders,
                "lambda": cfg.lambda_,
                "loss": dataclasses.asdict(cfg.loss),
                "finetune": cfg.finetune,
                "slot_weights": None if slot_weights is None else slot_weights.tolist(),
                "student": student.describe(),
                "silver": {"path": cfg.silver.path, "files": silver_info},
                "training_queries": [q.key for q in silver.queries],
                "world_size": args.world_size,
                "gradient_checkpointing": args.gradient_checkpointing,
                "autocast_bf16": args.bf16,
                "global_step": result.global_step,
                "train_loss": result.training_loss,
                "seconds": seconds,
                "log_history": history,
            },
        )
        adapter = _save(cfg, outcome, trainer, out, student.tokenizer)
        log.info("saved the student to %s (%d steps, %.1f s)", out, result.global_step, seconds)
    trainer.accelerator.wait_for_everyone()
    return TrainOutcome(
        output_dir=out,
        adapter_dir=adapter,
        global_step=int(result.global_step),
        train_loss=float(result.training_loss),
        log_history=history,
        student=student,
        trainer=trainer,
    )
