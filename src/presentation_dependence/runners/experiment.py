"""ExperimentManager: rerank every query of a config's data and write the run folder.

The ``run`` stage of :mod:`~presentation_dependence.runners.stage` writes each query's result
to ``per_query_results/`` atomically; a rerun into the same folder reuses finished queries (so a
killed run resumes to byte-identical outputs), and ``shard=(k, n)`` splits the queries.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from presentation_dependence.config import ExperimentConfig
from presentation_dependence.data import Dataset, load_dataset
from presentation_dependence.errors import PresdepError
from presentation_dependence.io._lines import check_id
from presentation_dependence.io.rankllm_json import write_rankllm_results
from presentation_dependence.io.trec import format_qrels, format_run, read_qrels
from presentation_dependence.records import RankResult, RerankRequest, Run
from presentation_dependence.rerankers import Reranker
from presentation_dependence.runners.command import StageCommand
from presentation_dependence.runners.fingerprint import FINGERPRINT_KEY, resolved_data_paths
from presentation_dependence.runners.run_folder import RANKLLM_RESULTS, RunFolder, default_run_dir
from presentation_dependence.runners.stage import (
    CONFIG_KEY,
    StoredInput,
    config_fingerprint,
    run_stage,
)

__all__ = ["ExperimentManager", "ExperimentSummary", "RerankStage"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExperimentSummary:
    run_dir: Path
    num_queries: int
    computed: int
    reused: int
    complete: bool


def _check_ids(dataset: Dataset, loader: str) -> None:
    """Every id must be writable to run.trec: checked before any compute (the built-in loaders
    check on the line they read; this catches a plugin loader's)."""
    for r in dataset.requests:
        check_id(Path(f"<{loader} data>"), None, r.query.qid, "query id")
        for c in r.candidates:
            check_id(Path(f"<{loader} data, query {r.query.qid}>"), None, c.docid, "docid")


class RerankStage:
    """The ``run`` stage: rank one query; its file is ``per_query_results/<qid>.json``."""

    name = "run"
    unit = "query"

    def __init__(self, folder: RunFolder, reranker: Callable[[], Reranker], config_sha: str):
        self.folder = folder
        self._reranker = reranker
        self.config_sha256 = config_sha

    def path(self, qid: str) -> Path:
        return self.folder.per_query_file(qid)

    def read_input(self, path: Path) -> StoredInput:
        saved = json.loads(path.read_text(encoding="utf-8"))
        return StoredInput(
            docids=[str(it["docid"]) for it in saved["items"]],
            request_sha256=saved.get(FINGERPRINT_KEY),
            config_sha256=saved.get(CONFIG_KEY),
            query_text=saved["query"]["text"],
            texts=saved.get("texts"),
        )

    def stage_problem(self, req: RerankRequest, stored: StoredInput) -> str | None:
        return None

    def compute(self, req: RerankRequest) -> RankResult:
        result = self._reranker().rank(req.query, req.candidates)
        got = [it.candidate.docid for it in result.items]
        if got != [c.docid for c in req.candidates] or result.query.qid != req.query.qid:
            raise PresdepError(
                f"reranker broke the contract on query {req.query.qid!r}: it must return every "
                "input candidate in input order"
            )
        return result

    def write(self, path: Path, record: RankResult, fingerprints: Mapping[str, str]) -> None:
        self.folder.write_json(
            path.relative_to(self.folder.path), {**record.to_dict(), **fingerprints}
        )

    def describe(self) -> dict[str, Any]:
        return {"reranker": self._reranker().describe()}


class ExperimentManager(StageCommand):
    """Load config and data, rerank, write per-query results and the TREC run.

    A finished query is reused only when its stored content fingerprint matches the request the
    data now gives (:mod:`~presentation_dependence.runners.fingerprint`), and ``qrels.txt`` only
    when it holds the judgements the data now gives. Otherwise the run is refused, naming the
    query, unless ``recompute_changed`` (``--recompute-changed``): then exactly the changed
    queries are recomputed and ``qrels.txt`` is replaced (a stale ``metrics.json`` is removed).
    """

    def __init__(self, cfg: ExperimentConfig, run_dir: str | Path | None = None, **kw: Any):
        super().__init__(cfg, run_dir if run_dir is not None else default_run_dir(cfg), **kw)

    def run(self) -> ExperimentSummary:
        with self.folder.logging_to_file():
            return self._run(self.folder)

    def _run(self, folder: RunFolder) -> ExperimentSummary:
        # The data loads (and the loader's name resolves) before the config is frozen, so a
        # typo in the data block leaves no frozen config behind (issue 16, defect 4).
        dataset = load_dataset(self.cfg.data)
        if not dataset.requests:
            raise PresdepError(f"the data of {self.cfg.id} has no queries; check the data block")
        _check_ids(dataset, self.cfg.data.dataloader_class)
        paths = resolved_data_paths(self.cfg.data)
        folder.freeze_config(self.cfg, resolved_paths=paths)
        log.info("run folder: %s", folder.path)
        qrels_replaced = self._sync_qrels(folder, dataset)
        if qrels_replaced and folder.metrics_file.exists():
            folder.metrics_file.unlink()
            log.info("removed the stale %s (rewritten by 'presdep eval')", folder.metrics_file)
        stage = RerankStage(
            folder, lambda: self.reranker, config_fingerprint({"reranker": self.cfg.reranker})
        )
        summary = run_stage(
            stage,
            folder,
            dataset.requests,
            desc=f"rerank {self.cfg.id}",
            shard=self.shard,
            recompute_changed=self.recompute_changed,
            argv=self.argv,
            seeds={"seed": self.cfg.seed},
            provenance={"data_paths": paths, "qrels_replaced": qrels_replaced},
            stale=(folder.run_file, folder.metrics_file),
        )
        if summary.complete:
            self._write_run(folder, dataset)
        s = summary
        return ExperimentSummary(folder.path, s.num_queries, s.computed, s.reused, s.complete)

    def _sync_qrels(self, folder: RunFolder, dataset: Dataset) -> bool:
        """Write ``qrels.txt``, or check it holds the data's judgements (parsed: the order of
        queries and documents does not matter); True when replaced."""
        if dataset.qrels is None or not dataset.qrels.judgements:
            return False
        text = format_qrels(dataset.qrels)
        path = folder.qrels_file
        if not path.exists():
            folder.write_text(path.name, text)
            return False
        if path.read_text(encoding="utf-8") == text:
            return False
        old = read_qrels(path).judgements
        new = dataset.qrels.judgements
        diff = [
            q for q in dict.fromkeys([*new, *old]) if dict(old.get(q, {})) != dict(new.get(q, {}))
        ]
        if not diff:  # the same judgements, written in another order (the data's query order)
            log.info("%s holds the data's judgements (in another order): kept", path)
            return False
        if not self.recompute_changed:
            raise PresdepError(
                f"{path} holds other judgements than the data now gives for {len(diff)} queries "
                f"(e.g. {', '.join(repr(q) for q in diff[:3])}): the judgements changed since "
                "the folder was made. Fix: rerun with --recompute-changed to replace them (then "
                "'presdep eval' again), or use a new --run-dir"
            )
        log.warning("judgements of %d queries changed: replacing %s", len(diff), path)
        folder.write_text(path.name, text)
        return True

    def _write_run(self, folder: RunFolder, dataset: Dataset) -> None:
        results = [
            RankResult.from_dict(json.loads(folder.per_query_file(r.query.qid).read_text("utf-8")))
            for r in dataset.requests
        ]
        run = Run.from_results(results, name=self.cfg.id)
        folder.write_text(folder.run_file.name, format_run(run))
        write_rankllm_results(results, folder.path / RANKLLM_RESULTS)
        log.info("wrote %s (%d queries) and %s", folder.run_file, len(results), RANKLLM_RESULTS)
