"""The transformers ``Trainer`` of a student: the readout loss, its callbacks, its arguments.

:class:`ReadoutTrainer` trains on the readout loss (:mod:`~presentation_dependence.training.loss`)
and logs its parts; :class:`Snapshots` keeps the adapter of every checkpoint for learning curves;
:class:`EpochViews` gives each epoch fresh views; :func:`training_arguments` sets every
device-dependent switch explicitly. :mod:`.trainer` runs them end to end.
"""

from __future__ import annotations

import ctypes
import dataclasses
import math
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

import torch
from transformers import Trainer, TrainerCallback, TrainingArguments

from presentation_dependence.errors import ConfigError
from presentation_dependence.training.collate import ViewsDataset
from presentation_dependence.training.config import LossOptions, TrainingConfig
from presentation_dependence.training.finite import require_finite_loss, require_finite_weights
from presentation_dependence.training.judge_config import JudgeTrainingConfig
from presentation_dependence.training.loss import LossParts, readout_loss
from presentation_dependence.training.model import TrainableModel, student_readout
from presentation_dependence.training.progress import TRAIN_LOG, ProgressLog
from presentation_dependence.training.resume import CheckpointMarker

__all__ = [
    "EpochViews",
    "PauseAt",
    "ReadoutTrainer",
    "Snapshots",
    "TrimHeap",
    "run_callbacks",
    "snapshot_dir",
    "training_arguments",
]


class ReadoutTrainer(Trainer):
    """``Trainer`` whose loss is the readout loss of :mod:`~presentation_dependence.training.loss`.

    The batch carries no ``labels`` (the silver scores are ``teacher_scores``), the loss is a
    per-batch mean (the Trainer divides it by the accumulation steps), and the fit and
    consistency terms are logged beside the loss (means over the window and, like the loss,
    over the processes).
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
        self._tokens = 0  # prompt tokens trained on since the last log line (this process)

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
            rank_loss=opts.rank_loss,
            fit_weight=opts.fit_weight,
            rank_target=self._rank_target(inputs),
            weights=self._weights(ro.slots),
        )
        if model.training:
            self.note_parts(parts, inputs["teacher_scores"])
        return (parts.total, {"scores": ro.scores}) if return_outputs else parts.total

    def _rank_target(self, inputs: dict[str, Any]) -> torch.Tensor | None:
        """The teacher's raw scores where the ranking term follows them (``rank_target: raw``)."""
        if self.loss_options.rank_target != "raw":
            return None
        if "teacher_raw" not in inputs:
            raise ConfigError(
                "loss.rank_target: raw needs the teacher's raw scores, and this batch has none "
                "(a collator other than ReadoutCollator?). Fix: rank_target: label"
            )
        raw: torch.Tensor = inputs["teacher_raw"]
        return raw

    def training_step(
        self, model: torch.nn.Module, inputs: dict[str, Any], *a: Any, **kw: Any
    ) -> Any:
        """The Trainer's step, counting the batch's prompt tokens (padding excluded)."""
        mask = inputs.get("attention_mask")
        if mask is not None:
            self._tokens += int(mask.sum())
        return super().training_step(model, inputs, *a, **kw)

    def note_parts(self, parts: LossParts, labels: torch.Tensor) -> None:
        """Stop on a non-finite loss (``labels``: the batch's targets, named if they are not
        finite); keep the terms for the next log line."""
        terms = {k: float(getattr(parts, k).detach()) for k in self._parts}
        require_finite_loss(parts.total, self.state.global_step + 1, labels, terms)
        for name, value in terms.items():
            self._parts[name].append(value)

    def save_model(self, output_dir: str | None = None, _internal_call: bool = False) -> None:
        """Save the model (a checkpoint's, when the Trainer calls it) once its trained weights
        are checked finite."""
        require_finite_weights(
            self.model, f"the checkpoint in {output_dir or self.args.output_dir}"
        )
        super().save_model(output_dir, _internal_call)

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if "loss" in logs:  # every process logs the loss (its mean is gathered), so do the parts
            means = torch.tensor(
                [sum(v) / len(v) if v else float("nan") for v in self._parts.values()],
                device=self.args.device,
            )
            if self.args.world_size > 1:
                means = self.accelerator.gather(means[None]).mean(dim=0)
            for (name, values), value in zip(self._parts.items(), means.tolist(), strict=True):
                logs[name] = round(value, 6)
                values.clear()
            tokens = torch.tensor([self._tokens], device=self.args.device)
            if self.args.world_size > 1:
                tokens = self.accelerator.gather(tokens).sum(dim=0, keepdim=True)
            logs["tokens"] = int(tokens.item())  # summed over the window and the processes
            self._tokens = 0
        super().log(logs, start_time)


def snapshot_dir(out: Path, step: int) -> Path:
    """Where :class:`Snapshots` keeps the adapter of step ``step`` of the run in ``out``."""
    return out / "snapshots" / f"step-{step:06d}"


class Snapshots(TrainerCallback):
    """Copies the weights of every saved checkpoint to ``<out>/snapshots/step-<N>/`` (kept after
    training, unlike the checkpoints) for learning curves and early stopping; atomic per
    snapshot. A LoRA checkpoint's adapter; with ``tokenizer`` (``finetune: full``) the whole
    model's weights and config plus the tokenizer, so a snapshot serves as ``model_name``."""

    ADAPTER = ("adapter_model.safetensors", "adapter_config.json")
    MODEL = ("model.safetensors", "config.json", "generation_config.json")

    def __init__(self, out: Path, tokenizer: Any = None) -> None:
        self.out = out
        self.tokenizer = tokenizer

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        src = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        dst = snapshot_dir(self.out, state.global_step)
        names = self.MODEL if self.tokenizer is not None else self.ADAPTER
        if dst.exists() or not (src / names[0]).is_file():
            return
        tmp = dst.with_name(dst.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name in names:
            if (src / name).is_file():
                shutil.copy2(src / name, tmp / name)
        if self.tokenizer is not None:
            self.tokenizer.save_pretrained(str(tmp))
        tmp.rename(dst)


class PauseAt(TrainerCallback):
    """Ends training after step ``step`` with a checkpoint: a pause at a planned step of the
    run, whose schedule (learning rate, epochs) stays the full run's. Rerun without it, the
    training resumes from that checkpoint to the end, as after a kill."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.global_step >= self.step:
            control.should_save = True
            control.should_training_stop = True


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none (musl, macOS)."""
    try:
        return cast(Callable[[int], int], ctypes.CDLL(None).malloc_trim)
    except (OSError, AttributeError):
        return None


class TrimHeap(TrainerCallback):
    """Hands the heap's free pages back to the OS after every step (glibc ``malloc_trim(0)``).

    Activations of varying length fragment glibc's heap: with the fast allocator setting of
    the study (``ALLOCATOR_ENV``: 32 MiB mmap threshold) an OC-SFT run grew by about 0.15 GB a
    minute. ``malloc_trim`` releases the free pages inside the heap too, not only its top, so
    the resident size follows the live tensors; it changes no number the run computes."""

    def __init__(self) -> None:
        self.trim = _malloc_trim()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.trim is not None:
            self.trim(0)


class EpochViews(TrainerCallback):
    """Gives the dataset the epoch number, so every epoch draws fresh views.

    The number is the Trainer's (``floor(state.epoch)``: 0 at the start, the epoch a resumed
    run continues in after a resume), never a count of this process's epochs."""

    def __init__(self, dataset: ViewsDataset[Any]) -> None:
        self.dataset = dataset

    def on_epoch_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.dataset.set_epoch(math.floor(state.epoch or 0.0))


def training_arguments(
    cfg: TrainingConfig | JudgeTrainingConfig, student: TrainableModel, workdir: Path
) -> TrainingArguments:
    """TrainingArguments with every device-dependent switch set explicitly (a student's or a
    trained judge's: ``cfg.train``, ``cfg.seed``, the model's device and dtype)."""
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
        save_strategy="steps",
        save_steps=cfg.train.save_steps,
        save_total_limit=None,  # resume.CheckpointMarker rotates, after a save is complete
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


def run_callbacks(
    cfg: TrainingConfig | JudgeTrainingConfig,
    dataset: ViewsDataset[Any],
    pause_at: int | None,
    callbacks: Sequence[TrainerCallback],
    tokenizer: Any = None,
) -> list[TrainerCallback]:
    """The run folder's callbacks (views per epoch, checkpoint markers, snapshots, the progress
    log, the pause, the heap trim), then the caller's: a student's and a judge's alike
    (``tokenizer``: a fully fine-tuned model's, kept in its snapshots)."""
    out = cfg.resolved_output_dir
    full = cfg.finetune == "full"
    return [
        EpochViews(dataset),
        CheckpointMarker(cfg.train.save_total_limit),
        *([Snapshots(out, tokenizer if full else None)] if cfg.train.keep_snapshots else []),
        ProgressLog(out / TRAIN_LOG, save_steps=cfg.train.save_steps),
        *([PauseAt(pause_at)] if pause_at is not None else []),
        TrimHeap(),
        *callbacks,
    ]
