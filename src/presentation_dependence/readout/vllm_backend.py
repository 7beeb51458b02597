"""A vLLM backend for the readout: the same prompts and skeleton, P(grade) at every slot.

Install with the ``vllm`` extra (``pip install 'presentation-dependence[vllm]'``); without it
this module imports, and :meth:`VllmBackend.load` raises :class:`MissingExtraError` naming the
extra. GPU only.

How the four grade probabilities are read exactly. vLLM's ``prompt_logprobs=k`` returns the
top-k tokens (plus the actual prompt token) at every prompt position, so a grade token outside
the top k would be silently missing. Instead, for slot ``i`` of a prompt we submit the prompt's
token prefix up to (not including) that slot's grade token and ask for one generated token with
``allowed_token_ids`` = the grade token ids and ``logprobs`` = the number of grades, on an engine
with ``logprobs_mode="processed_logprobs"`` (the log-probabilities after the allowed-token mask).
The distribution at that position is the readout's: ``softmax`` over the grade tokens' logits,
which equals the renormalised returned log-probabilities. Every slot must return every grade
token; if one is missing the backend raises (it never drops a grade). The B prefixes of a prompt
share their tokens, so automatic prefix caching runs the shared part once.

Tensor and data parallelism come from the options (``tensor_parallel_size``,
``data_parallel_size``); ``batch_invariant`` sets ``VLLM_BATCH_INVARIANT=1`` before the engine
starts (results then do not depend on batch composition) and is recorded by :meth:`describe`.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from presentation_dependence.optional import import_optional
from presentation_dependence.readout.backend import ForwardStats
from presentation_dependence.readout.prompt import BuiltPrompt

__all__ = ["VllmBackend", "slot_requests", "vllm_available"]

logger = logging.getLogger(__name__)


def vllm_available() -> bool:
    """Whether vLLM imports and torch sees a CUDA device."""
    try:
        import torch
        import vllm  # noqa: F401
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def slot_requests(prompts: Sequence[BuiltPrompt]) -> list[tuple[int, int, list[int]]]:
    """``(prompt index, slot index, token prefix)`` for every slot: the prompt up to its grade."""
    out = []
    for p_idx, p in enumerate(prompts):
        for s_idx, g in enumerate(p.grade_positions):
            out.append((p_idx, s_idx, list(p.input_ids[:g])))
    return out


class VllmBackend:
    """A vLLM engine ready to read grade distributions at slots (see the module doc)."""

    def __init__(self, llm: Any, *, path: str, revision: str | None, settings: dict[str, Any]):
        self.llm = llm
        self.tokenizer = llm.get_tokenizer()
        self.path = path
        self.revision = revision
        self.settings = settings
        self.device = "cuda"

    @classmethod
    def load(
        cls,
        path: str,
        *,
        revision: str | None = None,
        dtype: str = "auto",
        trust_remote_code: bool = False,
        tensor_parallel_size: int = 1,
        data_parallel_size: int = 1,
        batch_invariant: bool = False,
        gpu_memory_utilization: float = 0.85,
        max_model_len: int | None = None,
        seed: int = 0,
    ) -> VllmBackend:
        vllm = import_optional("vllm", extra="vllm", purpose="the vLLM readout backend")
        if batch_invariant:
            os.environ["VLLM_BATCH_INVARIANT"] = "1"
        settings: dict[str, Any] = {
            "dtype": "bfloat16" if dtype == "auto" else dtype,
            "tensor_parallel_size": tensor_parallel_size,
            "data_parallel_size": data_parallel_size,
            "batch_invariant": batch_invariant,
            "gpu_memory_utilization": gpu_memory_utilization,
            "max_model_len": max_model_len,
            "seed": seed,
            "enable_prefix_caching": True,
            "logprobs_mode": "processed_logprobs",
        }
        kwargs = {k: v for k, v in settings.items() if k != "batch_invariant" and v is not None}
        if data_parallel_size == 1:
            kwargs.pop("data_parallel_size")
        t0 = time.perf_counter()
        llm = vllm.LLM(model=path, revision=revision, trust_remote_code=trust_remote_code, **kwargs)
        logger.info("vLLM loaded %s in %.1f s (%s)", path, time.perf_counter() - t0, settings)
        settings["vllm"] = getattr(vllm, "__version__", "?")
        return cls(llm, path=path, revision=revision, settings=settings)

    @property
    def max_context(self) -> int | None:
        n = self.settings.get("max_model_len")
        if n:
            return int(n)
        try:
            return int(self.llm.llm_engine.model_config.max_model_len)
        except AttributeError:
            return None

    def grade_probs(
        self,
        prompts: Sequence[BuiltPrompt],
        grade_token_ids: Sequence[int],
        *,
        batch_size: int = 1,
        one_at_a_time: bool = False,
        num_threads: int | None = None,
    ) -> tuple[list[np.ndarray], ForwardStats]:
        """P(grade) at every slot of every prompt; ``batch_size``/``one_at_a_time`` are moot."""
        vllm = import_optional("vllm", extra="vllm", purpose="the vLLM readout backend")
        grade_ids = [int(g) for g in grade_token_ids]
        params = vllm.SamplingParams(
            max_tokens=1, temperature=0.0, allowed_token_ids=grade_ids, logprobs=len(grade_ids)
        )
        reqs = slot_requests(prompts)
        t0 = time.perf_counter()
        outputs = self.llm.generate(
            [{"prompt_token_ids": ids} for _, _, ids in reqs], params, use_tqdm=False
        )
        out = [np.zeros((len(p.grade_positions), len(grade_ids))) for p in prompts]
        for (p_idx, s_idx, _), res in zip(reqs, outputs, strict=True):
            step = res.outputs[0].logprobs[0]
            missing = [g for g in grade_ids if g not in step]
            if missing:
                raise RuntimeError(
                    f"vLLM returned no log-probability for grade token(s) {missing} at slot "
                    f"{s_idx + 1} of prompt {p_idx}; refusing to drop a grade. Fix: a vLLM "
                    "version with logprobs_mode='processed_logprobs'"
                )
            lp = np.array([float(step[g].logprob) for g in grade_ids], dtype=np.float64)
            lp -= lp.max()
            probs = np.exp(lp)
            out[p_idx][s_idx] = probs / probs.sum()
            if not math.isfinite(float(out[p_idx][s_idx].sum())):
                raise RuntimeError(f"non-finite grade distribution at slot {s_idx + 1}")
        seconds = time.perf_counter() - t0
        stats = ForwardStats(
            forward_passes=1,
            prompt_tokens=sum(len(p.input_ids) for p in prompts),
            padded_tokens=sum(len(ids) for _, _, ids in reqs),
            seconds=seconds,
            pass_seconds=[seconds],
        )
        return out, stats

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "vllm",
            "path": self.path,
            "revision": self.revision,
            "dtype": self.settings["dtype"],
            "device": self.device,
            "model_class": "vllm.LLM",
            "logits_to_keep": False,
            "torch": __import__("torch").__version__,
            "transformers": __import__("transformers").__version__,
            **{f"vllm_{k}": v for k, v in self.settings.items()},
        }
