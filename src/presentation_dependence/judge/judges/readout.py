"""The verdict readout judge: the N-way judge prompt, then one forward pass reads P(verdict).

The prompt is the generative judge's (:mod:`~presentation_dependence.judge.judges.generative`: the same
template, rendered as one user turn with the model's own chat template), followed by the
*answer skeleton* up to the verdict slot, e.g. ``Verdict: [[``. The model runs once over that
text and the distribution at the slot is read over the N verdict labels ``A``, ``B``, ..
(softmax over those N token ids alone, as the expected-grade readout reads grades:
:meth:`~presentation_dependence.readout.backend.TransformersBackend.grade_probs`; renormalised in
float64, so the N probabilities sum to 1 to float64 precision). Every label
must be exactly one token where the skeleton puts it: ``tokenize(prefix + label)`` equals
``tokenize(prefix)`` plus one token, checked on every prompt (else
:class:`VerdictLabelTokenizationError`, a
:class:`~presentation_dependence.readout.prompt.GradeLabelTokenizationError`).

The verdict is the argmax of P(verdict); nothing is generated, so nothing can fail to parse.
Exact ties (possible when logits are rounded to a coarse dtype) are broken by a draw from
``default_rng([seed, crc32('verdict-tie'), crc32(item id), *placement])``, never by slot order,
and counted in the record. Each record keeps, in ``extra``:

* ``verdict_probs``: P(slot) in slot order (sums to 1);
* ``response_probs``: the same probabilities aligned by *response* index
  (``response_probs[placement[j]] = verdict_probs[j]``), so placements of one item compare
  directly;
* ``tied``: how many slots shared the maximum (1 = no tie).

The judgement text is ``P(A)=<repr> P(B)=<repr> .. Verdict: [[X]]`` (full float precision, so
two runs have identical text exactly when their probabilities are bit-identical) and goes
through the strict parser like any other judgement. Prompt version:
``<template version>+readout:<first 8 hex of sha256(skeleton)>``; parser version
``readout-argmax-v1``.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import check_counts, opt
from presentation_dependence.judge.items.records import JudgeRecord, JudgeRequest, slot_letter
from presentation_dependence.judge.judges.base import JUDGES, JudgeOptions, describe_judge
from presentation_dependence.judge.judges.generation import chat_text, load_generator
from presentation_dependence.judge.judges.generative import (
    ChatModelJudge,
    JudgePromptOptions,
    check_template,
)
from presentation_dependence.judge.parser import verdict_record
from presentation_dependence.readout.options import BatchedModelOptions
from presentation_dependence.readout.prompt import BuiltPrompt, GradeLabelTokenizationError
from presentation_dependence.readout.speed import check_compile, resolve_compile
from presentation_dependence.seeding import rng_from

__all__ = [
    "READOUT_PARSER_VERSION",
    "ReadoutJudge",
    "ReadoutJudgeOptions",
    "VerdictLabelTokenizationError",
    "argmax_verdict",
    "check_verdict_labels",
    "readout_prompt",
]

logger = logging.getLogger(__name__)

READOUT_PARSER_VERSION = "readout-argmax-v1"


class VerdictLabelTokenizationError(GradeLabelTokenizationError):
    """A verdict letter is not exactly one token right after the answer skeleton."""


@dataclass(frozen=True)
class ReadoutJudgeOptions(BatchedModelOptions, JudgePromptOptions):
    """Options of the verdict readout judge (one forward pass per judgement)."""

    dtype: str = opt(
        "float32",
        "float32 (default: bfloat16 logits tie often between two letters), bfloat16, float16, auto",
    )
    compile: bool | Literal["auto"] = opt(
        "auto",
        "torch.compile the decoder layers, the trained adapter's included (auto = in bfloat16 "
        "on CPU with a C++ compiler; off in float32 and on GPU); verdict probabilities differ "
        "from eager by ~1e-6 (docs/SCORING.md section 4); train-judge trains through the same "
        "compiled layers",
    )
    seed: int = opt(0, "seed of the tie-breaking draw (recorded)")
    template: str = opt("judge_nway_verdict_v1", "judge prompt template id (as the generative)")
    skeleton: str = opt("Verdict: [[", "assistant text written before the verdict letter")
    adapter_path: str | None = opt(
        None,
        "a trained judge's LoRA adapter folder (<output_dir>/adapter of 'presdep train-judge', "
        "docs/JUDGE-TRAINING.md) on top of model_name, not merged; null = the base model",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_template(self.template)
        check_counts(self, "max_response_chars", nullable=True)
        check_compile(self.compile)
        if self.adapter_path is not None and (
            not isinstance(self.adapter_path, str) or not self.adapter_path
        ):
            raise ConfigError(f"adapter_path must be a path or null, got {self.adapter_path!r}")


def check_verdict_labels(tokenizer: Any, prefix: str, labels: Sequence[str]) -> tuple[int, ...]:
    """The token id of every verdict label right after ``prefix``, each checked to be one token:
    ``tokenize(prefix + label) == tokenize(prefix) + [id]``; ids distinct."""

    def ids_of(text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])

    base = ids_of(prefix)
    out: list[int] = []
    for label in labels:
        full = ids_of(prefix + label)
        if len(full) != len(base) + 1 or full[: len(base)] != base:
            k = 0
            while k < min(len(base), len(full)) and base[k] == full[k]:
                k += 1
            k = max(0, min(k, len(base) - 2))
            pieces = tokenizer.convert_ids_to_tokens
            raise VerdictLabelTokenizationError(
                f"verdict label {label!r} is not a single token after the answer skeleton "
                f"{prefix[-24:]!r}: the tokenizer gives {pieces(full[k:])} (ids {full[k:]}) where "
                f"the prefix alone gives {pieces(base[k:])}. The verdict readout needs every "
                "letter to be exactly one token in context. Fix: end the skeleton (option "
                "'skeleton') with a character that does not merge with the letter, e.g. '[['"
            )
        out.append(full[-1])
    if len(set(out)) != len(out):
        raise VerdictLabelTokenizationError(
            f"verdict labels {tuple(labels)!r} map to repeated token ids {out} after "
            f"{prefix[-24:]!r}; every letter needs its own token"
        )
    return tuple(out)


def readout_prompt(
    tokenizer: Any,
    where: str,
    user_text: str,
    req: JudgeRequest,
    o: ReadoutJudgeOptions,
    max_context: int | None = None,
) -> tuple[BuiltPrompt, tuple[int, ...]]:
    """The readout prompt of ``req`` (its user turn ``user_text`` in the chat template of
    ``tokenizer``, then the skeleton and a teacher-forced first letter; the verdict is read at
    ``grade_positions[0]``) and the N label token ids, checked in this prompt's context. The
    judge and its training (``training/judge_data.py``) build prompts only here."""
    head = chat_text(tokenizer, where, user_text, o.chat_template_kwargs)
    prefix = head + o.skeleton
    labels = [slot_letter(j) for j in range(req.n)]
    label_ids = check_verdict_labels(tokenizer, prefix, labels)
    base = list(tokenizer(prefix, add_special_tokens=False)["input_ids"])
    if max_context is not None and len(base) + 1 > max_context:
        raise ConfigError(
            f"item {req.item.item_id!r}: {len(base)} prompt tokens exceed the model's context "
            f"{max_context}. Fix: lower max_response_chars"
        )
    built = BuiltPrompt(
        text=prefix + labels[0],
        input_ids=(*base, label_ids[0]),
        grade_positions=(len(base),),
        passages=tuple(req.shown),
    )
    return built, label_ids


def argmax_verdict(probs: np.ndarray, seed: int, req: JudgeRequest) -> tuple[int, int]:
    """(slot, tied): the most probable slot, an exact tie broken by a seeded draw."""
    top = np.flatnonzero(probs == probs.max())
    if top.size == 1:
        return int(top[0]), 1
    rng = rng_from(seed, "verdict-tie", req.item.item_id, *req.placement)
    return int(top[int(rng.integers(top.size))]), int(top.size)


@JUDGES.register("readout")
class ReadoutJudge(ChatModelJudge):
    """The N-way verdict readout on a transformers causal LM (module docstring)."""

    config_cls: ClassVar[type[JudgeOptions]] = ReadoutJudgeOptions
    judge_class: ClassVar[str] = "readout"
    options: ReadoutJudgeOptions
    parser_version = READOUT_PARSER_VERSION

    @property
    def prompt_version(self) -> str:
        sk = hashlib.sha256(self.options.skeleton.encode("utf-8")).hexdigest()[:8]
        return f"{self.template.version}+readout:{sk}"

    def _load(self) -> Any:
        """The base model, with the trained adapter of ``adapter_path`` attached (unmerged)."""
        if self._backend is None:
            o = self.options
            self._backend, self._snapshot = load_generator(o, o.adapter_path)
        return self._backend

    def build(self, req: JudgeRequest) -> tuple[BuiltPrompt, tuple[int, ...]]:
        """The tokenized prompt (chat template + skeleton + a teacher-forced letter at the slot)
        and the N label token ids, checked in this prompt's context."""
        backend = self._load()
        return readout_prompt(
            backend.tokenizer,
            backend.path,
            self.prompt_text(req),
            req,
            self.options,
            backend.max_context,
        )

    def judge(
        self,
        requests: Sequence[JudgeRequest],
        *,
        batch_size: int | None = None,
        one_at_a_time: bool | None = None,
    ) -> list[JudgeRecord]:
        backend = self._load()
        o = self.options
        built = [self.build(r) for r in requests]
        out: list[JudgeRecord | None] = [None] * len(requests)
        passes, seconds = 0, 0.0
        for n in sorted({r.n for r in requests}):  # one label set per forward pass
            idx = [i for i, r in enumerate(requests) if r.n == n]
            probs, stats = backend.grade_probs(
                [built[i][0] for i in idx],
                built[idx[0]][1],
                batch_size=o.batch_size if batch_size is None else batch_size,
                one_at_a_time=o.one_at_a_time if one_at_a_time is None else one_at_a_time,
                num_threads=o.num_threads,
                compile=resolve_compile(o.compile, backend.device, backend.dtype),
            )
            passes, seconds = passes + stats.forward_passes, seconds + stats.seconds
            for i, p in zip(idx, probs, strict=True):
                out[i] = self._record(requests[i], p[0], len(built[i][0].input_ids) - 1)
        logger.info("read %d verdicts in %d forward passes, %.1f s", len(requests), passes, seconds)
        return [r for r in out if r is not None]

    def _record(self, req: JudgeRequest, p32: np.ndarray, prompt_tokens: int) -> JudgeRecord:
        probs = np.asarray(p32, dtype=np.float64)
        probs = probs / probs.sum()  # the backend's float32 softmax, renormalised in float64
        slot, tied = argmax_verdict(probs, self.options.seed, req)
        shown = " ".join(f"P({slot_letter(j)})={float(p)!r}" for j, p in enumerate(probs))
        by_response = [float(probs[req.placement.index(i)]) for i in range(req.n)]
        return verdict_record(
            req,
            f"{shown} Verdict: [[{slot_letter(slot)}]]",
            "strict",
            finish="readout",
            prompt_tokens=prompt_tokens,
            extra={
                "verdict_probs": [float(p) for p in probs],
                "response_probs": by_response,
                "tied": tied,
            },
        )

    def describe(self) -> dict[str, Any]:
        return describe_judge(
            self.judge_class,
            self.identity(),
            self.options,
            **self._load().describe(),
            decoding="none: one forward pass, P(verdict) over the N letters, argmax",
            skeleton=self.options.skeleton,
            adapter_path=self.options.adapter_path,
        )
