"""ExperimentManager: rerank every query of a config's data and write the run folder.

Each query's result is written atomically to ``per_query_results/`` as soon as it is ready.
Rerunning the same config into the same folder reuses finished queries, so a run killed at any
point resumes and ends with byte-identical outputs. ``shard=(k, n)`` ranks only the queries whose
0-based position ``i`` has ``i % n == k``; several processes fill one folder that way, and the
merge is the ordinary resume.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from presentation_dependence.config import ExperimentConfig
from presentation_dependence.data import Dataset, load_dataset
from presentation_dependence.errors import PresdepError
from presentation_dependence.io.rankllm_json import write_rankllm_results
from presentation_dependence.io.trec import write_qrels, write_run
from presentation_dependence.provenance import collect_provenance
from presentation_dependence.records import RankResult, RerankRequest, Run
from presentation_dependence.rerankers import Reranker, build_reranker
from presentation_dependence.runners.progress import progress
from presentation_dependence.runners.run_folder import RANKLLM_RESULTS, RunFolder, default_run_dir

__all__ = ["ExperimentManager", "ExperimentSummary", "parse_shard", "shard_requests"]

log = logging.getLogger(__name__)


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``"k/n"`` (0 <= k < n) -> ``(k, n)``; ``None`` -> ``None``."""
    if text is None:
        return None
    try:
        k_s, n_s = text.split("/")
        k, n = int(k_s), int(n_s)
    except ValueError:
        raise PresdepError(f"--shard {text!r}: expected k/n with integers, e.g. 0/4") from None
    if not (n >= 1 and 0 <= k < n):
        raise PresdepError(f"--shard {text!r}: need n >= 1 and 0 <= k < n")
    return k, n


def shard_requests(
    requests: Sequence[RerankRequest], shard: tuple[int, int] | None
) -> list[RerankRequest]:
    """The requests at 0-based positions ``i`` with ``i % n == k`` (all when ``shard`` is None)."""
    return [r for i, r in enumerate(requests) if shard is None or i % shard[1] == shard[0]]


@dataclass(frozen=True)
class ExperimentSummary:
    run_dir: Path
    num_queries: int
    computed: int
    reused: int
    complete: bool


class ExperimentManager:
    """Load config and data, rerank, write per-query results and the TREC run."""

    def __init__(
        self,
        cfg: ExperimentConfig,
        run_dir: str | Path | None = None,
        *,
        shard: tuple[int, int] | None = None,
        argv: Sequence[str] | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        self.cfg = cfg
        self.folder = RunFolder(run_dir if run_dir is not None else default_run_dir(cfg))
        self.shard = shard
        self.argv = argv
        self._reranker = reranker

    @property
    def reranker(self) -> Reranker:
        if self._reranker is None:
            rc = self.cfg.reranker
            self._reranker = build_reranker(rc.reranker_class, rc.options)
        return self._reranker

    def run(self) -> ExperimentSummary:
        with self.folder.logging_to_file():
            return self._run(self.folder)

    def _run(self, folder: RunFolder) -> ExperimentSummary:
        folder.freeze_config(self.cfg)
        log.info("run folder: %s", folder.path)
        dataset = load_dataset(self.cfg.data)
        if not dataset.requests:
            raise PresdepError(f"the data of {self.cfg.id} has no queries; check the data block")
        if (
            dataset.qrels is not None
            and dataset.qrels.judgements
            and not folder.qrels_file.exists()
        ):
            write_qrels(dataset.qrels, folder.qrels_file)
        mine = shard_requests(dataset.requests, self.shard)
        finished = folder.finished_qids()
        todo = [r for r in mine if r.query.qid not in finished]
        for r in mine:
            if r.query.qid in finished:
                self._check_reusable(folder, r)
        describe = self.reranker.describe() if todo else None
        folder.append_provenance(
            collect_provenance(
                argv=self.argv,
                seeds={"seed": self.cfg.seed},
                extra={
                    "phase": "run",
                    "shard": None if self.shard is None else f"{self.shard[0]}/{self.shard[1]}",
                    "reranker": describe,
                    "queries": {
                        "total": len(dataset.requests),
                        "this_shard": len(mine),
                        "reused": len(mine) - len(todo),
                        "to_compute": len(todo),
                    },
                },
            )
        )
        log.info(
            "%d queries in this shard: %d finished earlier, %d to rank",
            len(mine),
            len(mine) - len(todo),
            len(todo),
        )
        for req in progress(todo, f"rerank {self.cfg.id}", "query"):
            result = self.reranker.rank(req.query, req.candidates)
            self._check_result(req, result)
            folder.write_json(
                folder.per_query_file(req.query.qid).relative_to(folder.path), result.to_dict()
            )
        complete = self._write_run_if_complete(folder, dataset)
        return ExperimentSummary(
            folder.path, len(dataset.requests), len(todo), len(mine) - len(todo), complete
        )

    @staticmethod
    def _check_result(req: RerankRequest, result: RankResult) -> None:
        got = [it.candidate.docid for it in result.items]
        want = [c.docid for c in req.candidates]
        if got != want or result.query.qid != req.query.qid:
            raise PresdepError(
                f"reranker broke the contract on query {req.query.qid!r}: it must return every "
                "input candidate in input order"
            )

    @staticmethod
    def _check_reusable(folder: RunFolder, req: RerankRequest) -> None:
        path = folder.per_query_file(req.query.qid)
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            docids = [it["docid"] for it in saved["items"]]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise PresdepError(
                f"{path} is unreadable ({e}); delete it and rerun to recompute that query"
            ) from None
        if docids != [c.docid for c in req.candidates]:
            raise PresdepError(
                f"{path} holds other candidates than the data now gives for query "
                f"{req.query.qid!r}; the data changed since it was written. Use a new --run-dir."
            )

    def _write_run_if_complete(self, folder: RunFolder, dataset: Dataset) -> bool:
        finished = folder.finished_qids()
        missing = [r.query.qid for r in dataset.requests if r.query.qid not in finished]
        if missing:
            log.info(
                "%d of %d queries still missing; run.trec is written once all are done",
                len(missing),
                len(dataset.requests),
            )
            return False
        results = [
            RankResult.from_dict(json.loads(folder.per_query_file(r.query.qid).read_text("utf-8")))
            for r in dataset.requests
        ]
        run = Run.from_results(results, name=self.cfg.id)
        write_run(run, folder.run_file)
        write_rankllm_results(results, folder.path / RANKLLM_RESULTS)
        log.info("wrote %s (%d queries) and %s", folder.run_file, len(results), RANKLLM_RESULTS)
        return True
