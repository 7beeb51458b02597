"""Typed, frozen records passed across every boundary of the package.

The records are plain data: loaders produce them, rerankers consume and produce them, writers
serialise them. Each one round-trips through ``to_dict``/``from_dict`` (tested), so what is
written to a run folder is exactly what a later phase reads back.

Tie policy
----------
trec_eval (and pytrec_eval) orders a query's documents by score and breaks score ties by
document id, ignoring the rank column. Expected-grade scores can tie. :meth:`RankResult.from_scores`
therefore fixes the rank deterministically (score descending, then first-stage rank, then input
position), and :func:`presentation_dependence.io.trec.write_run` writes *tie-safe* scores so that
trec_eval sees the same order (see ``docs/RUN-ARTIFACTS.md``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "Candidate",
    "Qrels",
    "Query",
    "RankResult",
    "RerankRequest",
    "Run",
    "RunEntry",
    "ScoredCandidate",
    "Topics",
]


@dataclass(frozen=True)
class Query:
    """A query (topic): its id and its text."""

    qid: str
    text: str

    def __post_init__(self) -> None:
        if not self.qid:
            raise ValueError("Query.qid must be a non-empty string")

    def to_dict(self) -> dict[str, Any]:
        return {"qid": self.qid, "text": self.text}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Query:
        return cls(qid=str(d["qid"]), text=str(d["text"]))


@dataclass(frozen=True)
class Candidate:
    """One candidate document as the first stage delivered it.

    ``rank`` is the 1-based first-stage rank, ``score`` the first-stage score (``nan`` when the
    source gives none).
    """

    docid: str
    text: str
    rank: int
    score: float = math.nan

    def __post_init__(self) -> None:
        if not self.docid:
            raise ValueError("Candidate.docid must be a non-empty string")
        if self.rank < 1:
            raise ValueError(f"Candidate.rank is 1-based, got {self.rank} for {self.docid!r}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "docid": self.docid,
            "text": self.text,
            "rank": self.rank,
            "score": None if math.isnan(self.score) else self.score,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Candidate:
        score = d.get("score")
        return cls(
            docid=str(d["docid"]),
            text=str(d.get("text", "")),
            rank=int(d["rank"]),
            score=math.nan if score is None else float(score),
        )


@dataclass(frozen=True)
class RerankRequest:
    """A query with its first-stage candidates, in first-stage order."""

    query: Query
    candidates: tuple[Candidate, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for c in self.candidates:
            if c.docid in seen:
                raise ValueError(
                    f"duplicate docid {c.docid!r} in the candidates of query {self.query.qid!r}"
                )
            seen.add(c.docid)

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query.to_dict(), "candidates": [c.to_dict() for c in self.candidates]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RerankRequest:
        return cls(
            query=Query.from_dict(d["query"]),
            candidates=tuple(Candidate.from_dict(c) for c in d["candidates"]),
        )


@dataclass(frozen=True)
class ScoredCandidate:
    """A candidate with the reranker's score and rank, keeping its input position.

    ``input_index`` is the 0-based position in the list the reranker received; ``rank`` is the
    1-based rank after reranking. ``details`` holds what a scorer wants to keep per candidate
    (for example the grade distribution read at its slot).
    """

    candidate: Candidate
    input_index: int
    score: float
    rank: int
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "docid": self.candidate.docid,
            "input_index": self.input_index,
            "first_stage_rank": self.candidate.rank,
            "first_stage_score": None if math.isnan(self.candidate.score) else self.candidate.score,
            "score": self.score,
            "rank": self.rank,
        }
        if self.details:
            d["details"] = dict(self.details)
        return d


@dataclass(frozen=True)
class RankResult:
    """A reranked list that keeps every input candidate's identity and input order.

    ``items`` are in *input* order; :meth:`ranked` gives them in rank order. ``details`` holds
    per-list information (forward passes, prompt tokens, ...).
    """

    query: Query
    items: tuple[ScoredCandidate, ...] = field(default_factory=tuple)
    details: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_scores(
        cls,
        query: Query,
        candidates: Sequence[Candidate],
        scores: Sequence[float] | np.ndarray,
        *,
        item_details: Sequence[Mapping[str, Any]] | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> RankResult:
        """Rank ``candidates`` by ``scores`` (descending).

        Ties are broken by first-stage rank, then by input position, so the result is
        deterministic whatever the score precision.
        """
        scores_arr = np.asarray(scores, dtype=np.float64)
        if scores_arr.shape != (len(candidates),):
            raise ValueError(
                f"got {scores_arr.shape[0] if scores_arr.ndim else 0} scores for "
                f"{len(candidates)} candidates of query {query.qid!r}"
            )
        if np.isnan(scores_arr).any():
            raise ValueError(f"a reranker returned NaN scores for query {query.qid!r}")
        if item_details is not None and len(item_details) != len(candidates):
            raise ValueError("item_details must have one entry per candidate")
        # np.lexsort sorts by the last key first.
        order = np.lexsort(
            (
                np.arange(len(candidates)),
                np.array([c.rank for c in candidates]),
                -scores_arr,
            )
        )
        ranks = np.empty(len(candidates), dtype=np.int64)
        ranks[order] = np.arange(1, len(candidates) + 1)
        items = tuple(
            ScoredCandidate(
                candidate=c,
                input_index=i,
                score=float(scores_arr[i]),
                rank=int(ranks[i]),
                details=dict(item_details[i]) if item_details is not None else {},
            )
            for i, c in enumerate(candidates)
        )
        return cls(query=query, items=items, details=dict(details or {}))

    def ranked(self) -> tuple[ScoredCandidate, ...]:
        """The items in rank order (rank 1 first)."""
        return tuple(sorted(self.items, key=lambda it: it.rank))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "query": self.query.to_dict(),
            "items": [it.to_dict() for it in self.items],
            "texts": {it.candidate.docid: it.candidate.text for it in self.items},
        }
        if self.details:
            d["details"] = dict(self.details)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RankResult:
        texts = d.get("texts", {})
        items = []
        for it in d["items"]:
            fs = it.get("first_stage_score")
            cand = Candidate(
                docid=str(it["docid"]),
                text=str(texts.get(it["docid"], "")),
                rank=int(it["first_stage_rank"]),
                score=math.nan if fs is None else float(fs),
            )
            items.append(
                ScoredCandidate(
                    candidate=cand,
                    input_index=int(it["input_index"]),
                    score=float(it["score"]),
                    rank=int(it["rank"]),
                    details=dict(it.get("details", {})),
                )
            )
        return cls(
            query=Query.from_dict(d["query"]),
            items=tuple(items),
            details=dict(d.get("details", {})),
        )


@dataclass(frozen=True)
class RunEntry:
    """One line of a TREC run: ``qid Q0 docid rank score tag``."""

    qid: str
    docid: str
    rank: int
    score: float
    tag: str = "presdep"


@dataclass(frozen=True)
class Run:
    """A ranked run: for every query its entries in rank order."""

    entries: Mapping[str, tuple[RunEntry, ...]] = field(default_factory=dict)
    name: str = "presdep"

    @classmethod
    def from_results(cls, results: Iterable[RankResult], name: str = "presdep") -> Run:
        entries: dict[str, tuple[RunEntry, ...]] = {}
        for res in results:
            entries[res.query.qid] = tuple(
                RunEntry(res.query.qid, it.candidate.docid, it.rank, it.score, name)
                for it in res.ranked()
            )
        return cls(entries=entries, name=name)

    def qids(self) -> list[str]:
        return list(self.entries)

    def __iter__(self) -> Iterator[RunEntry]:
        for rows in self.entries.values():
            yield from rows

    def __len__(self) -> int:
        return sum(len(v) for v in self.entries.values())

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{qid: {docid: score}}``, the form pytrec_eval takes."""
        return {q: {e.docid: e.score for e in rows} for q, rows in self.entries.items()}


@dataclass(frozen=True)
class Qrels:
    """Graded relevance judgements: ``{qid: {docid: grade}}``."""

    judgements: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    def qids(self) -> list[str]:
        return list(self.judgements)

    def grade(self, qid: str, docid: str) -> int:
        """The grade of ``docid`` for ``qid``; unjudged documents count as 0."""
        return int(self.judgements.get(qid, {}).get(docid, 0))

    def to_dict(self) -> dict[str, dict[str, int]]:
        return {q: dict(d) for q, d in self.judgements.items()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Mapping[str, int]]) -> Qrels:
        return cls({str(q): {str(k): int(v) for k, v in docs.items()} for q, docs in d.items()})


@dataclass(frozen=True)
class Topics:
    """Query texts by query id."""

    queries: Mapping[str, str] = field(default_factory=dict)

    def __getitem__(self, qid: str) -> str:
        return self.queries[qid]

    def __contains__(self, qid: object) -> bool:
        return qid in self.queries

    def __len__(self) -> int:
        return len(self.queries)

    def to_dict(self) -> dict[str, str]:
        return dict(self.queries)

    @classmethod
    def from_dict(cls, d: Mapping[str, str]) -> Topics:
        return cls({str(k): str(v) for k, v in d.items()})
