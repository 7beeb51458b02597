"""A run folder's figures recomputed from its evidence, in memory: no model, no data, no write.

``presdep study archive`` keeps, beside a run's summaries, the evidence they are computed from
(``studies/archive.py``): ``run.trec``, ``qrels.txt`` and ``psi/grade_distributions.npz``. From
those and ``resolved_config.yaml``, :func:`recompute_run` computes again what ``metrics.json``
(``EvalManager.compute``: the config's eval block) and ``psi/psi_metrics.json``
(``PSIRunner.metrics_from_scores``, the path of ``presdep psi --from-scores``: the config's
robustness block) hold, so that a table rendered from the recomputed figures
(``presdep study table --from-scores``) checks the committed numbers against their evidence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from presentation_dependence.errors import PresdepError
from presentation_dependence.robustness.runner import COLUMNAR, PSI_DIR, PSIRunner
from presentation_dependence.runners.evaluation import EvalManager
from presentation_dependence.runners.readback import folder_config

__all__ = ["EVIDENCE", "Recomputed", "missing_evidence", "recompute_run"]

# What a recompute reads, relative to the run folder.
EVIDENCE = ("resolved_config.yaml", "run.trec", "qrels.txt", f"{PSI_DIR}/{COLUMNAR}")


@dataclass(frozen=True)
class Recomputed:
    """A run folder's figures as recomputed: ``metrics`` is what ``metrics.json`` holds,
    ``psi_metrics`` what ``psi/psi_metrics.json`` holds (its cost as recorded there)."""

    folder: Path
    metrics: Mapping[str, Any]
    psi_metrics: Mapping[str, Any]


def missing_evidence(run_dir: str | Path) -> list[str]:
    """The files of :data:`EVIDENCE` that ``run_dir`` lacks."""
    return [rel for rel in EVIDENCE if not (Path(run_dir) / rel).is_file()]


def recompute_run(run_dir: str | Path) -> Recomputed:
    """``metrics.json`` and ``psi/psi_metrics.json`` of ``run_dir`` computed again from its
    evidence; a folder without all of it (one archived before the evidence was kept) is
    refused, naming the folder and the missing files."""
    folder = Path(run_dir)
    missing = missing_evidence(folder)
    if missing:
        raise PresdepError(
            f"{folder} cannot be recomputed from its scores: it lacks {', '.join(missing)} "
            "(a folder archived before 'presdep study archive' kept the evidence, or not a "
            "finished run). Fix: render it from its stored metrics.json and psi/psi_metrics.json "
            "(without --from-scores), or archive its run folder again"
        )
    metrics = EvalManager(folder).compute()
    psi = PSIRunner(folder_config(folder), folder).metrics_from_scores()
    return Recomputed(folder, metrics, psi)
