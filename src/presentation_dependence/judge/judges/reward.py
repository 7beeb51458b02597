"""The order-free reference judge (issue 37): a reward model scores each response alone.

``judge_class: reward_model`` is the embedded base with a scalar head
(``AutoModelForSequenceClassification``, ``num_labels=1``) and the LoRA adapter of ``presdep
train-reward`` (:mod:`presentation_dependence.training.reward_trainer`, trl's
``RewardTrainer``). Each response is scored in a conversation of its own, the item's prompt as
the user turn and the response as the assistant turn (:func:`reward_ids`, the encoding training
used), and the verdict is the slot whose response scored highest. No response sees another, so
the verdict is the same under every placement by construction: a placement sweep measures
0 flips, and its accuracy is the content the model reads without any position to lean on.
The record's judgement names every slot's reward; an exact tie is broken by the seeded draw
of the readout judge. Scoring runs one sequence a pass (no padding: bit-reproducible).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import opt
from presentation_dependence.judge.items.records import (
    JudgeRecord,
    JudgeRequest,
    slot_letter,
)
from presentation_dependence.judge.judges.base import (
    JUDGES,
    JudgeIdentity,
    JudgeOptions,
    describe_judge,
)
from presentation_dependence.judge.judges.readout import argmax_verdict
from presentation_dependence.judge.parser import verdict_record
from presentation_dependence.models.embedded import resolve_model
from presentation_dependence.readout.adapter import adapter_sha256
from presentation_dependence.readout.backend import resolve_device, resolve_dtype
from presentation_dependence.readout.options import ModelOptions

__all__ = [
    "REWARD_PAD",
    "RewardModelJudge",
    "RewardModelOptions",
    "load_reward_model",
    "reward_ids",
]

logger = logging.getLogger(__name__)

REWARD_PARSER_VERSION = "reward-argmax-v1"
REWARD_PROMPT_VERSION = "reward-chat-v1"  # user: the item's prompt; assistant: one response
# The pad token of training and serving: one the chat template never writes, so the head reads
# the sequence's last real token (the template's own end token is SmolLM2's default pad).
REWARD_PAD = "<|endoftext|>"
_LOCK = threading.Lock()
_MODELS: dict[tuple[Any, ...], Any] = {}


@dataclass(frozen=True)
class RewardModelOptions(ModelOptions, JudgeOptions):
    """A trained reward model (``<output_dir>/judge.yaml`` of ``presdep train-reward``)."""

    adapter_path: str | None = opt(
        None,
        "the reward model's adapter folder (<output_dir>/adapter); null = the base with an "
        "untrained head drawn from seed (chance-level verdicts: smoke runs and tests)",
    )
    max_response_chars: int | None = opt(2000, "cut each response (as in training)")
    max_length: int = opt(1024, "tokens kept of prompt + response (the end is kept)")
    num_threads: int | None = opt(None, "torch.set_num_threads; null = leave")
    seed: int = opt(0, "seed of the tie-break between equal rewards")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.adapter_path is not None and (
            not isinstance(self.adapter_path, str) or not self.adapter_path
        ):
            raise ConfigError(f"adapter_path must be a path or null, got {self.adapter_path!r}")


def reward_ids(
    tokenizer: Any, prompt: str, response: str, max_response_chars: int | None, max_length: int
) -> list[int]:
    """Token ids of one (prompt, response) conversation through the chat template, the response
    cut to ``max_response_chars`` and the ids to their last ``max_length`` (the head reads the
    end): the encoding of both training and serving."""
    cut = response.strip()[:max_response_chars] if max_response_chars else response.strip()
    messages = [
        {"role": "user", "content": prompt.strip()},
        {"role": "assistant", "content": cut},
    ]
    ids = tokenizer.apply_chat_template(messages, tokenize=True)
    ids = list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)
    return ids[-max_length:]


def load_reward_model(
    o: ModelOptions, adapter: str | None, *, seed: int = 0
) -> tuple[Any, Any, str]:
    """(model, tokenizer, snapshot) of a reward model: the base with a scalar head (initialised
    from ``seed``, without touching the global RNG), the LoRA adapter and the trained head of
    ``adapter`` attached when given; the pad token is :data:`REWARD_PAD`. The snapshot is the
    base's fingerprint plus the adapter's sha256 (or the head's seed when untrained)."""
    from peft import PeftModel
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    resolved = resolve_model(o.model_name, o.revision)
    dev = resolve_device(o.device)
    dtype = resolve_dtype(o.dtype, dev)
    tokenizer = AutoTokenizer.from_pretrained(
        resolved.path, revision=o.revision, trust_remote_code=o.trust_remote_code
    )
    if REWARD_PAD not in tokenizer.get_vocab():
        raise ConfigError(f"{resolved.path}: the tokenizer has no {REWARD_PAD} token to pad with")
    tokenizer.pad_token = REWARD_PAD
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForSequenceClassification.from_pretrained(
            resolved.path,
            num_labels=1,
            dtype=dtype,
            revision=o.revision,
            trust_remote_code=o.trust_remote_code,
        )
    model.config.pad_token_id = tokenizer.pad_token_id
    snapshot = f"{resolved.fingerprint()}+reward-head"
    if adapter is not None:
        model = PeftModel.from_pretrained(model, adapter)
        snapshot += f"+lora:{adapter_sha256(adapter)[:16]}"
    else:
        logger.warning("reward model without adapter_path: an untrained head (seed %d)", seed)
        snapshot += f":untrained-seed-{seed}"
    return model.to(dev).eval(), tokenizer, snapshot


@JUDGES.register("reward_model")
class RewardModelJudge:
    """Each response scored alone by a trained reward model; the verdict is the best slot."""

    config_cls: ClassVar[type[JudgeOptions]] = RewardModelOptions
    judge_class: ClassVar[str] = "reward_model"

    def __init__(self, options: JudgeOptions | None = None) -> None:
        if options is not None and not isinstance(options, RewardModelOptions):
            raise ConfigError(
                f"reward_model takes RewardModelOptions, got {type(options).__name__}"
            )
        self.options = options if options is not None else RewardModelOptions()
        self._loaded: tuple[Any, Any, str] | None = None

    def _load(self) -> tuple[Any, Any, str]:
        if self._loaded is None:
            o = self.options
            key = (o.model_name, o.revision, o.dtype, o.device, o.adapter_path, o.seed)
            with _LOCK:
                if key not in _MODELS:
                    _MODELS[key] = load_reward_model(o, o.adapter_path, seed=o.seed)
                self._loaded = _MODELS[key]
        return self._loaded

    @torch.inference_mode()
    def rewards(self, prompt: str, responses: Sequence[str]) -> np.ndarray:
        """The reward of each response to ``prompt`` (float64), one sequence a pass."""
        model, tokenizer, _ = self._load()
        o = self.options
        if o.num_threads:
            torch.set_num_threads(o.num_threads)
        out = []
        for r in responses:
            ids = reward_ids(tokenizer, prompt, r, o.max_response_chars, o.max_length)
            x = torch.tensor([ids], device=model.device)
            out.append(float(model(input_ids=x).logits[0, 0].float()))
        return np.asarray(out, dtype=np.float64)

    def judge(
        self,
        requests: Sequence[JudgeRequest],
        *,
        batch_size: int | None = None,
        one_at_a_time: bool | None = None,
    ) -> list[JudgeRecord]:
        """One record per request; each item's responses are scored once for all its
        placements (a reward does not depend on the slot)."""
        t0 = time.perf_counter()
        cache: dict[str, np.ndarray] = {}
        records = []
        for req in requests:
            it = req.item
            if it.item_id not in cache:
                cache[it.item_id] = self.rewards(it.prompt, it.responses)
            records.append(self._record(req, cache[it.item_id]))
        logger.info(
            "scored %d responses of %d items for %d verdicts in %.1f s",
            sum(len(r) for r in cache.values()),
            len(cache),
            len(requests),
            time.perf_counter() - t0,
        )
        return records

    def _record(self, req: JudgeRequest, by_response: np.ndarray) -> JudgeRecord:
        by_slot = np.asarray([by_response[i] for i in req.placement])
        slot, tied = argmax_verdict(by_slot, self.options.seed, req)
        shown = " ".join(f"r({slot_letter(j)})={float(r)!r}" for j, r in enumerate(by_slot))
        return verdict_record(
            req,
            f"{shown} Verdict: [[{slot_letter(slot)}]]",
            "strict",
            finish="reward",
            extra={"rewards": [float(r) for r in by_slot], "tied": tied},
        )

    def identity(self) -> JudgeIdentity:
        _, _, snapshot = self._load()
        o = self.options
        cut = hashlib.sha256(f"{o.max_response_chars}:{o.max_length}".encode()).hexdigest()[:8]
        version = f"{REWARD_PROMPT_VERSION}+{cut}"
        return JudgeIdentity(self.judge_class, snapshot, version, REWARD_PARSER_VERSION, o.seed)

    def describe(self) -> dict[str, Any]:
        return describe_judge(
            self.judge_class,
            self.identity(),
            self.options,
            decoding="none: one scalar reward per response, argmax over the slots",
            adapter_path=self.options.adapter_path,
        )
