"""GoldQrelsReranker: the judgements themselves as a teacher (an upper bound, and a control).

Each candidate scores its qrels grade ``g`` mapped onto the 0..3 grade range::

    score = 3 * clip(g, 0, max_grade) / max_grade

so with ``max_grade: 3`` (TREC DL) a grade is its own score and with ``max_grade: 1`` (binary
judgements: HotpotQA's supporting paragraphs, SciFact) a relevant candidate scores 3. Negative
grades (allowed in TREC qrels) score 0; a grade above ``max_grade`` is a config error;
``max_grade: auto`` takes the top grade of the judgements read (per data block with
``qrels: data``: a binary block's relevant candidates score 3, as do NovelEval's grade 2). A
candidate with no judgement scores 0 (unjudged counts as not relevant, as in nDCG). A query with
no judgement at all is an error (a teacher that silently scores a whole query 0 teaches "all
equal"), unless ``allow_unjudged_queries: true``.

The qrels are one TREC file (``qid iter docid grade``, read with the strict
:func:`~presentation_dependence.io.trec.read_qrels`), keyed by query id only, so one file serves
one data set: query ids of different data sets can collide. For data whose judgements live in
the data file itself (HotpotQA's ``is_supporting``, fixtures), write them out first with
``python scripts/data/export_qrels.py``, or set ``qrels: data``: then the teacher holds no file
and each caller binds the judgements of the data block it scores (:meth:`with_judgements`; silver
labels do this per data block, so query ids that collide across a training pool's sources stay
apart). Pointwise: order-free by construction.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import checked_options, opt
from presentation_dependence.io.trec import read_qrels
from presentation_dependence.records import Candidate, Qrels, Query, RankResult
from presentation_dependence.rerankers.base import RERANKERS, Paradigm, RerankerOptions

__all__ = ["FROM_DATA", "GoldQrelsOptions", "GoldQrelsReranker", "grade_to_score"]

FROM_DATA = "data"  # qrels: data -- the judgements of each data block, bound by the caller


@dataclass(frozen=True)
class GoldQrelsOptions(RerankerOptions):
    """Options of GoldQrelsReranker."""

    qrels: str | list[str] | None = opt(
        None,
        "TREC qrels file, or a list of alternatives (the first that exists), or 'data': the "
        "judgements of each data block scored (bound per block by the caller)",
    )
    max_grade: int | str = opt(
        3,
        "the top grade of the qrels: score = 3 * grade / max_grade; 'auto' = the top grade of "
        "the judgements read (per data block with qrels: data)",
    )
    allow_unjudged_queries: bool = opt(
        False, "score a query without judgements all 0 instead of failing"
    )

    def __post_init__(self) -> None:
        q = self.qrels
        if q is not None and not (
            isinstance(q, str) or (isinstance(q, list) and all(isinstance(p, str) for p in q))
        ):
            raise ConfigError(f"qrels must be a path or a list of paths, got {q!r}")
        m = self.max_grade
        if m != "auto" and (isinstance(m, bool) or not isinstance(m, int) or m < 1):
            raise ConfigError(f"max_grade must be an integer >= 1 or 'auto', got {m!r}")


def grade_to_score(grade: int, max_grade: int) -> float:
    """``3 * clip(grade, 0, max_grade) / max_grade``.

    >>> [grade_to_score(g, 3) for g in (-1, 0, 2, 3)]
    [0.0, 0.0, 2.0, 3.0]
    >>> grade_to_score(1, 1)
    3.0
    """
    return 3.0 * min(max(grade, 0), max_grade) / max_grade


def _resolve(spec: str | list[str] | None) -> Path:
    if spec is None:
        raise ConfigError(
            "GoldQrelsReranker needs qrels: a TREC qrels file. Fix: set qrels: PATH in the "
            "reranker block (scripts/data/export_qrels.py writes one from any data block)"
        )
    options = [spec] if isinstance(spec, str) else list(spec)
    for p in options:
        if Path(p).expanduser().is_file():
            return Path(p).expanduser()
    raise ConfigError(
        f"GoldQrelsReranker qrels: none of these files exists: {', '.join(options)}. Fix: "
        "point qrels at the judgements (scripts/data/export_qrels.py writes them from a data block)"
    )


@RERANKERS.register()
class GoldQrelsReranker:
    """Scores each candidate by its qrels grade, 3 · grade / max_grade; unjudged = 0."""

    paradigm: ClassVar[Paradigm] = Paradigm.POINTWISE
    config_cls: ClassVar[type[RerankerOptions]] = GoldQrelsOptions
    backend: ClassVar[str] = "none (reads the qrels)"
    requires: ClassVar[str] = "core install; a TREC qrels file"

    def __init__(self, options: RerankerOptions | None = None) -> None:
        self.options = opts = checked_options(self, options, GoldQrelsOptions)
        self.path: Path | None = None
        self.qrels: Qrels | None = None
        self.where = FROM_DATA
        self.max_grade = 3
        if opts.qrels != FROM_DATA:
            self.path = _resolve(opts.qrels)
            self._bind(read_qrels(self.path), str(self.path))

    def _bind(self, qrels: Qrels, where: str) -> None:
        top = max((g for docs in qrels.judgements.values() for g in docs.values()), default=0)
        if self.options.max_grade == "auto":
            if top < 1:
                raise ConfigError(f"{where}: no positive grade, so max_grade: auto has no top")
            self.max_grade = top
            self.qrels, self.where = qrels, where
            return
        self.max_grade = int(self.options.max_grade)
        if top > self.max_grade:
            raise ConfigError(
                f"{where}: a grade {top} is above max_grade {self.options.max_grade}. "
                f"Fix: set max_grade: {top} in the reranker block"
            )
        self.qrels = qrels
        self.where = where

    @property
    def binds_judgements(self) -> bool:
        """True with ``qrels: data``: the caller must bind each data block's judgements."""
        return self.options.qrels == FROM_DATA

    def with_judgements(self, qrels: Qrels | None, source: str) -> GoldQrelsReranker:
        """A teacher reading ``qrels`` (the judgements of data block ``source``)."""
        if qrels is None:
            raise ConfigError(
                f"GoldQrelsReranker (qrels: data): the data block {source!r} carries no "
                "judgements. Fix: give that block qrels, or point the teacher's qrels at a file"
            )
        bound = GoldQrelsReranker(self.options)
        bound._bind(qrels, f"the judgements of {source}")
        return bound

    def rank(self, query: Query, candidates: Sequence[Candidate]) -> RankResult:
        if self.qrels is None:
            raise ConfigError(
                "GoldQrelsReranker with qrels: data scores only after the judgements of a data "
                "block are bound (with_judgements); silver labels do this. Fix: point qrels at a "
                "TREC qrels file to use it elsewhere"
            )
        judged = self.qrels.judgements.get(query.qid)
        if judged is None and candidates and not self.options.allow_unjudged_queries:
            raise ConfigError(
                f"GoldQrelsReranker: query {query.qid!r} has no judgements in {self.where}. "
                "Fix: use the qrels of this data set, or set allow_unjudged_queries: true "
                "to score such a query all 0"
            )
        judged = judged or {}
        grades = [int(judged.get(c.docid, 0)) for c in candidates]
        m = self.max_grade
        return RankResult.from_scores(
            query,
            candidates,
            [grade_to_score(g, m) for g in grades],
            item_details=[
                {"grade": g, "judged": c.docid in judged}
                for g, c in zip(grades, candidates, strict=True)
            ],
            details={"judged_query": bool(judged)},
        )

    def describe(self) -> dict[str, Any]:
        return {
            "reranker_class": type(self).__name__,
            "paradigm": self.paradigm.value,
            "qrels_path": str(self.path) if self.path else FROM_DATA,
            "qrels_sha256": hashlib.sha256(self.path.read_bytes()).hexdigest()
            if self.path
            else None,
            "qrels_queries": len(self.qrels.judgements) if self.qrels else None,
            "score": f"3 * clip(grade, 0, m) / m, m = max_grade ({self.options.max_grade})",
            "options": asdict(self.options),
        }
