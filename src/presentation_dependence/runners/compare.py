"""Paired comparison of two TREC runs (``presdep compare A B QRELS``), A the baseline.

Per measure, over the queries that both runs have and the qrels judge (the pairs; a query of
one run only is listed, never scored 0): the means of A and B, the mean per-query difference
B − A with its seeded paired bootstrap 95% interval and p-value and the two-sided paired
permutation test's p-value (:func:`~presentation_dependence.metrics.stats.paired_comparison`),
and how many queries B improves and worsens (``pt.Experiment``'s ``+`` and ``−``). Per-query
values are those of ``presdep eval`` (:func:`~presentation_dependence.metrics.measures.evaluate_measures`:
ir_measures names, trec_eval's definitions). Each measure draws from its own random stream,
``(seed, "compare", measure)``, so adding a measure never changes another's figures.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from presentation_dependence.config import EvalConfig
from presentation_dependence.errors import PresdepError
from presentation_dependence.io.markdown import markdown_table
from presentation_dependence.io.trec import read_qrels, read_run
from presentation_dependence.metrics.measures import evaluate_measures
from presentation_dependence.metrics.stats import paired_comparison
from presentation_dependence.records import Qrels, Run

__all__ = ["compare_files", "compare_runs", "format_comparison"]

log = logging.getLogger(__name__)

BOOTSTRAP_RESAMPLES = 2000
PERMUTATIONS = 9999


def _test(a: np.ndarray, b: np.ndarray, name: str, seed: int) -> dict[str, Any]:
    """One measure's figures: means, B − A with its CI and the two p-values, B's wins/losses."""
    boot = paired_comparison(
        b,
        a,
        stream=(seed, "compare", name),
        n_resamples=BOOTSTRAP_RESAMPLES,
        n_permutations=PERMUTATIONS,
    )
    return {
        "mean_a": float(a.mean()),
        "mean_b": float(b.mean()),
        "mean_diff": boot["mean_diff"],
        "ci_low": boot["ci_low"],
        "ci_high": boot["ci_high"],
        "bootstrap_p": boot["p_value"],
        "permutation_p": boot["permutation_p"],
        "b_better": int(np.count_nonzero(b > a)),
        "b_worse": int(np.count_nonzero(b < a)),
    }


def compare_runs(
    run_a: Run, run_b: Run, qrels: Qrels, eval_cfg: EvalConfig | None = None, *, seed: int = 0
) -> dict[str, Any]:
    """Run B against the baseline A on the queries both have and ``qrels`` judges (module doc).

    ``eval_cfg`` gives the measures and the relevance level (default: ``EvalConfig``'s measures,
    without Judged@k). Raises :class:`PresdepError` when no query is in both runs and judged.
    """
    cfg = eval_cfg or EvalConfig(judged_k=None)
    measures = cfg.resolved_measures()
    per_a = evaluate_measures(run_a, qrels, measures)
    per_b = evaluate_measures(run_b, qrels, measures)
    qids = [q for q in per_a if q in per_b]
    if not qids:
        raise PresdepError(
            "compare: no query is in both runs and judged by the qrels. Fix: compare runs of "
            "the same topics, with the qrels of those topics"
        )
    only_a = [q for q in per_a if q not in per_b]
    only_b = [q for q in per_b if q not in per_a]
    for name, only in (("A", only_a), ("B", only_b)):
        if only:
            log.warning(
                "%d judged queries are only in run %s and are not compared, e.g. %s",
                len(only),
                name,
                ", ".join(only[:5]),
            )
    tests = {
        name: _test(
            np.array([per_a[q][name] for q in qids]),
            np.array([per_b[q][name] for q in qids]),
            name,
            seed,
        )
        for name in measures
    }
    return {
        "measures": {n: str(m) for n, m in measures.items()},
        "relevance_level": cfg.relevance_level,
        "seed": seed,
        "bootstrap_resamples": BOOTSTRAP_RESAMPLES,
        "permutations": PERMUTATIONS,
        "num_queries": len(qids),
        "only_in_a": only_a,
        "only_in_b": only_b,
        "comparison": tests,
        "per_query": {q: {n: [per_a[q][n], per_b[q][n]] for n in measures} for q in qids},
    }


def compare_files(
    run_a: str | Path,
    run_b: str | Path,
    qrels: str | Path,
    eval_cfg: EvalConfig | None = None,
    *,
    seed: int = 0,
) -> dict[str, Any]:
    """:func:`compare_runs` of two TREC run files against a qrels file, the paths recorded."""
    result = compare_runs(read_run(run_a), read_run(run_b), read_qrels(qrels), eval_cfg, seed=seed)
    return {"run_a": str(run_a), "run_b": str(run_b), "qrels": str(qrels), **result}


def _p(p: float) -> str:
    return "—" if math.isnan(p) else f"{p:.4f}"


def format_comparison(result: Mapping[str, Any]) -> str:
    """The comparison as a Markdown table (readable as plain text), one row per measure."""
    lines = []
    if "run_a" in result:
        lines += [f"A (baseline): {result['run_a']}", f"B: {result['run_b']}"]
        lines += [f"qrels: {result['qrels']}"]
    lines += [
        f"{result['num_queries']} queries in both runs and judged; paired over them: the seeded "
        f"bootstrap (seed {result['seed']}, {result['bootstrap_resamples']} resamples) 95% CI "
        f"of B − A and its p, the permutation test's p ({result['permutations']} sign "
        "patterns at most); B > A and B < A count queries.",
        "",
    ]
    head = ["measure", "A", "B", "B − A [95% CI]", "bootstrap p", "permutation p", "B > A", "B < A"]
    rows = [
        [
            name,
            f"{t['mean_a']:.4f}",
            f"{t['mean_b']:.4f}",
            f"{t['mean_diff']:+.4f} [{t['ci_low']:+.4f}, {t['ci_high']:+.4f}]",
            _p(t["bootstrap_p"]),
            _p(t["permutation_p"]),
            t["b_better"],
            t["b_worse"],
        ]
        for name, t in result["comparison"].items()
    ]
    return "\n".join([*lines, *markdown_table(head, rows)]) + "\n"
