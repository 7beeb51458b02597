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
from presentation_dependence.io._lines import check_id
from presentation_dependence.io.rankllm_json import write_rankllm_results
from presentation_dependence.io.trec import format_qrels, format_run, read_qrels
from presentation_dependence.provenance import collect_provenance
from presentation_dependence.records import RankResult, RerankRequest, Run
from presentation_dependence.rerankers import Reranker, build_reranker
from presentation_dependence.runners.fingerprint import (
    FINGERPRINT_KEY,
    request_fingerprint,
    resolved_data_paths,
    reuse_problem,
)
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


def _check_ids(dataset: Dataset, loader: str) -> None:
    """Every id must be writable to run.trec: checked before any compute (the built-in loaders
    check on the line they read; this catches a plugin loader's)."""
    for r in dataset.requests:
        check_id(Path(f"<{loader} data>"), None, r.query.qid, "query id")
        for c in r.candidates:
            check_id(Path(f"<{loader} data, query {r.query.qid}>"), None, c.docid, "docid")


class ExperimentManager:
    """Load config and data, rerank, write per-query results and the TREC run.

    A finished query is reused only when its stored content fingerprint matches the request the
    data now gives (:mod:`~presentation_dependence.runners.fingerprint`), and ``qrels.txt`` only
    when it holds the judgements the data now gives. Otherwise the run is refused, naming the
    query, unless ``recompute_changed`` (``--recompute-changed``): then exactly the changed
    queries are recomputed and ``qrels.txt`` is replaced (a stale ``metrics.json`` is removed).
    """

    def __init__(
        self,
        cfg: ExperimentConfig,
        run_dir: str | Path | None = None,
        *,
        shard: tuple[int, int] | None = None,
        argv: Sequence[str] | None = None,
        reranker: Reranker | None = None,
        recompute_changed: bool = False,
    ) -> None:
        self.cfg = cfg
        self.folder = RunFolder(run_dir if run_dir is not None else default_run_dir(cfg))
        self.shard = shard
        self.argv = argv
        self._reranker = reranker
        self.recompute_changed = recompute_changed

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
        mine = shard_requests(dataset.requests, self.shard)
        changed = self._changed(folder, mine)
        todo = [
            r
            for r in mine
            if r.query.qid in changed or not folder.per_query_file(r.query.qid).exists()
        ]
        stale = ([folder.run_file] if changed else []) + (
            [folder.metrics_file] if changed or qrels_replaced else []
        )
        for path in stale:
            if path.exists():
                path.unlink()
                log.info("removed the stale %s (rewritten once the run is complete)", path)
        describe = self.reranker.describe() if todo else None
        folder.append_provenance(
            collect_provenance(
                argv=self.argv,
                seeds={"seed": self.cfg.seed},
                extra={
                    "phase": "run",
                    "shard": None if self.shard is None else f"{self.shard[0]}/{self.shard[1]}",
                    "reranker": describe,
                    "data_paths": paths,
                    "queries": {
                        "total": len(dataset.requests),
                        "this_shard": len(mine),
                        "reused": len(mine) - len(todo),
                        "to_compute": len(todo),
                        "recomputed_changed": len(changed),
                    },
                    "qrels_replaced": qrels_replaced,
                },
            )
        )
        log.info(
            "%d queries in this shard: %d finished earlier, %d to rank",
            len(mine),
            len(mine) - len(todo),
            len(todo),
        )
        computed = elsewhere = 0
        for req in progress(todo, f"rerank {self.cfg.id}", "query"):
            # Another process on this folder (same shard, or none given) may hold the query.
            with folder.claim(req.query.qid) as mine_now:
                if not mine_now or self._current(folder, req):
                    elsewhere += 1
                    continue
                result = self.reranker.rank(req.query, req.candidates)
                self._check_result(req, result)
                record = {**result.to_dict(), FINGERPRINT_KEY: request_fingerprint(req)}
                rel = folder.per_query_file(req.query.qid).relative_to(folder.path)
                folder.write_json(rel, record)
                computed += 1
        if elsewhere:
            log.info("%d queries were ranked by another process sharing this folder", elsewhere)
        complete = self._write_run_if_complete(folder, dataset)
        return ExperimentSummary(
            folder.path, len(dataset.requests), computed, len(mine) - len(todo), complete
        )

    @staticmethod
    def _current(folder: RunFolder, req: RerankRequest) -> bool:
        """True when the query's stored result was computed from this very request (by another
        process while this one waited)."""
        path = folder.per_query_file(req.query.qid)
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return bool(saved.get(FINGERPRINT_KEY) == request_fingerprint(req))

    @staticmethod
    def _check_result(req: RerankRequest, result: RankResult) -> None:
        got = [it.candidate.docid for it in result.items]
        want = [c.docid for c in req.candidates]
        if got != want or result.query.qid != req.query.qid:
            raise PresdepError(
                f"reranker broke the contract on query {req.query.qid!r}: it must return every "
                "input candidate in input order"
            )

    def _changed(self, folder: RunFolder, requests: Sequence[RerankRequest]) -> dict[str, str]:
        """``{qid: what differs}`` for finished queries whose stored input differs from the data;
        refused unless ``recompute_changed``."""
        changed: dict[str, str] = {}
        for req in requests:
            path = folder.per_query_file(req.query.qid)
            if not path.exists():
                continue
            try:
                saved = json.loads(path.read_text(encoding="utf-8"))
                docids = [str(it["docid"]) for it in saved["items"]]
                query_text = saved["query"]["text"]
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise PresdepError(
                    f"{path} is unreadable ({e}); delete it and rerun to recompute that query"
                ) from None
            problem = reuse_problem(
                req,
                docids,
                saved.get(FINGERPRINT_KEY),
                query_text=query_text,
                texts=saved.get("texts"),
            )
            if problem is not None:
                changed[req.query.qid] = problem
        if changed and not self.recompute_changed:
            listed = "; ".join(f"query {q!r}: {why}" for q, why in list(changed.items())[:5])
            raise PresdepError(
                f"{len(changed)} finished queries in {folder.per_query_dir} were computed from "
                f"other content than the data now gives ({listed}). The data changed since "
                f"(the paths it resolved to are in {folder.resolved_config}). Fix: rerun with "
                "--recompute-changed to recompute exactly those queries, or use a new --run-dir"
            )
        for qid, why in changed.items():
            log.warning("query %r changed (%s): recomputing it", qid, why)
        return changed

    def _sync_qrels(self, folder: RunFolder, dataset: Dataset) -> bool:
        """Write ``qrels.txt``, or check it holds the data's judgements; True when replaced."""
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

    def _write_run_if_complete(self, folder: RunFolder, dataset: Dataset) -> bool:
        missing = [
            r.query.qid for r in dataset.requests if not folder.per_query_file(r.query.qid).exists()
        ]
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
        folder.write_text(folder.run_file.name, format_run(run))
        write_rankllm_results(results, folder.path / RANKLLM_RESULTS)
        log.info("wrote %s (%d queries) and %s", folder.run_file, len(results), RANKLLM_RESULTS)
        return True
