"""The student: base model + fresh LoRA adapter, its prompt builder, and its differentiable readout.

:func:`student_readout` is the readout of ``docs/SCORING.md`` with gradients: logits are computed
at the readout positions only (``logits_to_keep`` = the sorted union of the batch's positions),
the four grade logits are softmaxed in float32, and E[g] = Σ g·P(g) is scattered from slots back
to candidates, so ``scores[q, v, d]`` is candidate d's score in view v of query q.

Speed: the student block's ``attn_implementation`` (default ``sdpa``) and ``compile`` (default
``auto``: the decoder layers, LoRA included, through ``torch.compile`` in bfloat16 on CPU) apply
here as in serving
(``readout/speed.py``); ``poe bench`` measures the OC-SFT step both ways (docs/BENCHMARKS.md).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from presentation_dependence.models.embedded import ResolvedModel, resolve_model
from presentation_dependence.optional import import_optional
from presentation_dependence.readout.adapter import takes_logits_to_keep
from presentation_dependence.readout.backend import dtype_name, resolve_device, resolve_dtype
from presentation_dependence.readout.prompt import PromptBuilder, get_template
from presentation_dependence.readout.speed import LayerCompiler, resolve_compile
from presentation_dependence.rerankers.grade import GradeReranker, GradeRerankerOptions
from presentation_dependence.training.collate import grade_token_ids
from presentation_dependence.training.config import LoraOptions

__all__ = [
    "TRAINING_CPU_DTYPE",
    "Student",
    "StudentReadout",
    "TrainableBase",
    "TrainableModel",
    "load_student",
    "load_trainable",
    "log_loaded",
    "readout_logits",
    "student_readout",
]

log = logging.getLogger(__name__)

# What ``dtype: auto`` trains in on CPU: bfloat16 on every processor, the dtype the studies'
# recipes ran in, so a run resumes with the same arithmetic on any CPU (the readout's ``auto``
# is a speed choice and is float32 where bfloat16 is not native: readout/speed.py). Name
# ``float32`` in the student block to train faster on a CPU without native bfloat16.
TRAINING_CPU_DTYPE = "bfloat16"


@dataclass(kw_only=True)
class TrainableModel:
    """A causal LM loaded for training, LoRA-wrapped (or every weight trainable): what a student
    (:class:`Student`) and a trained judge (:class:`~.judge_model.JudgeModel`) share."""

    model: Any  # peft.PeftModel
    tokenizer: Any
    resolved: ResolvedModel
    dtype: torch.dtype
    device: torch.device
    use_logits_to_keep: bool
    attn_implementation: str = "sdpa"
    compiled: bool = False

    @property
    def pad_token_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        if pad is None:
            pad = self.tokenizer.eos_token_id
        return int(pad) if pad is not None else 0

    def parameter_counts(self) -> dict[str, int]:
        total = sum(p.numel() for p in self.model.parameters())
        trainable = sum(p.numel() for p in self.model.parameters() if p.requires_grad)
        return {"total": total, "trainable": trainable}

    def describe(self) -> dict[str, Any]:
        return {
            "model_name": self.resolved.model_name,
            "resolved_path": self.resolved.path,
            "model_source": self.resolved.source,
            "revision": self.resolved.revision,
            "dtype": dtype_name(self.dtype),
            "device": str(self.device),
            "logits_to_keep": self.use_logits_to_keep,
            "attn_implementation": self.attn_implementation,
            "compiled": self.compiled,
            "parameters": self.parameter_counts(),
        }


@dataclass(kw_only=True)
class Student(TrainableModel):
    """A LoRA-wrapped causal LM ready to train on the readout."""

    builder: PromptBuilder
    grade_token_ids: tuple[int, ...]


def load_student(
    options: GradeRerankerOptions,
    lora: LoraOptions,
    *,
    reranker_class: type[GradeReranker] = GradeReranker,
    seed: int = 0,
    finetune: str = "lora",
) -> Student:
    """Load the base model of ``options`` in its dtype and wrap it with a new LoRA adapter.

    ``finetune="full"`` trains every weight instead (no adapter). The device is where training
    will run (the Trainer moves the model there): cuda when available unless
    ``options.device`` says cpu. With ``options.compile`` (resolved for that device) the decoder
    layers are compiled for good (:class:`~presentation_dependence.readout.speed.LayerCompiler`).
    """
    t0 = time.perf_counter()
    tb = load_trainable(options, lora, seed=seed, finetune=finetune)
    builder = _prompt_builder(options, tb.tokenizer, tb.base, reranker_class)
    student = Student(
        model=tb.model,
        tokenizer=tb.tokenizer,
        builder=builder,
        grade_token_ids=grade_token_ids(builder),
        resolved=tb.resolved,
        dtype=tb.dtype,
        device=tb.device,
        use_logits_to_keep=takes_logits_to_keep(tb.model),
        attn_implementation=options.attn_implementation,
        compiled=tb.compiled,
    )
    log_loaded("student", student.describe(), time.perf_counter() - t0)
    return student


@dataclass
class TrainableBase:
    """A base causal LM loaded for training, wrapped with a fresh LoRA adapter (or not)."""

    model: Any
    base: Any
    tokenizer: Any
    resolved: ResolvedModel
    dtype: torch.dtype
    device: torch.device
    compiled: bool


def load_trainable(options: Any, lora: LoraOptions, *, seed: int, finetune: str) -> TrainableBase:
    """The base model of ``options`` (any :class:`~presentation_dependence.readout.options.
    ModelOptions`; ``attn_implementation`` and ``compile`` where it has them) in its dtype,
    wrapped with a new LoRA adapter (``finetune="full"``: every weight trainable). The device is
    where training will run (the Trainer moves the model there): cuda when available unless
    ``options.device`` says cpu."""
    peft = import_optional("peft", extra="train", purpose="training a LoRA adapter")
    device = resolve_device(options.device)
    dtype = resolve_dtype(options.dtype, device, cpu_auto=TRAINING_CPU_DTYPE)
    compiled = resolve_compile(getattr(options, "compile", False), device, dtype)
    resolved = resolve_model(options.model_name, options.revision)
    tokenizer, base = _load_base(options, resolved, dtype)
    model = _trainable(peft, base, lora, seed, finetune)
    if compiled:
        LayerCompiler(model).enable()
    return TrainableBase(model, base, tokenizer, resolved, dtype, device, compiled)


def log_loaded(what: str, d: Mapping[str, Any], seconds: float) -> None:
    """One log line for a loaded trainable model (``d``: its ``describe()``)."""
    log.info(
        "%s %s (%s) in %s, %s attention%s: %d trainable of %d parameters, loaded in %.1f s",
        what,
        d["model_name"],
        d["revision"],
        d["dtype"],
        d["attn_implementation"],
        ", compiled layers" if d["compiled"] else "",
        d["parameters"]["trainable"],
        d["parameters"]["total"],
        seconds,
    )


def _load_base(options: Any, resolved: ResolvedModel, dtype: torch.dtype) -> tuple[Any, Any]:
    """The tokenizer and the base causal LM of ``resolved``, in ``dtype``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    hub_revision = resolved.revision if resolved.source == "hub" else None
    tokenizer = AutoTokenizer.from_pretrained(
        resolved.path, revision=hub_revision, trust_remote_code=options.trust_remote_code
    )
    base: Any = AutoModelForCausalLM.from_pretrained(
        resolved.path,
        revision=hub_revision,
        dtype=dtype,
        trust_remote_code=options.trust_remote_code,
        attn_implementation=getattr(options, "attn_implementation", "sdpa"),
    )
    if getattr(base, "hf_quantizer", None) is not None:  # MACHINE-NOTES: GGUF-loaded models
        base.hf_quantizer = None
        base.is_quantized = False
    return tokenizer, base


def _trainable(peft: Any, base: Any, lora: LoraOptions, seed: int, finetune: str) -> Any:
    """``base`` with every weight trainable (``finetune="full"``) or wrapped with a fresh LoRA
    adapter (its A matrices drawn from ``seed``)."""
    if finetune == "full":
        base.requires_grad_(True)
        return base
    torch.manual_seed(seed)  # the LoRA A init
    config = peft.LoraConfig(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=list(lora.target_modules),
        bias="none",
        task_type="CAUSAL_LM",
    )
    return peft.get_peft_model(base, config)


def _prompt_builder(
    options: GradeRerankerOptions,
    tokenizer: Any,
    base: Any,
    reranker_class: type[GradeReranker],
) -> PromptBuilder:
    """The student's prompt builder; the prompt budget defaults to the base's context length."""
    budget = options.max_prompt_tokens
    if budget is None:
        text_config = base.config.get_text_config()
        budget = getattr(text_config, "max_position_embeddings", None)
    return PromptBuilder(
        tokenizer,
        get_template(options.template),
        options.grade_labels,
        max_passage_chars=options.max_passage_chars,
        max_prompt_tokens=budget,
        chat_template_kwargs=reranker_class.chat_template_kwargs,
    )


def readout_logits(
    model: Any,
    batch: Mapping[str, torch.Tensor],
    positions: torch.Tensor,
    read: torch.Tensor,
    *,
    use_logits_to_keep: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One forward pass over a batch's left-padded prompts: the logits (R, K, vocab) and the
    column in them of each of ``positions``. With ``use_logits_to_keep`` the logits are computed
    at the positions ``read`` only (sorted, so K is their count; a position not among them, as
    padding's, gets an in-range column); without, at every position (K = L)."""
    kwargs: dict[str, Any] = {
        "input_ids": batch["input_ids"],
        "attention_mask": batch["attention_mask"],
        "position_ids": batch["position_ids"],
        "use_cache": False,
    }
    if use_logits_to_keep:
        keep = torch.unique(read)  # sorted
        kwargs["logits_to_keep"] = keep
        column = torch.searchsorted(keep, positions).clamp(max=keep.numel() - 1)
    else:
        column = positions
    return model(**kwargs).logits, column


@dataclass(frozen=True)
class StudentReadout:
    """The differentiable readout of a batch, candidate-aligned.

    ``scores[q, v, d]`` is E[g] of candidate d in view v of query q, ``log_probs[q, v, d]`` its
    log P(g) over the G grade labels (float32), ``slots[q, v, d]`` the 0-based slot it was shown
    in; padding columns hold 0 (slot −1).
    """

    scores: torch.Tensor
    log_probs: torch.Tensor
    slots: torch.Tensor


def student_readout(
    model: Any,
    batch: Mapping[str, torch.Tensor],
    grade_token_ids: Sequence[int],
    *,
    use_logits_to_keep: bool = True,
) -> StudentReadout:
    """E[g], log P(g) and slot per candidate and view, differentiable.

    The model runs once over the batch's R distinct prompts; ``view_rows`` spreads the rows
    back to (query, view).
    """
    readout = batch["readout_positions"]
    slot_mask = batch["slot_mask"]
    rows, n = readout.shape
    logits, column = readout_logits(
        model, batch, readout, readout[slot_mask], use_logits_to_keep=use_logits_to_keep
    )  # logits: (rows, K, vocab)
    grade_ids = torch.as_tensor(list(grade_token_ids), dtype=torch.long, device=logits.device)
    num_grades = grade_ids.numel()
    grade_logits = logits.index_select(-1, grade_ids)  # (rows, K, G)
    picked = grade_logits.gather(1, column.unsqueeze(-1).expand(-1, -1, num_grades))
    log_probs = torch.log_softmax(picked.float(), dim=-1)  # (rows, n slots, G)
    values = torch.arange(num_grades, dtype=torch.float32, device=log_probs.device)
    zero = torch.zeros((), device=log_probs.device)
    slot_scores = torch.where(slot_mask, log_probs.exp() @ values, zero)
    slot_lp = torch.where(slot_mask.unsqueeze(-1), log_probs, zero)
    cand = batch["slot_candidates"]  # (rows, n): the candidate each slot shows (n on padding)
    aligned = torch.zeros((rows, n + 1), dtype=slot_scores.dtype, device=slot_scores.device)
    aligned = aligned.scatter(1, cand, slot_scores)[:, :n]
    aligned_lp = torch.zeros((rows, n + 1, num_grades), dtype=slot_lp.dtype, device=slot_lp.device)
    aligned_lp = aligned_lp.scatter(1, cand.unsqueeze(-1).expand(-1, -1, num_grades), slot_lp)
    slot_index = torch.arange(n, device=cand.device).expand(rows, n)
    slots = torch.full((rows, n + 1), -1, dtype=torch.long, device=cand.device)
    slots = slots.scatter(1, cand, torch.where(slot_mask, slot_index, -1))[:, :n]
    view_rows = batch["view_rows"]  # (Q, V): identical views share a row
    return StudentReadout(
        scores=aligned[view_rows], log_probs=aligned_lp[:, :n][view_rows], slots=slots[view_rows]
    )
