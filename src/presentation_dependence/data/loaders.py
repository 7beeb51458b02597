"""Data loaders: turn a config's ``data`` block into a :class:`Dataset`.

Each loader registers itself in :data:`LOADERS` under its class name, is constructed as
``Loader(cfg: DataConfig)`` and has one method, ``load() -> Dataset``. Every loader

* resolves each path field with :func:`resolve_path` (lists of alternatives allowed),
* selects its queries in one place (:meth:`Loader._select`): with ``cfg.judged_only``, the
  queries the final judgements judge; then ``cfg.max_queries`` of them, the first in file order
  or, with ``cfg.query_sample_seed``, drawn uniformly without replacement (kept in file order),
* keeps each query's ``cfg.top_k`` best candidates by first-stage rank (candidates are ordered
  by first-stage rank, ties kept in file order),
* replaces its own judgements with ``cfg.qrels`` when that is set (before selecting), and
* restricts the judgements to the queries it keeps.

Run-based loaders take the first-stage order from the run as trec_eval reads it (score
descending, then docid descending; see :mod:`presentation_dependence.io.trec`), so a candidate's
``rank`` is its position in that order and its ``score`` the run's score.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from presentation_dependence.data.config import DataConfig, resolve_path
from presentation_dependence.errors import ConfigError
from presentation_dependence.io.beir import read_beir_corpus, read_beir_qrels, read_beir_queries
from presentation_dependence.io.corpus import read_corpus
from presentation_dependence.io.fixture import read_fixture
from presentation_dependence.io.rankllm_json import read_rankllm_json
from presentation_dependence.io.trec import read_qrels, read_run, read_topics
from presentation_dependence.records import Candidate, Qrels, Query, RerankRequest, Run, Topics
from presentation_dependence.registry import Registry
from presentation_dependence.seeding import rng_from

__all__ = [
    "LOADERS",
    "BeirLoader",
    "Dataset",
    "FixtureLoader",
    "Loader",
    "RankLLMJsonLoader",
    "Selection",
    "TrecRunLoader",
    "check_loader",
    "load_dataset",
    "pick_queries",
]

LOADERS = Registry[type]("dataloader_class", entry_points="presentation_dependence.loaders")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Dataset:
    """The queries with their first-stage candidates, and the judgements when there are any."""

    requests: tuple[RerankRequest, ...]
    qrels: Qrels | None
    name: str

    def qids(self) -> list[str]:
        return [r.query.qid for r in self.requests]


@dataclass(frozen=True)
class Selection:
    """The queries a loader keeps (file order), out of ``total``, and the final judgements
    (``cfg.qrels`` when set, else the loader's own; not yet restricted to the kept queries)."""

    qids: tuple[str, ...]
    qrels: Qrels | None
    total: int


class Loader:
    """Base class: keeps the config and applies the shared selection rules."""

    def __init__(self, cfg: DataConfig) -> None:
        self.cfg = cfg

    def load(self) -> Dataset:  # pragma: no cover - every subclass overrides it
        raise NotImplementedError

    def _path(self, key: str) -> Path:
        path = resolve_path(getattr(self.cfg, key), key, required=True)
        assert path is not None  # required=True never returns None
        return path

    def _select(self, qids: Sequence[str], qrels: Qrels | None) -> Selection:
        """The one query-selection rule: cfg.qrels replaces ``qrels``; judged_only keeps the
        queries those judge; max_queries keeps the first N or (query_sample_seed) N drawn."""
        override = resolve_path(self.cfg.qrels, "qrels", required=False)
        if override is not None:
            qrels = read_qrels(override)
        if qrels is not None:
            _warn_unmatched(qrels, set(qids))
        pool = list(qids)
        if self.cfg.judged_only:
            if qrels is None:
                raise ConfigError(
                    f"data.judged_only: {self.cfg.dataloader_class} found no judgements to "
                    "select judged queries by; set data.qrels or set judged_only to false"
                )
            pool = [q for q in pool if qrels.judgements.get(q)]
        kept = pick_queries(pool, self.cfg.max_queries, self.cfg.query_sample_seed)
        log.info(
            "data: kept %d of %d queries (%s%s)",
            len(kept),
            len(qids),
            f"{len(pool)} judged, " if self.cfg.judged_only else "",
            _rule(self.cfg, len(pool)),
        )
        return Selection(tuple(kept), qrels, len(qids))

    def _finish(self, requests: Iterable[RerankRequest], qrels: Qrels | None, name: str) -> Dataset:
        """Select the queries (:meth:`_select`) of ``requests`` and apply them."""
        every = list(requests)
        return self._apply(every, self._select([r.query.qid for r in every], qrels), name)

    def _apply(self, requests: Iterable[RerankRequest], sel: Selection, name: str) -> Dataset:
        """Keep the selected queries (file order) at top_k; restrict the judgements to them."""
        keep = set(sel.qids)
        kept = [_top_k(r, self.cfg.top_k) for r in requests if r.query.qid in keep]
        qrels = sel.qrels
        if qrels is not None:
            qrels = Qrels({q: d for q, d in qrels.judgements.items() if q in keep})
        return Dataset(requests=tuple(kept), qrels=qrels, name=name)


def pick_queries(qids: Sequence[str], n: int | None, seed: int | None) -> list[str]:
    """``n`` of ``qids`` in their order: the first ``n``, or with ``seed`` ``n`` drawn uniformly
    without replacement (stream ``rng_from(seed, "query-sample")``); all when ``len <= n``."""
    if n is None or len(qids) <= n:
        return list(qids)
    if seed is None:
        return list(qids[:n])
    drawn = rng_from(seed, "query-sample").choice(len(qids), size=n, replace=False)
    return [qids[i] for i in sorted(int(i) for i in drawn)]


def _rule(cfg: DataConfig, available: int) -> str:
    if cfg.max_queries is None or available <= cfg.max_queries:
        return "all"
    if cfg.query_sample_seed is None:
        return f"the first {cfg.max_queries} in file order"
    return f"{cfg.max_queries} drawn with query_sample_seed {cfg.query_sample_seed}"


def _warn_unmatched(qrels: Qrels, qids: set[str]) -> None:
    """Warn, with counts, about judgements for queries the data does not have at all."""
    lost = [q for q in qrels.judgements if q not in qids]
    if lost:
        n_judgements = sum(len(qrels.judgements[q]) for q in lost)
        log.warning(
            "%d of %d judged queries (%d judgements) match no query of the data and are "
            "dropped, e.g. %s; check that the qrels and the data use the same query ids",
            len(lost),
            len(qrels.judgements),
            n_judgements,
            ", ".join(repr(q) for q in lost[:3]),
        )


def _top_k(request: RerankRequest, k: int) -> RerankRequest:
    ordered = sorted(request.candidates, key=lambda c: c.rank)  # stable: file order on ties
    return RerankRequest(request.query, tuple(ordered[:k]))


def _requests_from_run(
    run: Run, topics: Topics | Mapping[str, str], corpus: Mapping[str, str]
) -> list[RerankRequest]:
    return [
        RerankRequest(
            Query(qid, topics[qid]),
            tuple(Candidate(e.docid, corpus[e.docid], e.rank, e.score) for e in run.entries[qid]),
        )
        for qid in run.qids()
    ]


@LOADERS.register()
class FixtureLoader(Loader):
    """``data.path``: a fixture JSONL file (:mod:`presentation_dependence.io.fixture`).

    The judgements are the fixture's own (``None`` when it has none) unless ``data.qrels`` is set.
    """

    def load(self) -> Dataset:
        path = self._path("path")
        requests, qrels = read_fixture(path)
        return self._finish(requests, qrels if qrels.judgements else None, path.stem)


@LOADERS.register()
class RankLLMJsonLoader(Loader):
    """``data.path``: a rank_llm/RankGPT JSON file; judgements from ``data.qrels`` if set."""

    def load(self) -> Dataset:
        path = self._path("path")
        return self._finish(read_rankllm_json(path), None, path.stem)


@LOADERS.register()
class BeirLoader(Loader):
    """``data.path``: a BEIR folder; ``data.run``: the first-stage TREC run over its corpus.

    Candidate texts come from ``corpus.jsonl`` (title and text joined by a space), query texts
    from ``queries.jsonl``, judgements from ``qrels/<data.split>.tsv`` (or ``data.qrels``).
    """

    def load(self) -> Dataset:
        folder = self._path("path")
        run_path = self._path("run")
        corpus = read_beir_corpus(folder)
        topics = read_beir_queries(folder)
        run = read_run(run_path, corpus_ids=corpus, query_ids=topics)
        requests = _requests_from_run(run, topics, corpus)
        qrels = None if self.cfg.qrels is not None else read_beir_qrels(folder, self.cfg.split)
        return self._finish(requests, qrels, folder.name)


@LOADERS.register()
class TrecRunLoader(Loader):
    """``data.run`` + ``data.corpus`` + ``data.topics``; judgements from ``data.qrels`` if set."""

    def load(self) -> Dataset:
        run_path = self._path("run")
        corpus = read_corpus(self._path("corpus"))
        topics = read_topics(self._path("topics"))
        run = read_run(run_path, corpus_ids=corpus, query_ids=topics)
        requests = _requests_from_run(run, topics, corpus)
        return self._finish(requests, None, run_path.stem)


def check_loader(cfg: DataConfig, key: str = "data") -> None:
    """Refuse a ``dataloader_class`` no loader registered (did-you-mean; ``key`` names the block
    so that the config loader can give the file's line). Called when a config is loaded."""
    LOADERS.get(cfg.dataloader_class, key=f"{key}.dataloader_class")


def load_dataset(cfg: DataConfig) -> Dataset:
    """Build the loader ``cfg.dataloader_class`` names and load (did-you-mean on a typo)."""
    loader_cls = LOADERS.get(cfg.dataloader_class)
    dataset: Dataset = loader_cls(cfg).load()
    return dataset
