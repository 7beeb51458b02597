"""A Java-free BM25 first stage (bm25s) over any BEIR-layout folder.

The default, :data:`PRESETS` ``"pyserini-flat"``, emulates Pyserini's *BM25 flat* BEIR baseline
(the first stage the BEIR rows of the reranking population declare): one field holding
``title + " " + text``, Lucene's BM25 (``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``, no
``(k1 + 1)`` factor), ``k1 = 0.9``, ``b = 0.4``, lower-casing, Lucene's 33 English stopwords and
the Porter stemmer (Anserini's default English analyzer). Tokens are bm25s's regex
``(?u)\\b\\w\\w+\\b`` rather than Lucene's StandardTokenizer, and Lucene stores document lengths
lossily, so the run is close to, not identical with, Pyserini's (docs/DATA-SETUP.md has the
measured figures).

Determinism: every query's documents are scored exhaustively, scores are rounded to the 6
decimals the TREC file keeps, and the run is ordered score descending then docid descending,
which is trec_eval's own order, so the written file means the same to every reader. Documents
with score 0 (no query term) are not retrieved. With ``remove_query_ids`` a document whose id
equals the query id is dropped (BEIR's ``ignore_identical_ids``, Pyserini's ``--remove-query``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from presentation_dependence.config.eval_config import EvalConfig
from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.firststage.meta import (
    CollectionInfo,
    RunRecord,
    ensure_compatible,
    record_run,
)
from presentation_dependence.io.beir import read_beir_corpus, read_beir_qrels, read_beir_queries
from presentation_dependence.io.trec import write_run
from presentation_dependence.metrics.measures import evaluate_run
from presentation_dependence.provenance import file_sha256, package_versions, utc_now
from presentation_dependence.records import Qrels, Run, RunEntry
from presentation_dependence.requirements import check_module, require

__all__ = [
    "LUCENE_ENGLISH_STOPWORDS",
    "PRESETS",
    "BM25Outcome",
    "BM25Params",
    "bm25_search",
    "params_from",
    "run_bm25s_beir",
]

log = logging.getLogger(__name__)

# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET (also Elasticsearch's `_english_`).
LUCENE_ENGLISH_STOPWORDS = [
    "a",
    "an",
    "and",
    "are",
    "as",
    "at",
    "be",
    "but",
    "by",
    "for",
    "if",
    "in",
    "into",
    "is",
    "it",
    "no",
    "not",
    "of",
    "on",
    "or",
    "such",
    "that",
    "the",
    "their",
    "then",
    "there",
    "these",
    "they",
    "this",
    "to",
    "was",
    "will",
    "with",
]

Method = Literal["lucene", "robertson", "atire", "bm25l", "bm25+"]


@dataclass(frozen=True)
class BM25Params:
    """Every parameter that changes a bm25s run (recorded in ``dataset_meta.yaml``)."""

    method: Method = "lucene"
    k1: float = 0.9
    b: float = 0.4
    delta: float = 0.5
    stemmer: str | None = "porter"
    stopwords: Literal["lucene-en", "none"] = "lucene-en"
    lowercase: bool = True
    token_pattern: str = r"(?u)\b\w\w+\b"
    depth: int = 1000
    remove_query_ids: bool = True

    def __post_init__(self) -> None:
        if self.k1 < 0:
            raise ConfigError(f"BM25 k1 must be >= 0, got {self.k1}")
        if not 0.0 <= self.b <= 1.0:
            raise ConfigError(f"BM25 b must be in [0, 1], got {self.b}")
        if self.depth < 1:
            raise ConfigError(f"BM25 depth must be >= 1, got {self.depth}")

    def describe(self) -> str:
        stem = self.stemmer or "no stemming"
        stop = "Lucene English stopwords" if self.stopwords == "lucene-en" else "no stopwords"
        return (
            f"BM25 ({self.method}) k1={self.k1:g} b={self.b:g}, {stem}, {stop}, "
            f"title+text in one field, depth {self.depth}"
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


PRESETS: dict[str, BM25Params] = {
    # Pyserini's BEIR "BM25 flat" (Anserini's English analyzer, k1=0.9, b=0.4).
    "pyserini-flat": BM25Params(),
    # No stemming, no stopwords: the "plain BM25" of ../shared/data/README.md.
    "plain": BM25Params(stemmer=None, stopwords="none"),
    # Elasticsearch's defaults (k1=1.2, b=0.75) with its English analyzer, on one field.
    "elasticsearch": BM25Params(k1=1.2, b=0.75),
}


def _stemmer(name: str | None) -> Any:
    if name is None:
        return None
    import Stemmer

    try:
        return Stemmer.Stemmer(name)
    except KeyError:
        raise ConfigError(
            f"unknown stemmer {name!r}; PyStemmer knows: {', '.join(Stemmer.algorithms())}"
        ) from None


def _require_bm25s(params: BM25Params) -> None:
    require(
        "run the bm25s first stage",
        [
            check_module("bm25s", "bm25", "bm25s"),
            check_module("Stemmer", "bm25", "PyStemmer") if params.stemmer else None,
        ],
    )


def _top(scores: np.ndarray, docids: Sequence[str], depth: int, exclude: str | None) -> list:
    """``[(score, docid)]``: the ``depth`` best non-zero scores in trec_eval order."""
    rounded = np.round(scores.astype(np.float64), 6)
    nonzero = np.flatnonzero(rounded != 0.0)
    if nonzero.size == 0:
        return []
    if nonzero.size > depth:
        vals = rounded[nonzero]
        kth = np.partition(-vals, depth - 1)[depth - 1]
        nonzero = nonzero[vals >= -kth]  # every document tied with the depth-th is a candidate
    rows = sorted(
        ((float(rounded[i]), docids[int(i)]) for i in nonzero if docids[int(i)] != exclude),
        reverse=True,  # score descending, then docid descending: trec_eval's order
    )
    return rows[:depth]


def bm25_search(
    docids: Sequence[str],
    texts: Sequence[str],
    queries: Mapping[str, str],
    params: BM25Params,
    *,
    tag: str = "bm25s",
) -> Run:
    """Rank ``texts`` (parallel to ``docids``) for every query with bm25s; see the module doc."""
    _require_bm25s(params)
    import bm25s

    if len(docids) != len(texts) or not docids:
        raise PresdepError(f"got {len(docids)} docids and {len(texts)} texts; need equal, > 0")
    stemmer = _stemmer(params.stemmer)
    stop = list(LUCENE_ENGLISH_STOPWORDS) if params.stopwords == "lucene-en" else []
    tok_kw: dict[str, Any] = {
        "lower": params.lowercase,
        "token_pattern": params.token_pattern,
        "stopwords": stop,
        "stemmer": stemmer,
        "show_progress": False,
    }
    t0 = time.perf_counter()
    corpus_tokens = bm25s.tokenize(list(texts), return_ids=True, **tok_kw)
    retriever = bm25s.BM25(k1=params.k1, b=params.b, delta=params.delta, method=params.method)
    retriever.index(corpus_tokens, show_progress=False)
    log.info("indexed %d documents in %.1f s", len(docids), time.perf_counter() - t0)
    qids = list(queries)
    query_tokens = bm25s.tokenize([queries[q] for q in qids], return_ids=False, **tok_kw)
    entries: dict[str, tuple[RunEntry, ...]] = {}
    empty = []
    for qid, tokens in zip(qids, query_tokens, strict=True):
        ids = retriever.get_tokens_ids([t for t in tokens if t])
        if not ids:
            empty.append(qid)
            continue
        scores = retriever.get_scores_from_ids(ids)
        exclude = qid if params.remove_query_ids else None
        rows = _top(scores, docids, params.depth, exclude)
        if not rows:
            empty.append(qid)
            continue
        entries[qid] = tuple(RunEntry(qid, d, r, s, tag) for r, (s, d) in enumerate(rows, start=1))
    if empty:
        log.warning(
            "%d of %d queries retrieved nothing (no indexed term): %s",
            len(empty),
            len(qids),
            ", ".join(empty[:10]) + (" ..." if len(empty) > 10 else ""),
        )
    log.info("ranked %d queries in %.1f s", len(qids), time.perf_counter() - t0)
    return Run(entries=entries, name=tag)


@dataclass(frozen=True)
class BM25Outcome:
    """What :func:`run_bm25s_beir` wrote and measured."""

    run_path: Path
    meta_path: Path
    num_queries: int
    metrics: dict[str, float] | None


def _queries_to_run(folder: Path, split: str, all_queries: bool) -> tuple[dict[str, str], Qrels]:
    topics = read_beir_queries(folder)
    qrels = read_beir_qrels(folder, split)
    if all_queries:
        return dict(topics.queries), qrels
    missing = [q for q in qrels.qids() if q not in topics]
    if missing:
        log.warning(
            "%d judged queries of split %r are not in queries.jsonl: %s",
            len(missing),
            split,
            ", ".join(missing[:10]),
        )
    # queries.jsonl order, restricted to the judged queries of the split (as BEIR does)
    judged = set(qrels.qids())
    return {q: t for q, t in topics.queries.items() if q in judged}, qrels


def run_bm25s_beir(
    folder: str | Path,
    out_run: str | Path,
    params: BM25Params | None = None,
    *,
    split: str = "test",
    all_queries: bool = False,
    evaluate: bool = True,
    dataset: str | None = None,
    argv: Sequence[str] = (),
) -> BM25Outcome:
    """BM25 over ``<folder>/corpus.jsonl`` for the queries of ``qrels/<split>.tsv``.

    Writes the TREC run ``out_run`` (tag ``bm25s``) and records it in ``dataset_meta.yaml``
    next to it (parameters, library versions, corpus checksum and, with ``evaluate``, nDCG@10,
    recall@100 and recall@1000 against the split's judgements via pytrec_eval).
    """
    params = params or PRESETS["pyserini-flat"]
    _require_bm25s(params)
    folder, out_run = Path(folder), Path(out_run)
    name = dataset or (folder.parent.name if folder.name == "beir" else folder.name)
    corpus = read_beir_corpus(folder)
    queries, qrels = _queries_to_run(folder, split, all_queries)
    if not queries:
        raise PresdepError(f"{folder}: no queries to run for split {split!r}")
    collection = CollectionInfo(
        path=str(folder),
        layout="beir",
        corpus_sha256=file_sha256(folder / "corpus.jsonl"),
        num_docs=len(corpus),
        num_queries=len(queries),
        split=split,
    )
    ensure_compatible(out_run.parent, name, collection)  # before any work
    docids = list(corpus)
    run = bm25_search(docids, [corpus[d] for d in docids], queries, params)
    write_run(run, out_run, tie_safe=False)
    evaluation = _evaluation(run, qrels, folder, split, out_run) if evaluate else None
    record = RunRecord(
        retriever="bm25s",
        description=params.describe(),
        parameters={**params.to_dict(), "split": split, "all_queries": all_queries},
        libraries=package_versions(["bm25s", "PyStemmer", "numpy", "presentation-dependence"]),
        depth=params.depth,
        created_utc=utc_now(),
        command=list(argv),
        evaluation=evaluation,
    )
    meta = record_run(out_run.parent, name, collection, out_run.name, record)
    metrics = None if evaluation is None else evaluation["measures"]
    return BM25Outcome(out_run, meta, len(queries), metrics)


def _evaluation(run: Run, qrels: Qrels, folder: Path, split: str, out_run: Path) -> dict[str, Any]:
    """nDCG@10, recall@100 and recall@1000 of ``run`` against the split's judgements, as the
    run's record holds them."""
    ev = evaluate_run(run, qrels, EvalConfig(measures=["ndcg@10", "recall@100", "recall@1000"]))
    metrics = {k: round(v, 4) for k, v in ev["mean"].items()}
    log.info("%s: %s over %d queries", out_run, metrics, ev["num_queries"])
    return {
        "qrels": str(folder / "qrels" / f"{split}.tsv"),
        "measures": metrics,
        "num_queries": ev["num_queries"],
        "tool": "pytrec_eval (presentation_dependence.runners.evaluate_run)",
    }


def params_from(preset: str, **overrides: Any) -> BM25Params:
    """A preset with some fields replaced (``None`` values are ignored)."""
    if preset not in PRESETS:
        raise ConfigError(f"unknown BM25 preset {preset!r}; choose one of {', '.join(PRESETS)}")
    changes = {k: v for k, v in overrides.items() if v is not None}
    if str(changes.get("stemmer", "")).lower() == "none":
        changes["stemmer"] = None
    return replace(PRESETS[preset], **changes)
