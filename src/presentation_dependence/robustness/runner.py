"""PSIRunner: re-score every query under M presentations; store scores; compute psi_metrics.json.

``presdep psi CONFIG --run-dir DIR`` shares the run folder of ``presdep run`` (same config).
Per query, each perturbation of ``robustness.perturbations`` draws its presentations (seeded,
recorded in ``psi/presentations.json``), plus the same-order null (the given order scored
``null_repeats`` times). Results go to ``psi/per_query/<qid>.npz`` atomically, so a killed run
resumes; ``--shard k/n`` splits queries as ``presdep run`` does. When every query is done, the
columnar ``psi/grade_distributions.npz`` and ``psi/psi_metrics.json`` are written.
``from_scores=True`` recomputes the metrics from the columnar file with no model call, after
checking that its candidates and judgements are still those of the data, when the data is on
this machine (:mod:`.scores_check`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from presentation_dependence.config import ExperimentConfig
from presentation_dependence.data import Dataset, load_dataset
from presentation_dependence.errors import PresdepError
from presentation_dependence.presentations import score_presentations
from presentation_dependence.records import Qrels, RerankRequest
from presentation_dependence.robustness.analysis import analyse, no_order
from presentation_dependence.robustness.scores_check import check_stored_inputs
from presentation_dependence.robustness.store import (
    QueryScores,
    candidate_grades,
    ideal_grades,
    load_columnar,
    read_input,
    read_query,
    write_columnar,
    write_query,
)
from presentation_dependence.runners.command import StageCommand
from presentation_dependence.runners.fingerprint import resolved_data_paths
from presentation_dependence.runners.run_folder import safe_file_stem
from presentation_dependence.runners.stage import (
    StoredInput,
    config_fingerprint,
    run_stage,
)

__all__ = ["PSIRunner", "PSIStage"]

log = logging.getLogger(__name__)
PSI_DIR = "psi"
PER_QUERY = "per_query"
COLUMNAR = "grade_distributions.npz"  # psi/: every score and P(g), ids only (store.py)


class PSIRunner(StageCommand):
    def __init__(self, cfg: ExperimentConfig, run_dir: str | Path, **kw: Any) -> None:
        super().__init__(cfg, run_dir, **kw)
        self.rob = cfg.robustness
        self.psi = self.folder.path / PSI_DIR
        self._qrels: Qrels | None = None

    def _record_presentations(self, dataset: Dataset, grades: dict[str, np.ndarray]) -> None:
        table = {
            r.query.qid: {
                k: v.tolist() for k, v in self.presentations(r, grades[r.query.qid]).items()
            }
            for r in dataset.requests
        }
        doc = {
            "seed": self.presentation_seed,
            "perm_semantics": "slot j shows input candidate perm[j]",
            "presentations": table,
        }
        path = self.psi / "presentations.json"
        text = json.dumps(doc, indent=None, separators=(",", ":")) + "\n"
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if old == text:
            return
        # Compared parsed: the same presentations in another query order (the data file's
        # queries reordered) are the same (issue 38, defect 15); the file takes the new order.
        same = old is not None and json.loads(old) == doc
        scored = any((self.psi / PER_QUERY).glob("*.npz"))
        if old is not None and not same and scored and not self.recompute_changed:
            raise PresdepError(
                f"{path} holds other presentations than this config draws; the data or the "
                "robustness block changed. Fix: rerun with --recompute-changed to recompute the "
                "changed queries, or use a new --run-dir."
            )
        self.folder.write_text(path.relative_to(self.folder.path), text)

    # -- entry points ----------------------------------------------------------------------
    def run(self, *, from_scores: bool = False) -> dict[str, Any] | None:
        """Score what is missing (unless ``from_scores``); return the metrics once complete."""
        with self.folder.logging_to_file():
            return self._run(from_scores)

    def _run(self, from_scores: bool) -> dict[str, Any] | None:
        folder = self.folder
        columnar = self.psi / COLUMNAR
        # Inputs are checked (and the data loaded) before the config is frozen, so a failed
        # start leaves no config behind (issue 16, defect 4).
        if from_scores:
            if not columnar.exists():
                raise PresdepError(f"--from-scores needs {columnar}; run 'presdep psi' first")
            check_stored_inputs(self.cfg, columnar)  # the data and judgements now, if here
            folder.freeze_config(self.cfg)  # the scores must come from this config
            return self._analyse()
        dataset = load_dataset(self.cfg.data)
        if not dataset.requests:
            raise PresdepError(f"the data of {self.cfg.id} has no queries; check the data block")
        if all(len(r.candidates) < 2 for r in dataset.requests):
            raise no_order(len(dataset.requests))  # before any scoring (analysis.orderable)
        paths = resolved_data_paths(self.cfg.data)
        folder.freeze_config(self.cfg, resolved_paths=paths)
        qrels = self._qrels = dataset.qrels
        grades = {r.query.qid: candidate_grades(r, qrels) for r in dataset.requests}
        self._record_presentations(dataset, grades)
        stage = PSIStage(self, grades)
        summary = run_stage(
            stage,
            folder,
            dataset.requests,
            desc=f"psi {self.cfg.id}",
            shard=self.shard,
            recompute_changed=self.recompute_changed,
            argv=self.argv,
            seeds={"seed": self.cfg.seed, "presentation_seed": self.presentation_seed},
            provenance={"data_paths": paths},
            stale=(columnar, self.psi / "psi_metrics.json"),
        )
        if not summary.complete:
            return None
        queries = [read_query(stage.path(r.query.qid)) for r in dataset.requests]
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
        return self._analyse(cost)

    def metrics_from_scores(self, cost: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """What ``psi/psi_metrics.json`` holds, computed from ``psi/grade_distributions.npz``
        alone and written nowhere: no model, no data. Without ``cost`` the cost recorded in
        ``psi_metrics.json`` is kept (it is counted while scoring, not stored with the scores).
        ``--from-scores`` and the recompute of an archived folder (``robustness/recompute.py``)
        both come here."""
        path = self.psi / "psi_metrics.json"
        if cost is None and path.exists():
            cost = json.loads(path.read_text(encoding="utf-8")).get("cost")
        metrics = analyse(load_columnar(self.psi / COLUMNAR), self.rob, seed=self.presentation_seed)
        metrics["cost"] = dict(cost or {})
        return metrics

    def _analyse(self, cost: Mapping[str, Any] | None = None) -> dict[str, Any]:
        metrics = self.metrics_from_scores(cost)
        path = self.psi / "psi_metrics.json"
        self.folder.write_json(path.relative_to(self.folder.path), metrics)
        log.info("wrote %s", path)
        return metrics


class PSIStage:
    """The ``psi`` stage: score one query under every presentation; ``psi/per_query/<qid>.npz``.

    A stored file is reused only for the same judgements and presentations as well.
    """

    name = "psi"
    unit = "query"

    def __init__(self, runner: PSIRunner, grades: Mapping[str, np.ndarray]) -> None:
        self.runner = runner
        self.grades = grades
        self.config_sha256 = config_fingerprint({"reranker": runner.cfg.reranker})

    def path(self, qid: str) -> Path:
        return self.runner.psi / PER_QUERY / f"{safe_file_stem(qid)}.npz"

    def read_input(self, path: Path) -> StoredInput:
        return read_input(path)

    def stage_problem(self, req: RerankRequest, stored: StoredInput) -> str | None:
        grades = self.grades[req.query.qid]
        if not np.array_equal(stored.extra["grades"], grades):
            return "the judgements differ"
        for k, v in self.runner.presentations(req, grades).items():
            perms = stored.extra.get(f"{k}:perms")
            if perms is None or not np.array_equal(perms, v):
                return "the presentations differ"
        return None

    def compute(self, req: RerankRequest) -> QueryScores:
        grades = self.grades[req.query.qid]
        variants = {
            name: score_presentations(self.runner.reranker, req.query, req.candidates, perms)
            for name, perms in self.runner.presentations(req, grades).items()
        }
        ideal = ideal_grades(req.query.qid, self.runner._qrels)
        return QueryScores(
            req.query.qid, tuple(c.docid for c in req.candidates), grades, ideal, variants
        )

    def write(self, path: Path, record: QueryScores, fingerprints: Mapping[str, str]) -> None:
        write_query(path, record, fingerprints)

    def describe(self) -> dict[str, Any]:
        return {"reranker": self.runner.reranker.describe()}
