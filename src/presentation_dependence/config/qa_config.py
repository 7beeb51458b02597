"""The ``qa`` block of an experiment config: what the frozen reader reads (``presdep qa``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import opt

__all__ = ["QAConfig"]


@dataclass(frozen=True)
class QAConfig:
    """Retain paragraphs by the reranker's scores, then read them with a frozen reader."""

    reader: str = opt(
        "embedded-smollm2",
        "Reader config: a name under configs/reader/ (<name>.yaml) or a YAML path",
    )
    retain_top_k: int | None = opt(
        2, "Retain the top-k paragraphs by score (null: use retain_threshold)"
    )
    retain_threshold: float | None = opt(
        None, "Retain paragraphs scoring >= this (null: use retain_top_k)"
    )
    reader_order: Literal["first_stage", "rank"] = opt(
        "first_stage",
        "Order of the retained paragraphs in the reader prompt: first_stage (the "
        "answer depends on the retained set only) or rank (score order)",
    )
    cache_answers: bool = opt(
        True,
        "Reuse the answer of an identical reader prompt (same sha256) within a run; "
        "false reads every time (reader nondeterminism then enters the null)",
    )

    def __post_init__(self) -> None:
        if not isinstance(self.reader, str) or not self.reader.strip():
            raise ConfigError(f"qa.reader must name a reader config, got {self.reader!r}")
        if (self.retain_top_k is None) == (self.retain_threshold is None):
            raise ConfigError(
                "qa: set exactly one of retain_top_k and retain_threshold (the other null); got "
                f"retain_top_k={self.retain_top_k!r}, retain_threshold={self.retain_threshold!r}"
            )
        if self.retain_top_k is not None and self.retain_top_k < 1:
            raise ConfigError(f"qa.retain_top_k must be >= 1, got {self.retain_top_k}")
        if self.reader_order not in ("first_stage", "rank"):
            raise ConfigError(
                f"qa.reader_order must be first_stage or rank, got {self.reader_order!r}"
            )

    @property
    def retention(self) -> str:
        """The retention rule in words, e.g. ``top-2`` or ``score >= 1.5``."""
        if self.retain_top_k is not None:
            return f"top-{self.retain_top_k}"
        return f"score >= {self.retain_threshold:g}"
