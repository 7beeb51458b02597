"""A transformers backend for the readout: load a causal LM, run prompts, read grade slots.

Several prompts may share one forward pass (``batch_size``). They are LEFT-padded; the
attention mask hides the padding and ``position_ids = cumsum(mask) - 1`` (clipped at 0) gives
every real token the position it has when run alone, so the slot positions only shift by the
padding length. Logits are computed only at the readout positions (``logits_to_keep`` with a
tensor of positions where the model's ``forward`` takes it, else the full logits are sliced),
and a softmax over the grade token ids alone gives P(g) per slot.

``one_at_a_time=True`` runs every prompt alone (no padding, no batch neighbours): the result
for a prompt depends on that prompt only, bit for bit on one machine, thread count, dtype,
attention kernel and compile setting.

Speed (``readout/speed.py``, chosen by ``poe bench``): the attention kernel is fixed at load
(``attn_implementation``, default ``sdpa``); ``compile=True`` in :meth:`grade_probs` runs the
decoder layers through ``torch.compile`` for that call. One prompt per pass (``batch_size`` 1)
is also the fast path: an unpadded prompt needs no attention mask, so SDPA runs its causal
kernel, while a padded batch needs the masked one (and computes the padding).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import torch

from presentation_dependence.errors import ConfigError
from presentation_dependence.readout.options import DTYPE_NAMES, check_device, check_dtype
from presentation_dependence.readout.prompt import BuiltPrompt
from presentation_dependence.readout.speed import (
    DEFAULT_ATTN_IMPLEMENTATION,
    LayerCompiler,
    check_attn_implementation,
    cpu_default_dtype,
)

__all__ = [
    "DTYPES",
    "GPU_DEFAULT_DTYPE",
    "ForwardStats",
    "TransformersBackend",
    "resolve_device",
    "resolve_dtype",
]

logger = logging.getLogger(__name__)

# ``dtype: auto`` on CPU is :func:`~presentation_dependence.readout.speed.cpu_default_dtype`
# (bfloat16 where the processor has it natively, else float32). One-prompt-per-pass scoring is
# bitwise reproducible in either; padded bfloat16 batches are not (up to 0.07 apart), hence
# batch_size 1 by default.
GPU_DEFAULT_DTYPE: Final[str] = "bfloat16"

DTYPES: Final[dict[str, torch.dtype]] = {name: getattr(torch, name) for name in DTYPE_NAMES}


def resolve_device(device: str) -> torch.device:
    """``auto`` -> cuda when available, else cpu."""
    check_device(device)
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device {device!r} requested but torch sees no CUDA device")
    return torch.device(device)


def resolve_dtype(dtype: str, device: torch.device, *, cpu_auto: str | None = None) -> torch.dtype:
    """``auto`` -> bfloat16 on GPU; on CPU ``cpu_auto`` when given, else bfloat16 where the
    processor has it natively and float32 elsewhere (readout/speed.py)."""
    check_dtype(dtype)
    if dtype == "auto":
        on_cpu = cpu_auto or cpu_default_dtype()
        dtype = GPU_DEFAULT_DTYPE if device.type == "cuda" else on_cpu
    return DTYPES[dtype]


def accelerator_name(device: torch.device) -> str | None:
    """The GPU's name where ``device`` is one (recorded in provenance: a GPU's bfloat16 kernels
    round differently from a CPU's), else None."""
    if device.type != "cuda":
        return None
    return str(torch.cuda.get_device_name(device))


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@dataclass
class ForwardStats:
    """What running a set of prompts cost."""

    forward_passes: int = 0
    prompt_tokens: int = 0  # real tokens, padding excluded
    padded_tokens: int = 0  # tokens the model actually ran, padding included
    seconds: float = 0.0
    pass_seconds: list[float] = field(default_factory=list)


class TransformersBackend:
    """A causal LM and its tokenizer, ready to read grade distributions at slots."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        path: str,
        revision: str | None,
        device: torch.device,
        dtype: torch.dtype,
        attn_implementation: str | None = None,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.path = path
        self.revision = revision
        self.device = device
        self.dtype = dtype
        params = inspect.signature(model.forward).parameters
        self.supports_logits_to_keep = "logits_to_keep" in params
        pad = tokenizer.pad_token_id
        if pad is None:
            pad = tokenizer.eos_token_id
        self.pad_token_id = int(pad) if pad is not None else 0
        self.attn_implementation = attn_implementation or getattr(
            model.config, "_attn_implementation", None
        )
        self._compiler: LayerCompiler | None = None

    @property
    def compiler(self) -> LayerCompiler:
        """The model's compiled decoder layers, made on first use (:mod:`.speed`)."""
        if self._compiler is None:
            self._compiler = LayerCompiler(self.model)
        return self._compiler

    @classmethod
    def load(
        cls,
        path: str,
        *,
        revision: str | None = None,
        dtype: str = "auto",
        device: str = "auto",
        trust_remote_code: bool = False,
        attn_implementation: str = DEFAULT_ATTN_IMPLEMENTATION,
    ) -> TransformersBackend:
        """Load model and tokenizer from a local folder or a hub name (at ``revision``)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        check_attn_implementation(attn_implementation)
        dev = resolve_device(device)
        tdtype = resolve_dtype(dtype, dev)
        t0 = time.perf_counter()
        tokenizer = AutoTokenizer.from_pretrained(
            path, revision=revision, trust_remote_code=trust_remote_code
        )
        model: Any = AutoModelForCausalLM.from_pretrained(
            path,
            revision=revision,
            dtype=tdtype,
            trust_remote_code=trust_remote_code,
            attn_implementation=attn_implementation,
        )
        model.to(dev)
        model.eval()
        logger.info(
            "loaded %s (hub revision %s) as %s on %s with %s attention in %.1f s",
            path,
            revision,
            dtype_name(tdtype),
            dev,
            attn_implementation,
            time.perf_counter() - t0,
        )
        return cls(
            model,
            tokenizer,
            path=path,
            revision=revision,
            device=dev,
            dtype=tdtype,
            attn_implementation=attn_implementation,
        )

    @property
    def max_context(self) -> int | None:
        """The model's context length, if its config or tokenizer states one."""
        config = self.model.config
        text_config = config.get_text_config() if hasattr(config, "get_text_config") else config
        n = getattr(text_config, "max_position_embeddings", None)
        if isinstance(n, int) and n > 0:
            return n
        m = getattr(self.tokenizer, "model_max_length", None)
        return int(m) if isinstance(m, int) and 0 < m < 10**8 else None

    def grade_probs(
        self,
        prompts: Sequence[BuiltPrompt],
        grade_token_ids: Sequence[int],
        *,
        batch_size: int = 1,
        one_at_a_time: bool = False,
        num_threads: int | None = None,
        compile: bool = False,
    ) -> tuple[list[np.ndarray], ForwardStats]:
        """P(grade) at every slot of every prompt: one ``(slots, grades)`` float64 array each.

        Prompts are run in the given order, ``batch_size`` per forward pass (1 when
        ``one_at_a_time``); with ``compile`` through the compiled decoder layers.
        """
        if num_threads is not None:
            torch.set_num_threads(num_threads)
        bs = 1 if one_at_a_time else max(1, batch_size)
        stats = ForwardStats()
        out: list[np.ndarray] = []
        t_all = time.perf_counter()
        compiler = self.compiler if compile or self._compiler is not None else None
        with compiler.active(compile) if compiler is not None else contextlib.nullcontext():
            for start in range(0, len(prompts), bs):
                batch = prompts[start : start + bs]
                t0 = time.perf_counter()
                out.extend(self._forward(batch, grade_token_ids, stats))
                stats.pass_seconds.append(time.perf_counter() - t0)
        stats.seconds = time.perf_counter() - t_all
        return out, stats

    def grade_probs_equal_lengths(
        self,
        prompts: Sequence[BuiltPrompt],
        grade_token_ids: Sequence[int],
        *,
        max_batch: int,
        num_threads: int | None = None,
        compile: bool = False,
    ) -> tuple[list[np.ndarray], list[ForwardStats]]:
        """P(g) of every prompt, as :meth:`grade_probs`, with prompts of equal token length
        sharing a pass (up to ``max_batch``, in input order): no padding, so each row sees what
        it sees alone. Returns the arrays in input order and, per prompt, the stats of the pass
        it opened (an empty :class:`ForwardStats` for one that joined an earlier prompt's pass)."""
        by_length: dict[int, list[int]] = {}
        for i, p in enumerate(prompts):
            by_length.setdefault(len(p.input_ids), []).append(i)
        out: list[np.ndarray | None] = [None] * len(prompts)
        stats = [ForwardStats() for _ in prompts]
        for idx in by_length.values():
            for start in range(0, len(idx), max(1, max_batch)):
                part = idx[start : start + max(1, max_batch)]
                probs, st = self.grade_probs(
                    [prompts[i] for i in part],
                    grade_token_ids,
                    batch_size=len(part),
                    num_threads=num_threads,
                    compile=compile,
                )
                stats[part[0]] = st
                for i, pr in zip(part, probs, strict=True):
                    out[i] = pr
        return [o for o in out if o is not None], stats

    @torch.inference_mode()
    def _forward(
        self, batch: Sequence[BuiltPrompt], grade_token_ids: Sequence[int], stats: ForwardStats
    ) -> list[np.ndarray]:
        lengths = [len(p.input_ids) for p in batch]
        width = max(lengths)
        ids = torch.full((len(batch), width), self.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        rows: list[list[int]] = []  # readout positions per row, in padded coordinates
        for b, (p, n) in enumerate(zip(batch, lengths, strict=True)):
            pad = width - n
            ids[b, pad:] = torch.tensor(p.input_ids, dtype=torch.long)
            mask[b, pad:] = 1
            rows.append([pad + r for r in p.readout_positions])
        position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
        kwargs: dict[str, Any] = {
            "input_ids": ids.to(self.device),
            "attention_mask": mask.to(self.device),
            "position_ids": position_ids.to(self.device),
            "use_cache": False,
        }
        keep = sorted({r for row in rows for r in row})
        if self.supports_logits_to_keep:
            kwargs["logits_to_keep"] = torch.tensor(keep, dtype=torch.long, device=self.device)
            column = {pos: j for j, pos in enumerate(keep)}
        else:
            column = {pos: pos for pos in keep}
        logits = self.model(**kwargs).logits
        stats.forward_passes += 1
        stats.prompt_tokens += sum(lengths)
        stats.padded_tokens += width * len(batch)
        grade_idx = torch.tensor(list(grade_token_ids), dtype=torch.long, device=logits.device)
        result = []
        for b, row in enumerate(rows):
            cols = torch.tensor([column[r] for r in row], dtype=torch.long, device=logits.device)
            sel = logits[b].index_select(0, cols).index_select(-1, grade_idx).float()
            result.append(torch.softmax(sel, dim=-1).double().cpu().numpy())
        return result

    def describe(self) -> dict[str, Any]:
        import transformers

        return {
            "path": self.path,
            "revision": self.revision,
            "dtype": dtype_name(self.dtype),
            "device": str(self.device),
            "accelerator": accelerator_name(self.device),
            "model_class": type(self.model).__name__,
            "logits_to_keep": self.supports_logits_to_keep,
            "attn_implementation": self.attn_implementation,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
        }
