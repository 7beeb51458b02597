"""Loaders for ir_datasets corpora and Hugging Face ``datasets`` / parquet files (optional).

``IrDatasetsLoader``: ``data.path`` is an ir_datasets id (``msmarco-passage/trec-dl-2019``);
candidates come from ``data.run`` (a TREC run) or, without one, from the dataset's own
``scoreddocs``; texts from its ``docs_store`` (title and text joined by a space), query texts
from its queries, judgements from its qrels unless ``data.qrels`` is set. ir_datasets is
imported on first use (the ``irds`` extra).

``ParquetLoader``: ``data.path`` is a parquet file, as the Hugging Face hub stores datasets
(``datasets.Dataset.to_parquet`` writes one), read with pyarrow (the ``hub`` extra). Each row is
either a rank_llm request (columns ``query`` {text, qid} and ``candidates`` [{docid, score,
doc}], or RankGPT's ``hits``), or one candidate in long form: ``qid``, ``query``, ``docid``,
``text`` and optionally ``rank`` (else row order within the query) and ``score``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from presentation_dependence.data.config import resolve_path
from presentation_dependence.data.irds import _qrels_from, _query_text, irds_text
from presentation_dependence.data.loaders import LOADERS, Dataset, Loader
from presentation_dependence.errors import ConfigError, InputFormatError, PresdepError
from presentation_dependence.io.rankllm_json import request_from_obj
from presentation_dependence.io.trec import read_run
from presentation_dependence.optional import import_optional
from presentation_dependence.records import Candidate, Query, RerankRequest

__all__ = ["IrDatasetsLoader", "ParquetLoader"]

LONG_FIX = "give every row qid, query, docid and text (rank and score optional), or rank_llm's query/candidates"


@LOADERS.register()
class IrDatasetsLoader(Loader):
    """``data.path``: an ir_datasets id; ``data.run``: an optional TREC run over its corpus."""

    def load(self) -> Dataset:
        dataset_id = self.cfg.path
        if not isinstance(dataset_id, str) or not dataset_id:
            raise ConfigError("IrDatasetsLoader: set data.path to an ir_datasets id")
        ir_datasets = import_optional("ir_datasets", extra="irds", purpose="IrDatasetsLoader")
        try:
            return self._load(ir_datasets, dataset_id)
        except PresdepError:
            raise
        except Exception as e:  # ir_datasets fetches files lazily, on first iteration
            if not _download_failure(e):
                raise
            raise ConfigError(
                f"data.path: ir_datasets could not download {dataset_id!r} ({type(e).__name__}: "
                f"{e}); this machine is offline or the source is gone. Fix: run once where "
                "there is network (ir_datasets caches under $IR_DATASETS_HOME, default "
                "~/.ir_datasets, which you can copy here), or read a local copy with BeirLoader "
                "or TrecRunLoader (docs/DATA-SETUP.md)"
            ) from None

    def _load(self, ir_datasets: Any, dataset_id: str) -> Dataset:
        try:
            ds = ir_datasets.load(dataset_id)
        except KeyError as e:
            raise ConfigError(
                f"data.path: ir_datasets has no dataset {dataset_id!r} ({e})"
            ) from None
        run_path = resolve_path(self.cfg.run, "run", required=False)
        if run_path is not None:
            run = read_run(run_path)
            ranked = {q: [(e.docid, e.score) for e in run.entries[q]] for q in run.qids()}
        elif ds.has_scoreddocs():
            ranked = {}
            for sd in ds.scoreddocs_iter():
                ranked.setdefault(str(sd.query_id), []).append((str(sd.doc_id), float(sd.score)))
            ranked = {
                q: sorted(v, key=lambda x: (x[1], x[0]), reverse=True) for q, v in ranked.items()
            }
        else:
            raise ConfigError(
                f"IrDatasetsLoader: {dataset_id!r} has no scoreddocs; set data.run to a TREC run"
            )
        queries = {str(q.query_id): _query_text(q) for q in ds.queries_iter()}
        own = None if self.cfg.qrels is not None or not ds.has_qrels() else ds.qrels_iter()
        sel = self._select(list(ranked), None if own is None else _qrels_from(own, set(ranked)))
        keep = sel.qids  # selected before the texts are fetched
        wanted = {d for q in keep for d, _ in ranked[q][: self.cfg.top_k]}
        docs = ds.docs_store().get_many(wanted)
        requests = []
        for qid in keep:
            if qid not in queries:
                raise PresdepError(f"query {qid!r} of the run is not in {dataset_id!r}")
            missing = [d for d, _ in ranked[qid][: self.cfg.top_k] if d not in docs]
            if missing:
                raise PresdepError(
                    f"docids {missing[:5]} of query {qid!r} are not in {dataset_id!r}"
                )
            cands = tuple(
                Candidate(d, irds_text(docs[d]), i, s)
                for i, (d, s) in enumerate(ranked[qid][: self.cfg.top_k], start=1)
            )
            requests.append(RerankRequest(Query(qid, queries[qid]), cands))
        return self._apply(requests, sel, dataset_id.replace("/", "_"))


def _download_failure(e: BaseException) -> bool:
    """An error of ir_datasets' downloader: a connection error, or its own error whose message
    says a download failed (``All download sources failed``)."""
    return isinstance(e, (ConnectionError, TimeoutError)) or "download" in str(e).lower()


@LOADERS.register()
class ParquetLoader(Loader):
    """``data.path``: a parquet file (Hugging Face datasets), rank_llm rows or long rows."""

    def load(self) -> Dataset:
        path = self._path("path")
        pq = import_optional("pyarrow.parquet", extra="hub", purpose="ParquetLoader")
        rows = pq.read_table(path).to_pylist()
        if not rows:
            raise InputFormatError(path, None, "at least one row", "an empty table", LONG_FIX)
        if "candidates" in rows[0] or "hits" in rows[0]:
            requests = [request_from_obj(r, path, i) for i, r in enumerate(rows, start=1)]
        else:
            requests = _long_rows(rows, str(path))
        return self._finish(requests, None, path.stem)


def _long_rows(rows: Iterable[dict[str, Any]], path: str) -> list[RerankRequest]:
    grouped: dict[str, tuple[str, list[tuple[int, int, Candidate]]]] = {}
    for i, row in enumerate(rows, start=1):
        try:
            qid, query, docid, text = (str(row[k]) for k in ("qid", "query", "docid", "text"))
        except KeyError as e:
            raise InputFormatError(
                path, i, f"a column {e}", f"columns {sorted(row)}", LONG_FIX
            ) from None
        entry = grouped.setdefault(qid, (query, []))
        rank = row.get("rank")
        pos = len(entry[1]) + 1
        score = row.get("score")
        entry[1].append(
            (
                int(rank) if rank is not None else pos,
                pos,
                Candidate(docid, text, pos, math.nan if score is None else float(score)),
            )
        )
    requests = []
    for qid, (query, cands) in grouped.items():
        ordered = [c for _, _, c in sorted(cands, key=lambda x: (x[0], x[1]))]
        renumbered = tuple(
            Candidate(c.docid, c.text, i, c.score) for i, c in enumerate(ordered, start=1)
        )
        try:
            requests.append(RerankRequest(Query(qid, query), renumbered))
        except ValueError as e:
            raise InputFormatError(
                path, None, "each docid once per query", str(e), LONG_FIX
            ) from None
    return requests
