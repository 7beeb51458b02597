"""EvalManager: ir_measures (pytrec_eval) over a run folder's ``run.trec`` -> ``metrics.json``.

Evaluation follows trec_eval: a query counts when it is both in the run and in the qrels; the
mean is over those queries. Queries of the run without judgements are listed in
``metrics.json`` under ``unjudged_queries``, never silently averaged as zeros.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from presentation_dependence.config import EvalConfig
from presentation_dependence.errors import PresdepError
from presentation_dependence.io.trec import read_qrels, read_run
from presentation_dependence.metrics.measures import evaluate_run
from presentation_dependence.provenance import collect_provenance
from presentation_dependence.runners.readback import folder_config
from presentation_dependence.runners.run_folder import METRICS, RunFolder

__all__ = ["EvalManager", "evaluate_files", "evaluate_run", "format_trec_eval"]

log = logging.getLogger(__name__)


class EvalManager:
    """Evaluate the run in a run folder with the eval block of its resolved config."""

    def __init__(
        self,
        run_dir: str | Path,
        *,
        qrels_path: str | Path | None = None,
        argv: Sequence[str] | None = None,
    ) -> None:
        self.folder = RunFolder(run_dir)
        self.qrels_path = Path(qrels_path) if qrels_path is not None else None
        self.argv = argv

    def eval_config(self) -> EvalConfig:
        return folder_config(self.folder.path).eval

    def evaluate(self) -> dict[str, Any]:
        """:meth:`compute`, written to ``metrics.json`` and recorded in the provenance."""
        metrics = self.compute()
        self.folder.write_json(METRICS, metrics, allow_nan=False)  # NaN is not JSON
        self.folder.append_provenance(
            collect_provenance(
                argv=self.argv, extra={"phase": "eval", "qrels": str(self.qrels_file)}
            )
        )
        log.info(
            "%s over %d queries: %s",
            self.folder.path,
            metrics["num_queries"],
            ", ".join(f"{k}={v:.4f}" for k, v in metrics["mean"].items()),
        )
        return metrics

    @property
    def qrels_file(self) -> Path:
        return self.qrels_path or self.folder.qrels_file

    def compute(self) -> dict[str, Any]:
        """What ``metrics.json`` holds: ``run.trec`` against the judgements (``qrels.txt``
        unless ``qrels_path``), by the eval block of the folder's config. Writes nothing."""
        folder = self.folder
        if not folder.path.is_dir():
            raise PresdepError(
                f"run folder {folder.path} does not exist. Fix: check --run-dir (make a run "
                "folder with 'presdep run CONFIG --run-dir DIR')"
            )
        folder.load_config_yaml()  # "not a run folder" when it has no frozen config
        if not folder.run_file.exists():
            raise PresdepError(
                f"{folder.run_file} does not exist: the run is unfinished. "
                "Rerun 'presdep run' with the same config and --run-dir to complete it."
            )
        qrels_path = self.qrels_file
        if not qrels_path.exists():
            raise PresdepError(
                f"no judgements: {qrels_path} is missing. Set data.qrels in the config or pass "
                "--qrels PATH"
            )
        return evaluate_run(
            read_run(folder.run_file),
            read_qrels(qrels_path),
            self.eval_config(),
            run_source=str(folder.run_file),
            qrels_source=str(qrels_path),
        )


def evaluate_files(
    run_path: str | Path,
    qrels_path: str | Path,
    eval_cfg: EvalConfig | None = None,
) -> dict[str, Any]:
    """:func:`evaluate_run` of any TREC run file against a qrels file (``presdep eval RUN QRELS``)."""
    metrics = evaluate_run(
        read_run(run_path),
        read_qrels(qrels_path),
        eval_cfg or EvalConfig(),
        run_source=str(run_path),
        qrels_source=str(qrels_path),
    )
    return {"run": str(run_path), "qrels": str(qrels_path), **metrics}


def format_trec_eval(metrics: dict[str, Any], *, per_query: bool = False) -> str:
    """trec_eval's text layout: ``measure<TAB>qid|all<TAB>value`` (per query first with ``-q``)."""
    names = list(metrics["measures"])
    width = max(22, *(len(n) for n in names))
    lines = []
    if per_query:
        for qid, values in metrics["per_query"].items():
            lines += [f"{n.ljust(width)}\t{qid}\t{values[n]:.4f}" for n in names]
    lines.append(f"{'num_q'.ljust(width)}\tall\t{metrics['num_queries']}")
    lines += [f"{n.ljust(width)}\tall\t{metrics['mean'][n]:.4f}" for n in names]
    return "\n".join(lines) + "\n"
