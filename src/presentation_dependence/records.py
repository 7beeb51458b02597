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
trec_eval sees the same order (see ``docs/RUN-ARTIFACTS.md``). A :class:`Candidate` built without
a rank has rank 1, so candidates without first-stage ranks tie there and keep their input order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "Candidate",
    "Cost",
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
    source gives none). Without a first stage, ``Candidate(docid, text)`` takes ``rank=1``:
    candidates without a rank all tie at 1, so :meth:`RankResult.from_scores` breaks score ties
    by their input position (the order you pass them in), and ``IdentityReranker`` keeps that
    order. Give real ranks (``rank=i + 1``) when the list comes from a retriever.
    """

    docid: str
    text: str
    rank: int = 1
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
            rank=int(d.get("rank", 1)),
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
class Cost:
    """What one :meth:`rank` call ran: model calls (a batched prompt forward, or one generate
    call) and prompt tokens. Every reranker that runs a language model reports it."""

    forward_passes: int = 0
    prompt_tokens: int = 0

    def __post_init__(self) -> None:
        for name, v in self.to_dict().items():
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 0:
                raise ValueError(f"Cost.{name} must be an integer >= 0, got {v!r}")
            object.__setattr__(self, name, int(v))

    def to_dict(self) -> dict[str, int]:
        return {"forward_passes": self.forward_passes, "prompt_tokens": self.prompt_tokens}


_ITEM_FIELDS = ("slot", "chunk", "grade_probs")


@dataclass(frozen=True)
class ScoredCandidate:
    """A candidate with the reranker's score and rank, keeping its input position.

    ``input_index`` is the 0-based position in the list the reranker received; ``rank`` is the
    1-based rank after reranking. A listwise readout also reports where it read the candidate:
    ``slot`` (1-based, within its prompt), ``chunk`` (0-based prompt index) and ``grade_probs``
    (the grade distribution read there); ``None`` when the reranker has no such thing.
    ``details`` holds free-form extras only. Serialised, the typed fields sit in ``details``
    (``grade_probs`` first, ``slot`` and ``chunk`` last), as files written before them have it.
    """

    candidate: Candidate
    input_index: int
    score: float
    rank: int
    details: Mapping[str, Any] = field(default_factory=dict)
    slot: int | None = None
    chunk: int | None = None
    grade_probs: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if any(k in self.details for k in _ITEM_FIELDS):
            raise ValueError(f"{_ITEM_FIELDS} are typed fields of ScoredCandidate, not details")

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "docid": self.candidate.docid,
            "input_index": self.input_index,
            "first_stage_rank": self.candidate.rank,
            "first_stage_score": None if math.isnan(self.candidate.score) else self.candidate.score,
            "score": self.score,
            "rank": self.rank,
        }
        probs = {} if self.grade_probs is None else {"grade_probs": list(self.grade_probs)}
        where = {k: v for k, v in (("slot", self.slot), ("chunk", self.chunk)) if v is not None}
        if details := {**probs, **self.details, **where}:
            d["details"] = details
        return d


_COST_KEYS = ("forward_passes", "prompt_tokens")


def _per_item(name: str, values: Sequence[Any] | np.ndarray | None, n: int) -> list[Any]:
    if values is not None and len(values) != n:
        raise ValueError(f"{name} must have one entry per candidate")
    return [None] * n if values is None else list(values)


def _typed(slot: Any, chunk: Any, grade_probs: Any) -> dict[str, Any]:
    """ScoredCandidate's readout fields from loose values (``None`` stays ``None``)."""
    return {
        "slot": None if slot is None else int(slot),
        "chunk": None if chunk is None else int(chunk),
        "grade_probs": None if grade_probs is None else tuple(float(x) for x in grade_probs),
    }


@dataclass(frozen=True)
class RankResult:
    """A reranked list that keeps every input candidate's identity and input order.

    ``items`` are in *input* order; :meth:`ranked` gives them in rank order. ``cost`` is what
    the call ran (``None`` for a reranker that runs no language model); ``details`` holds
    free-form per-list extras. Serialised, the cost leads ``details``.
    """

    query: Query
    items: tuple[ScoredCandidate, ...] = field(default_factory=tuple)
    details: Mapping[str, Any] = field(default_factory=dict)
    cost: Cost | None = None

    def __post_init__(self) -> None:
        if any(k in self.details for k in _COST_KEYS):
            raise ValueError(f"{_COST_KEYS} belong in RankResult.cost, not in details")

    @classmethod
    def from_scores(
        cls,
        query: Query,
        candidates: Sequence[Candidate],
        scores: Sequence[float] | np.ndarray,
        *,
        item_details: Sequence[Mapping[str, Any]] | None = None,
        details: Mapping[str, Any] | None = None,
        slots: Sequence[int | None] | np.ndarray | None = None,
        chunks: Sequence[int | None] | np.ndarray | None = None,
        grade_probs: Sequence[Sequence[float] | None] | np.ndarray | None = None,
        cost: Cost | None = None,
    ) -> RankResult:
        """Rank ``candidates`` by ``scores`` (descending).

        Ties are broken by first-stage rank, then by input position, so the result is
        deterministic whatever the score precision. ``slots``, ``chunks`` and ``grade_probs``
        (one entry per candidate, ``None`` for none) fill the items' readout fields.
        """
        n = len(candidates)
        scores_arr = np.asarray(scores, dtype=np.float64)
        if scores_arr.shape != (n,):
            raise ValueError(
                f"got {scores_arr.shape[0] if scores_arr.ndim else 0} scores for "
                f"{n} candidates of query {query.qid!r}"
            )
        if np.isnan(scores_arr).any():
            raise ValueError(f"a reranker returned NaN scores for query {query.qid!r}")
        if item_details is not None and len(item_details) != n:
            raise ValueError("item_details must have one entry per candidate")
        fields = zip(_ITEM_FIELDS, (slots, chunks, grade_probs), strict=True)
        readout = [_per_item(k, v, n) for k, v in fields]
        # np.lexsort sorts by the last key first.
        order = np.lexsort((np.arange(n), np.array([c.rank for c in candidates]), -scores_arr))
        ranks = np.empty(n, dtype=np.int64)
        ranks[order] = np.arange(1, n + 1)
        items = tuple(
            ScoredCandidate(
                candidate=c,
                input_index=i,
                score=float(scores_arr[i]),
                rank=int(ranks[i]),
                details=dict(item_details[i]) if item_details is not None else {},
                **_typed(*(r[i] for r in readout)),
            )
            for i, c in enumerate(candidates)
        )
        return cls(query=query, items=items, details=dict(details or {}), cost=cost)

    def ranked(self) -> tuple[ScoredCandidate, ...]:
        """The items in rank order (rank 1 first)."""
        return tuple(sorted(self.items, key=lambda it: it.rank))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "query": self.query.to_dict(),
            "items": [it.to_dict() for it in self.items],
            "texts": {it.candidate.docid: it.candidate.text for it in self.items},
        }
        details = {**(self.cost.to_dict() if self.cost else {}), **self.details}
        if details:
            d["details"] = details
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
            extra = dict(it.get("details", {}))
            typed = _typed(*(extra.pop(k, None) for k in _ITEM_FIELDS))
            items.append(
                ScoredCandidate(
                    candidate=cand,
                    input_index=int(it["input_index"]),
                    score=float(it["score"]),
                    rank=int(it["rank"]),
                    details=extra,
                    **typed,
                )
            )
        details = dict(d.get("details", {}))
        cost = None
        if any(k in details for k in _COST_KEYS):
            cost = Cost(*(int(details.pop(k, 0)) for k in _COST_KEYS))
        return cls(
            query=Query.from_dict(d["query"]), items=tuple(items), details=details, cost=cost
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
