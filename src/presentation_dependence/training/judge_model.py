"""The trainable verdict readout judge: base + fresh LoRA adapter, and its differentiable readout.

:func:`verdict_readout` is the readout of ``judge/judges/readout.py`` with gradients: logits at
the verdict position only (``logits_to_keep``), the N letter logits softmaxed in float32 over
the item's real slots, then realigned from slots to responses, so ``log_probs[q, v, d]`` is
log P(the verdict names response d) in view v of item q, whatever slot d was shown in.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from presentation_dependence.readout.adapter import takes_logits_to_keep
from presentation_dependence.training.judge_config import JudgeTrainingConfig
from presentation_dependence.training.model import (
    TrainableModel,
    load_trainable,
    log_loaded,
    readout_logits,
)

__all__ = ["JudgeModel", "load_judge_model", "verdict_readout"]


@dataclass(kw_only=True)
class JudgeModel(TrainableModel):
    """A LoRA-wrapped causal LM ready to train as a verdict readout judge (in ``sdpa``
    attention: the readout judge's options name none)."""

    max_context: int | None


def load_judge_model(cfg: JudgeTrainingConfig, *, dtype: str | None = None) -> JudgeModel:
    """The base model of ``cfg.judge`` in its dtype (or ``dtype``: a run continued in another
    one), wrapped with a new LoRA adapter."""
    t0 = time.perf_counter()
    options = cfg.judge_options if dtype is None else cfg.judge_options_with(dtype=dtype)
    tb = load_trainable(options, cfg.lora, seed=cfg.seed, finetune="lora")
    text_config = tb.base.config.get_text_config()
    judge = JudgeModel(
        model=tb.model,
        tokenizer=tb.tokenizer,
        resolved=tb.resolved,
        dtype=tb.dtype,
        device=tb.device,
        use_logits_to_keep=takes_logits_to_keep(tb.model),
        max_context=getattr(text_config, "max_position_embeddings", None),
        compiled=tb.compiled,
    )
    log_loaded("judge", judge.describe(), time.perf_counter() - t0)
    return judge


def verdict_readout(
    model: Any, batch: Mapping[str, torch.Tensor], *, use_logits_to_keep: bool = True
) -> torch.Tensor:
    """log P(verdict = response d) per item, view and response, (Q, V, N), float32,
    differentiable; 0 on padding responses. The model runs once over the R distinct prompts;
    ``view_rows`` spreads the rows back to (item, view)."""
    readout = batch["readout_positions"]  # (R,)
    slot_mask = batch["slot_mask"]  # (R, N)
    rows, n = slot_mask.shape
    logits, column = readout_logits(
        model, batch, readout, readout, use_logits_to_keep=use_logits_to_keep
    )  # logits: (R, K, vocab)
    at = logits[torch.arange(rows, device=logits.device), column.to(logits.device)]  # (R, vocab)
    letters = at.gather(-1, batch["label_ids"].to(at.device)).float()  # (R, N)
    neg = torch.full_like(letters, float("-inf"))
    lp = torch.log_softmax(torch.where(slot_mask, letters, neg), dim=-1)
    lp = torch.where(slot_mask, lp, torch.zeros_like(lp))
    aligned = torch.zeros((rows, n + 1), dtype=lp.dtype, device=lp.device)
    aligned = aligned.scatter(1, batch["slot_responses"].to(lp.device), lp)[:, :n]
    return aligned[batch["view_rows"]]
