"""presentation_dependence: score candidates with a language model in one prompt, measure how
much the scores depend on the order the candidates were shown in, and train scorers that depend
on it less.

The Python API (names load on first use, so ``import presentation_dependence`` stays light)::

    import presentation_dependence as pd

    reranker = pd.build_reranker("GradeReranker", chunk_size=20)
    result = reranker.rank(pd.Query("q1", "text"), [pd.Candidate("d1", "passage", rank=1)])
    pd.tau_psi(scores)                      # (M presentations, n candidates) -> τ-PSI

* records: :class:`Query`, :class:`Candidate`, :class:`RerankRequest`, :class:`RankResult`,
  :class:`ScoredCandidate`, :class:`Run`, :class:`RunEntry`, :class:`Qrels`, :class:`Topics`
* rerankers: :func:`build_reranker`, :data:`RERANKERS`, :class:`Reranker`, :class:`RerankerOptions`
* configs and data: :func:`load_experiment_config`, :class:`ExperimentConfig`,
  :class:`EvalConfig`, :func:`load_dataset`
* files: :func:`read_run`, :func:`write_run`, :func:`read_qrels`, :func:`read_rankllm_json`,
  :func:`write_rankllm_results`
* evaluation: :func:`evaluate_run`, :func:`evaluate_files`, :func:`parse_measure`; two runs
  paired: :func:`compare_runs`, :func:`compare_files` (and :func:`paired_bootstrap`,
  :func:`paired_permutation_test` over any per-query values)
* order metrics: :func:`tau_psi`, :func:`kendall_tau_b`, :func:`mean_pairwise_tau`,
  :func:`ndcg_at_k`, :func:`ndcg_per_presentation`, :func:`delta_ndcg`, :func:`rank_variance`,
  :func:`score_variance`, :func:`zeng_psi`, :func:`retained_set`, :func:`mean_pairwise_jaccard`,
  :func:`flip_rate`, :func:`mean_with_ci`
* runners: :class:`ExperimentManager`, :class:`EvalManager`, :class:`PSIRunner`
* shipped students: :func:`shipped_student` (a trained student as a reranker, by name),
  :func:`list_students`
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        (
            "Candidate",
            "Qrels",
            "Query",
            "RankResult",
            "RerankRequest",
            "Run",
            "RunEntry",
            "ScoredCandidate",
            "Topics",
        ),
        "presentation_dependence.records",
    ),
    **dict.fromkeys(
        ("RERANKERS", "Reranker", "RerankerOptions", "build_reranker"),
        "presentation_dependence.rerankers",
    ),
    **dict.fromkeys(
        ("EvalConfig", "ExperimentConfig", "load_experiment_config"),
        "presentation_dependence.config",
    ),
    "load_dataset": "presentation_dependence.data",
    **dict.fromkeys(("read_qrels", "read_run", "write_run"), "presentation_dependence.io.trec"),
    **dict.fromkeys(
        ("read_rankllm_json", "write_rankllm_results"), "presentation_dependence.io.rankllm_json"
    ),
    **dict.fromkeys(
        (
            "EvalManager",
            "ExperimentManager",
            "compare_files",
            "compare_runs",
            "evaluate_files",
            "evaluate_run",
        ),
        "presentation_dependence.runners",
    ),
    "parse_measure": "presentation_dependence.metrics.measures",
    **dict.fromkeys(
        (
            "delta_ndcg",
            "flip_rate",
            "kendall_tau_b",
            "mean_pairwise_jaccard",
            "mean_pairwise_tau",
            "mean_with_ci",
            "ndcg_at_k",
            "ndcg_per_presentation",
            "paired_bootstrap",
            "paired_permutation_test",
            "rank_variance",
            "retained_set",
            "score_variance",
            "tau_psi",
            "zeng_psi",
        ),
        "presentation_dependence.metrics",
    ),
    "PSIRunner": "presentation_dependence.robustness.runner",
    **dict.fromkeys(
        ("list_students", "shipped_student"), "presentation_dependence.rerankers.students"
    ),
}

__all__ = [
    "RERANKERS",
    "Candidate",
    "EvalConfig",
    "EvalManager",
    "ExperimentConfig",
    "ExperimentManager",
    "PSIRunner",
    "Qrels",
    "Query",
    "RankResult",
    "RerankRequest",
    "Reranker",
    "RerankerOptions",
    "Run",
    "RunEntry",
    "ScoredCandidate",
    "Topics",
    "__version__",
    "build_reranker",
    "compare_files",
    "compare_runs",
    "delta_ndcg",
    "evaluate_files",
    "evaluate_run",
    "flip_rate",
    "kendall_tau_b",
    "list_students",
    "load_dataset",
    "load_experiment_config",
    "mean_pairwise_jaccard",
    "mean_pairwise_tau",
    "mean_with_ci",
    "ndcg_at_k",
    "ndcg_per_presentation",
    "paired_bootstrap",
    "paired_permutation_test",
    "parse_measure",
    "rank_variance",
    "read_qrels",
    "read_rankllm_json",
    "read_run",
    "retained_set",
    "score_variance",
    "shipped_student",
    "tau_psi",
    "write_rankllm_results",
    "write_run",
    "zeng_psi",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'presentation_dependence' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:
    from presentation_dependence.config import (
        EvalConfig,
        ExperimentConfig,
        load_experiment_config,
    )
    from presentation_dependence.data import load_dataset
    from presentation_dependence.io.rankllm_json import read_rankllm_json, write_rankllm_results
    from presentation_dependence.io.trec import read_qrels, read_run, write_run
    from presentation_dependence.metrics import (
        delta_ndcg,
        flip_rate,
        kendall_tau_b,
        mean_pairwise_jaccard,
        mean_pairwise_tau,
        mean_with_ci,
        ndcg_at_k,
        ndcg_per_presentation,
        paired_bootstrap,
        paired_permutation_test,
        rank_variance,
        retained_set,
        score_variance,
        tau_psi,
        zeng_psi,
    )
    from presentation_dependence.metrics.measures import parse_measure
    from presentation_dependence.records import (
        Candidate,
        Qrels,
        Query,
        RankResult,
        RerankRequest,
        Run,
        RunEntry,
        ScoredCandidate,
        Topics,
    )
    from presentation_dependence.rerankers import (
        RERANKERS,
        Reranker,
        RerankerOptions,
        build_reranker,
    )
    from presentation_dependence.rerankers.students import list_students, shipped_student
    from presentation_dependence.robustness.runner import PSIRunner
    from presentation_dependence.runners import (
        EvalManager,
        ExperimentManager,
        compare_files,
        compare_runs,
        evaluate_files,
        evaluate_run,
    )
