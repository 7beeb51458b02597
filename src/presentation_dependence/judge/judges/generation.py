"""Greedy text generation through transformers: batched (left-padded) or one prompt at a time.

Prompts are token ids (the chat template already applied). ``batch_size`` prompts share one
``model.generate`` call: they are LEFT-padded with the pad token, the attention mask hides the
padding, and ``generate`` derives position ids from the mask, so every real token has the
position it has alone. Decoding is greedy (``do_sample=False``: temperature 0); the torch seed is
set before every call anyway and recorded, so a run names everything it depended on.

``one_at_a_time`` runs every prompt alone (no padding, no batch neighbours): a response then
depends on its prompt only, and is bit-identical across reruns on one machine, thread count,
dtype and library versions (tested). Padded batches may differ from single runs in low-precision
dtypes; ``run_noise`` measures by how much.

A response ends at the first end-of-sequence token (not kept; ``finish = "eos"``) or after
``max_new_tokens`` (``finish = "length"``).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from presentation_dependence.errors import ConfigError
from presentation_dependence.models.embedded import resolve_model
from presentation_dependence.provenance import file_sha256
from presentation_dependence.readout.adapter import adapter_sha256, attach_adapter
from presentation_dependence.readout.backend import (
    TransformersBackend,
    dtype_name,
    resolve_device,
    resolve_dtype,
)
from presentation_dependence.readout.options import ModelOptions

__all__ = [
    "GenStats",
    "Generation",
    "TransformersGenerator",
    "chat_text",
    "encode_chat",
    "load_generator",
    "model_snapshot",
    "release_adapter_generators",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Generation:
    """One generated response: its new token ids (EOS excluded) and decoded text."""

    token_ids: tuple[int, ...]
    text: str
    finish: str
    prompt_tokens: int


@dataclass
class GenStats:
    calls: int = 0
    prompt_tokens: int = 0
    new_tokens: int = 0
    seconds: float = 0.0


def chat_text(
    tokenizer: Any, where: str, user_text: str, chat_template_kwargs: dict[str, Any] | None = None
) -> str:
    """The user turn rendered with the chat template of ``tokenizer`` (of the model at
    ``where``), up to the assistant start."""
    if not getattr(tokenizer, "chat_template", None):
        raise ConfigError(f"{where}: the tokenizer has no chat template")
    return str(
        tokenizer.apply_chat_template(
            [{"role": "user", "content": user_text}],
            tokenize=False,
            add_generation_prompt=True,
            **(chat_template_kwargs or {}),
        )
    )


def encode_chat(
    tokenizer: Any,
    where: str,
    user_text: str,
    chat_template_kwargs: dict[str, Any] | None = None,
    assistant_prefix: str = "",
) -> list[int]:
    """:func:`chat_text`, then ``assistant_prefix`` (text the response is made to start with;
    "" = none), as token ids."""
    text = chat_text(tokenizer, where, user_text, chat_template_kwargs) + assistant_prefix
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


class TransformersGenerator:
    """Greedy generation with a loaded :class:`TransformersBackend` (model + tokenizer)."""

    def __init__(self, backend: TransformersBackend, *, max_new_tokens: int, seed: int) -> None:
        self.backend = backend
        self.max_new_tokens = max_new_tokens
        self.seed = seed
        model, tok = backend.model, backend.tokenizer
        eos: set[int] = set()
        for src in (tok.eos_token_id, getattr(model.generation_config, "eos_token_id", None)):
            if isinstance(src, int):
                eos.add(src)
            elif isinstance(src, (list, tuple)):
                eos.update(int(x) for x in src)
        if not eos:
            raise ValueError(f"{backend.path}: the tokenizer names no end-of-sequence token")
        self.eos_ids = tuple(sorted(eos))

    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        *,
        batch_size: int = 1,
        one_at_a_time: bool = False,
        num_threads: int | None = None,
    ) -> tuple[list[Generation], GenStats]:
        """Responses to ``prompts`` in order, ``batch_size`` per ``generate`` call."""
        if num_threads is not None:
            torch.set_num_threads(num_threads)
        bs = 1 if one_at_a_time else max(1, batch_size)
        stats = GenStats()
        out: list[Generation] = []
        t0 = time.perf_counter()
        for start in range(0, len(prompts), bs):
            out.extend(self._generate_batch(prompts[start : start + bs], stats))
        stats.seconds = time.perf_counter() - t0
        return out, stats

    @torch.inference_mode()
    def _generate_batch(self, batch: Sequence[Sequence[int]], stats: GenStats) -> list[Generation]:
        from transformers import GenerationConfig

        b = self.backend
        lengths = [len(p) for p in batch]
        width = max(lengths)
        ids = torch.full((len(batch), width), b.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, (p, n) in enumerate(zip(batch, lengths, strict=True)):
            ids[row, width - n :] = torch.tensor(list(p), dtype=torch.long)
            mask[row, width - n :] = 1
        config = GenerationConfig(
            max_new_tokens=self.max_new_tokens,
            do_sample=False,
            num_beams=1,
            pad_token_id=b.pad_token_id,
            eos_token_id=list(self.eos_ids),
        )
        torch.manual_seed(self.seed)
        seqs = b.model.generate(
            input_ids=ids.to(b.device),
            attention_mask=mask.to(b.device),
            generation_config=config,
        )
        new = seqs[:, width:].cpu().tolist()
        stats.calls += 1
        stats.prompt_tokens += sum(lengths)
        result = []
        for row, n in zip(new, lengths, strict=True):
            cut = next((i for i, t in enumerate(row) if t in self.eos_ids), None)
            kept = row if cut is None else row[:cut]
            stats.new_tokens += len(kept)
            text = b.tokenizer.decode(kept, skip_special_tokens=True)
            result.append(Generation(tuple(kept), text, "length" if cut is None else "eos", n))
        return result


_GENERATORS: dict[tuple[str, str | None, str, str, bool, str | None], TransformersBackend] = {}
_LOCK = threading.Lock()


def load_generator(o: ModelOptions, adapter: str | None = None) -> tuple[TransformersBackend, str]:
    """Load (once per process) the model of options ``o``; return it and its snapshot id.

    ``adapter``: a trained LoRA adapter folder (a trained judge, docs/JUDGE-TRAINING.md),
    attached unmerged to a copy of the base of its own; the snapshot then ends in
    ``+lora:<first 16 hex of the adapter's sha256>``, so a cache never mixes its verdicts with
    the base model's."""
    resolved = resolve_model(o.model_name, o.revision)
    dev = resolve_device(o.device)
    tdtype = dtype_name(resolve_dtype(o.dtype, dev))
    lora = adapter_sha256(adapter) if adapter is not None else None
    key = (resolved.path, resolved.revision, tdtype, str(dev), o.trust_remote_code, lora)
    with _LOCK:
        backend = _GENERATORS.get(key)
        if backend is None:
            backend = TransformersBackend.load(
                resolved.path,
                revision=resolved.revision if resolved.source == "hub" else None,
                dtype=tdtype,
                device=str(dev),
                trust_remote_code=o.trust_remote_code,
            )
            backend.revision = resolved.revision
            backend.model.generation_config.pad_token_id = backend.pad_token_id
            if adapter is not None:
                backend = attach_adapter(backend, adapter)
            _GENERATORS[key] = backend
    snapshot = model_snapshot(resolved.source, resolved.path, resolved.revision, backend)
    return backend, snapshot + (f"+lora:{lora[:16]}" if lora else "")


def release_adapter_generators(adapter: str) -> int:
    """Drop every cached backend that carries ``adapter`` (its copy of the base goes with it);
    the number dropped. A trained judge's checkpoints are judged one after another
    (``training/judge_heldout.py``), each on a base copy of its own, so each is released once
    judged rather than held for the rest of the training run."""
    lora = adapter_sha256(adapter)
    with _LOCK:
        keys = [k for k in _GENERATORS if k[-1] == lora]
        for k in keys:
            del _GENERATORS[k]
    return len(keys)


def model_snapshot(
    source: str, path: str, revision: str | None, backend: TransformersBackend | None = None
) -> str:
    """A model's identity beyond its name: the embedded GGUF hash, a local folder's content
    hash, or the hub commit (``hub-unpinned:<name>`` when no commit is known)."""
    if source == "embedded" and revision:
        return revision
    if source == "local":
        return "local-sha256:" + _folder_sha256(Path(path))
    commit = revision
    if backend is not None and commit is None:
        commit = getattr(backend.model.config, "_commit_hash", None)
    return f"hub:{path}@{commit}" if commit else f"hub-unpinned:{path}"


def _folder_sha256(folder: Path) -> str:
    files = sorted(
        p
        for p in folder.iterdir()
        if p.is_file() and (p.suffix in {".safetensors", ".bin", ".json", ".jinja", ".model"})
    )
    h = hashlib.sha256()
    for p in files:
        h.update(p.name.encode("utf-8"))
        h.update(file_sha256(p).encode("ascii"))
    return h.hexdigest()[:16]
