"""PSIRunner: re-score every query under M presentations; store scores; compute psi_metrics.json.

``presdep psi CONFIG --run-dir DIR`` shares the run folder of ``presdep run`` (same config).
Per query, each perturbation of ``robustness.perturbations`` draws its presentations (seeded,
recorded in ``psi/presentations.json``), plus the same-order null (the given order scored
``null_repeats`` times). Results go to ``psi/per_query/<qid>.npz`` atomically, so a killed run
resumes; ``--shard k/n`` splits queries as ``presdep run`` does. When every query is done, the
columnar ``psi/grade_distributions.npz`` and ``psi/psi_metrics.json`` are written.
``from_scores=True`` recomputes the metrics from the columnar file with no model call.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from presentation_dependence.config import ExperimentConfig
from presentation_dependence.data import Dataset, load_dataset
from presentation_dependence.errors import PresdepError
from presentation_dependence.presentations import (
    PerturbationContext,
    draw_presentations,
    same_order,
)
from presentation_dependence.provenance import collect_provenance
from presentation_dependence.records import Qrels, RerankRequest
from presentation_dependence.rerankers import Reranker, build_reranker
from presentation_dependence.robustness.analysis import analyse
from presentation_dependence.robustness.store import (
    NULL,
    QueryScores,
    VariantScores,
    candidate_grades,
    ideal_grades,
    load_columnar,
    read_fingerprint,
    read_query,
    write_columnar,
    write_query,
)
from presentation_dependence.runners.experiment import shard_requests
from presentation_dependence.runners.fingerprint import (
    request_fingerprint,
    resolved_data_paths,
    reuse_problem,
)
from presentation_dependence.runners.progress import progress
from presentation_dependence.runners.run_folder import RunFolder, safe_file_stem

__all__ = ["PSIRunner"]

log = logging.getLogger(__name__)
PSI_DIR = "psi"


class PSIRunner:
    def __init__(
        self,
        cfg: ExperimentConfig,
        run_dir: str | Path,
        *,
        shard: tuple[int, int] | None = None,
        argv: Sequence[str] | None = None,
        reranker: Reranker | None = None,
        recompute_changed: bool = False,
    ) -> None:
        self.cfg = cfg
        self.recompute_changed = recompute_changed
        self.rob = cfg.robustness
        self.seed = self.rob.seed if self.rob.seed is not None else cfg.seed
        self.folder = RunFolder(run_dir)
        self.psi = self.folder.path / PSI_DIR
        self.shard = shard
        self.argv = argv
        self._reranker = reranker
        self._qrels: Qrels | None = None

    @property
    def reranker(self) -> Reranker:
        if self._reranker is None:
            rc = self.cfg.reranker
            self._reranker = build_reranker(rc.reranker_class, rc.options)
        return self._reranker

    # -- presentations ---------------------------------------------------------------------
    def _chunk_size(self) -> int | None:
        b = getattr(self.cfg.reranker.options, "chunk_size", None)
        return int(b) if isinstance(b, int) else None

    def presentations(self, req: RerankRequest, grades: np.ndarray) -> dict[str, np.ndarray]:
        n = len(req.candidates)
        ctx = PerturbationContext(grades, self.rob.relevant_grade, self._chunk_size())
        out = {
            name: draw_presentations(
                name, n, self.rob.num_presentations, self.seed, req.query.qid, ctx
            )
            for name in self.rob.perturbations
        }
        out[NULL] = same_order(n, self.rob.null_repeats or self.rob.num_presentations)
        return out

    def _record_presentations(self, dataset: Dataset, grades: dict[str, np.ndarray]) -> None:
        table = {
            r.query.qid: {
                k: v.tolist() for k, v in self.presentations(r, grades[r.query.qid]).items()
            }
            for r in dataset.requests
        }
        doc = {
            "seed": self.seed,
            "perm_semantics": "slot j shows input candidate perm[j]",
            "presentations": table,
        }
        path = self.psi / "presentations.json"
        text = json.dumps(doc, indent=None, separators=(",", ":")) + "\n"
        same = path.exists() and path.read_text(encoding="utf-8") == text
        scored = any((self.psi / "per_query").glob("*.npz"))
        if path.exists() and not same and scored and not self.recompute_changed:
            raise PresdepError(
                f"{path} holds other presentations than this config draws; the data or the "
                "robustness block changed. Fix: rerun with --recompute-changed to recompute the "
                "changed queries, or use a new --run-dir."
            )
        if not same:
            self.folder.write_text(path.relative_to(self.folder.path), text)

    def _reuse_problem(self, req: RerankRequest, grades: np.ndarray) -> str | None:
        """Why the stored scores of ``req`` cannot be reused (None: they can)."""
        fp, stored = read_fingerprint(self._query_path(req.query.qid))
        problem = reuse_problem(req, [str(d) for d in stored["docids"]], fp)
        if problem is None and not np.array_equal(stored["grades"], grades):
            problem = "the judgements differ"
        if problem is None:
            drawn = self.presentations(req, grades)
            if any(
                f"{k}:perms" not in stored or not np.array_equal(stored[f"{k}:perms"], v)
                for k, v in drawn.items()
            ):
                problem = "the presentations differ"
        return problem

    def _changed(
        self, requests: Sequence[RerankRequest], grades: dict[str, np.ndarray]
    ) -> dict[str, str]:
        """``{qid: what differs}`` for stored queries whose input or presentations differ."""
        changed: dict[str, str] = {}
        for req in requests:
            if self._query_path(req.query.qid).exists():
                problem = self._reuse_problem(req, grades[req.query.qid])
                if problem is not None:
                    changed[req.query.qid] = problem
        if changed and not self.recompute_changed:
            listed = "; ".join(f"query {q!r}: {why}" for q, why in list(changed.items())[:5])
            raise PresdepError(
                f"{len(changed)} finished queries in {self.psi / 'per_query'} were computed from "
                f"other input than this config and data give ({listed}). Fix: rerun with "
                "--recompute-changed to recompute exactly those queries, or use a new --run-dir"
            )
        for qid, why in changed.items():
            log.warning("query %r changed (%s): recomputing it", qid, why)
        return changed

    # -- scoring ---------------------------------------------------------------------------
    def _score_query(self, req: RerankRequest, grades: np.ndarray) -> QueryScores:
        n = len(req.candidates)
        variants = {}
        for name, perms in self.presentations(req, grades).items():
            m = perms.shape[0]
            scores = np.empty((m, n))
            slots = np.zeros((m, n), dtype=np.int64)
            chunks = np.zeros((m, n), dtype=np.int64)
            probs: np.ndarray | None = None
            passes = np.zeros(m, dtype=np.int64)
            tokens = np.zeros(m, dtype=np.int64)
            for p, perm in enumerate(perms):
                res = self.reranker.rank(req.query, [req.candidates[i] for i in perm])
                passes[p] = int(res.details.get("forward_passes", 0))
                tokens[p] = int(res.details.get("prompt_tokens", 0))
                for j, it in enumerate(res.items):
                    i = int(perm[j])
                    scores[p, i] = it.score
                    slots[p, i] = int(it.details.get("slot", j + 1))
                    chunks[p, i] = int(it.details.get("chunk", 0))
                    gp = it.details.get("grade_probs")
                    if gp is not None:
                        if probs is None:
                            probs = np.full((m, n, len(gp)), np.nan)
                        probs[p, i] = gp
            variants[name] = VariantScores(
                perms=perms,
                scores=scores,
                slots=slots,
                chunks=chunks,
                probs=probs if probs is not None else np.full((m, n, 1), np.nan),
                forward_passes=passes,
                prompt_tokens=tokens,
            )
        ideal = ideal_grades(req.query.qid, self._qrels)
        return QueryScores(
            req.query.qid, tuple(c.docid for c in req.candidates), grades, ideal, variants
        )

    def _query_path(self, qid: str) -> Path:
        return self.psi / "per_query" / f"{safe_file_stem(qid)}.npz"

    # -- entry points ----------------------------------------------------------------------
    def run(self, *, from_scores: bool = False) -> dict[str, Any] | None:
        """Score what is missing (unless ``from_scores``); return the metrics once complete."""
        with self.folder.logging_to_file():
            return self._run(from_scores)

    def _run(self, from_scores: bool) -> dict[str, Any] | None:
        folder = self.folder
        columnar = self.psi / "grade_distributions.npz"
        # Inputs are checked (and the data loaded) before the config is frozen, so a failed
        # start leaves no config behind (issue 16, defect 4).
        if from_scores:
            if not columnar.exists():
                raise PresdepError(f"--from-scores needs {columnar}; run 'presdep psi' first")
            folder.freeze_config(self.cfg)  # the scores must come from this config
            return self._analyse(load_columnar(columnar))
        dataset = load_dataset(self.cfg.data)
        if not dataset.requests:
            raise PresdepError(f"the data of {self.cfg.id} has no queries; check the data block")
        paths = resolved_data_paths(self.cfg.data)
        folder.freeze_config(self.cfg, resolved_paths=paths)
        qrels = self._qrels = dataset.qrels
        grades = {r.query.qid: candidate_grades(r, qrels) for r in dataset.requests}
        self._record_presentations(dataset, grades)
        mine = shard_requests(dataset.requests, self.shard)
        changed = self._changed(mine, grades)
        todo = [
            r for r in mine if r.query.qid in changed or not self._query_path(r.query.qid).exists()
        ]
        if changed:
            for stale in (columnar, self.psi / "psi_metrics.json"):
                stale.unlink(missing_ok=True)
        folder.append_provenance(
            collect_provenance(
                argv=self.argv,
                seeds={"seed": self.cfg.seed, "presentation_seed": self.seed},
                extra={
                    "phase": "psi",
                    "data_paths": paths,
                    "reranker": self.reranker.describe() if todo else None,
                    "shard": None if self.shard is None else f"{self.shard[0]}/{self.shard[1]}",
                    "queries": {"this_shard": len(mine), "to_compute": len(todo)},
                },
            )
        )
        for req in progress(todo, f"psi {self.cfg.id}", "query"):
            qid = req.query.qid
            # Another process sharing the folder may hold (or have finished) the query.
            with folder.claim(f"psi:{qid}") as held:
                if not held or (
                    self._query_path(qid).exists() and self._reuse_problem(req, grades[qid]) is None
                ):
                    continue
                write_query(
                    self._query_path(qid),
                    self._score_query(req, grades[qid]),
                    fingerprint=request_fingerprint(req),
                )
        missing = [
            r.query.qid for r in dataset.requests if not self._query_path(r.query.qid).exists()
        ]
        if missing:
            log.info(
                "%d queries still missing; metrics are written once all are done", len(missing)
            )
            return None
        queries = [read_query(self._query_path(r.query.qid)) for r in dataset.requests]
        write_columnar(columnar, queries)
        cost = {
            name: {
                "forward_passes_per_query": float(
                    np.mean([q.variants[name].forward_passes.sum() for q in queries])
                ),
                "prompt_tokens_per_query": float(
                    np.mean([q.variants[name].prompt_tokens.sum() for q in queries])
                ),
            }
            for name in queries[0].variants
        }
        return self._analyse(load_columnar(columnar), cost)

    def _analyse(
        self, table: dict[str, dict[str, np.ndarray]], cost: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        path = self.psi / "psi_metrics.json"
        if cost is None and path.exists():  # --from-scores keeps the recorded cost
            cost = json.loads(path.read_text(encoding="utf-8")).get("cost")
        metrics = analyse(table, self.rob, seed=self.seed)
        metrics["cost"] = cost or {}
        self.folder.write_json(path.relative_to(self.folder.path), metrics)
        log.info("wrote %s", path)
        return metrics
