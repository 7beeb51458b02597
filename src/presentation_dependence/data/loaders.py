"""Data loaders: turn a config's ``data`` block into a :class:`Dataset`.

Each loader registers itself in :data:`LOADERS` under its class name, is constructed as
``Loader(cfg: DataConfig)`` and has one method, ``load() -> Dataset``. Every loader

* resolves each path field with :func:`resolve_path` (lists of alternatives allowed),
* keeps the first ``cfg.max_queries`` queries in file order,
* keeps each query's ``cfg.top_k`` best candidates by first-stage rank (candidates are ordered
  by first-stage rank, ties kept in file order),
* replaces its own judgements with ``cfg.qrels`` when that is set, and
* restricts the judgements to the queries it keeps.

Run-based loaders take the first-stage order from the run as trec_eval reads it (score
descending, then docid descending; see :mod:`presentation_dependence.io.trec`), so a candidate's
``rank`` is its position in that order and its ``score`` the run's score.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from presentation_dependence.data.config import DataConfig, resolve_path
from presentation_dependence.io.beir import read_beir_corpus, read_beir_qrels, read_beir_queries
from presentation_dependence.io.corpus import read_corpus
from presentation_dependence.io.fixture import read_fixture
from presentation_dependence.io.rankllm_json import read_rankllm_json
from presentation_dependence.io.trec import read_qrels, read_run, read_topics
from presentation_dependence.records import Candidate, Qrels, Query, RerankRequest, Run, Topics
from presentation_dependence.registry import Registry

__all__ = [
    "LOADERS",
    "BeirLoader",
    "Dataset",
    "FixtureLoader",
    "Loader",
    "RankLLMJsonLoader",
    "TrecRunLoader",
    "check_loader",
    "load_dataset",
]

LOADERS = Registry[type]("dataloader_class")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Dataset:
    """The queries with their first-stage candidates, and the judgements when there are any."""

    requests: tuple[RerankRequest, ...]
    qrels: Qrels | None
    name: str

    def qids(self) -> list[str]:
        return [r.query.qid for r in self.requests]


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

    def _finish(self, requests: Iterable[RerankRequest], qrels: Qrels | None, name: str) -> Dataset:
        """Apply max_queries, top_k and cfg.qrels; restrict the judgements to the queries kept."""
        kept = list(requests)
        every_qid = {r.query.qid for r in kept}
        if self.cfg.max_queries is not None:
            kept = kept[: self.cfg.max_queries]
        kept = [_top_k(r, self.cfg.top_k) for r in kept]
        override = resolve_path(self.cfg.qrels, "qrels", required=False)
        if override is not None:
            qrels = read_qrels(override)
        if qrels is not None:
            _warn_unmatched(qrels, every_qid)
            qids = {r.query.qid for r in kept}
            qrels = Qrels({q: d for q, d in qrels.judgements.items() if q in qids})
        return Dataset(requests=tuple(kept), qrels=qrels, name=name)


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
    run: Run, topics: Topics | Mapping[str, str], corpus: Mapping[str, str], max_queries: int | None
) -> list[RerankRequest]:
    qids = run.qids()[:max_queries] if max_queries is not None else run.qids()
    return [
        RerankRequest(
            Query(qid, topics[qid]),
            tuple(Candidate(e.docid, corpus[e.docid], e.rank, e.score) for e in run.entries[qid]),
        )
        for qid in qids
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
        requests = _requests_from_run(run, topics, corpus, self.cfg.max_queries)
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
        requests = _requests_from_run(run, topics, corpus, self.cfg.max_queries)
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
