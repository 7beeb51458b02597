"""From stored score matrices to ``psi/psi_metrics.json`` (no model call).

For every variant (each perturbation and the ``same_order`` null) and query, with S the (M, n)
score matrix of the M presentations (columns = candidates in input order):

* ``tau_psi`` = (1 − mean pairwise Kendall τ-b)/2, and ``mean_tau``;
* ``ndcg_mean``: mean nDCG@k over the M presentations; ``delta_ndcg`` = max − min and
  ``ndcg_std`` across them;
* ``score_var`` / ``rank_var``: per-candidate variance across presentations, averaged over
  candidates;
* decisions: ``jaccard_topk`` / ``jaccard_threshold`` (mean pairwise Jaccard of the retained
  sets) and ``changed_topk`` / ``changed_threshold`` (1 if any presentation retains another set;
  their mean over queries is the flip rate).

The nDCG in the *given* (first-stage) order is reported apart (``given_order``): it is the first
presentation of the null. Means over queries carry seeded percentile-bootstrap intervals.
``zeng_psi_corpus`` buckets each presentation by the third of the prompt (front / middle /
back) holding the query's best relevant candidate, averages nDCG@k per bucket within each query,
keeps the queries that saw all three buckets (``zeng_queries``; none for the null, whose
presentations never move), and is 1 − min/max of the bucket means over those queries. That
"position" is the slot in a listwise prompt, not Zeng et al.'s position of the answer inside a
passage; the two are never mixed in one number.

**Queries of one candidate** have no order: no presentation can move anything, τ is undefined
(no pair of candidates) and the decision metrics are trivially stable. Such a query is left out
of every figure (the order metrics, ``given_order`` and ``num_queries``, so that all are over the
same queries), logged with a count, and listed under ``excluded_queries`` (``{qid: reason}``;
the key is present only when a query was left out). It is scored all the same, so the columnar
file stays a record of every query of the data and ``--from-scores`` reaches the same set from
it alone; the cost is one candidate's prompt per presentation. Refusing the run instead would
make a user edit a first stage that legitimately returns one passage for a query, and averaging
in a value for it (τ-PSI 0 or 0.5) would dilute the instability of the queries that do have an
order. A table with no query of two candidates is refused (docs/EVAL-PROTOCOL.md).
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np

from presentation_dependence.config.robustness_config import RobustnessConfig
from presentation_dependence.errors import PresdepError
from presentation_dependence.metrics.decisions import (
    mean_pairwise_jaccard,
    retained_set,
    retained_set_changed,
)
from presentation_dependence.metrics.order import (
    mean_pairwise_tau,
    rank_variance,
    score_spread,
    score_variance,
    tau_psi,
    tied_share,
    zeng_psi_corpus,
)
from presentation_dependence.metrics.ranking import ndcg_at_k, ndcg_per_presentation
from presentation_dependence.metrics.stats import mean_with_ci, named_rng
from presentation_dependence.robustness.store import NULL

__all__ = ["ONE_CANDIDATE", "analyse", "no_order", "orderable", "query_metrics"]

log = logging.getLogger(__name__)
BUCKETS = ("front", "middle", "back")
ONE_CANDIDATE = "one candidate: no order to perturb"


def query_metrics(
    scores: np.ndarray, grades: np.ndarray, ideal: np.ndarray, rob: RobustnessConfig
) -> dict[str, float]:
    """Every per-query order metric of one (M, n) score matrix."""
    n = scores.shape[1]
    docids = list(range(n))
    first_stage = np.arange(n)  # ties broken by first-stage rank, as everywhere
    ndcgs = ndcg_per_presentation(scores, grades, k=rob.ndcg_k, ideal_gains=ideal)
    out = {
        "tau_psi": tau_psi(scores),
        "mean_tau": mean_pairwise_tau(scores),
        "ndcg_mean": float(ndcgs.mean()),
        "delta_ndcg": float(ndcgs.max() - ndcgs.min()),
        "ndcg_std": float(ndcgs.std()),
        "score_var": float(score_variance(scores).mean()),
        "rank_var": float(rank_variance(scores, tiebreak=first_stage).mean()),
        "score_spread": score_spread(scores),
        "tied_share": tied_share(scores),
    }
    if rob.retain_top_k is not None:
        sets = [
            retained_set(s, docids, top_k=rob.retain_top_k, tiebreak=first_stage) for s in scores
        ]
        out["jaccard_topk"] = mean_pairwise_jaccard(sets)
        out["changed_topk"] = float(retained_set_changed(sets))
    if rob.retain_threshold is not None:
        sets = [retained_set(s, docids, threshold=rob.retain_threshold) for s in scores]
        out["jaccard_threshold"] = mean_pairwise_jaccard(sets)
        out["changed_threshold"] = float(retained_set_changed(sets))
    return out


def _bucket_ndcg(
    scores: np.ndarray,
    slots: np.ndarray,
    grades: np.ndarray,
    ideal: np.ndarray,
    rob: RobustnessConfig,
) -> dict[str, float]:
    """Mean nDCG@k of the presentations whose best relevant candidate sits front/middle/back.

    The bucket of a presentation is the third of the prompt's slots holding the query's
    best relevant candidate (highest grade, then first-stage rank). Empty when the query has
    no relevant candidate.
    """
    relevant = np.flatnonzero(grades >= rob.relevant_grade)
    if relevant.size == 0:
        return {}
    best = int(relevant[np.argmax(grades[relevant])])  # argmax: first of the top grade
    width = max(int(slots.max()), 1)
    found: dict[str, list[float]] = {}
    for s, sl in zip(scores, slots, strict=True):
        where = (int(sl[best]) - 1) / max(width - 1, 1)  # 0 = first slot, 1 = last
        bucket = BUCKETS[min(int(where * 3), 2)]
        found.setdefault(bucket, []).append(ndcg_at_k(s, grades, k=rob.ndcg_k, ideal_gains=ideal))
    return {b: float(np.mean(v)) for b, v in found.items()}


def _summarise(
    per_query: Mapping[str, Mapping[str, float]], rob: RobustnessConfig, seed: int, variant: str
) -> dict[str, Any]:
    metrics = next(iter(per_query.values())).keys()
    return {
        m: mean_with_ci(
            [pq[m] for pq in per_query.values()],
            named_rng(seed, variant, m),
            n_resamples=rob.bootstrap_resamples,
            confidence=rob.confidence,
        )
        for m in metrics
    }


def orderable(
    table: Mapping[str, Mapping[str, np.ndarray]],
) -> tuple[list[str], dict[str, str]]:
    """The queries of ``table`` that have an order (two candidates or more), and the others as
    ``{qid: reason}`` (module docstring); logged. No orderable query at all is refused."""
    excluded = {q: ONE_CANDIDATE for q, entry in table.items() if entry["__grades__"].size < 2}
    qids = [q for q in table if q not in excluded]
    if excluded:
        log.warning(
            "%d of %d queries have one candidate (no order to perturb) and are left out of "
            "the order metrics (psi_metrics.json: excluded_queries), e.g. %s",
            len(excluded),
            len(table),
            ", ".join(repr(q) for q in list(excluded)[:3]),
        )
    if not qids:
        raise no_order(len(table))
    return qids, excluded


def no_order(num_queries: int) -> PresdepError:
    """The refusal of data none of whose ``num_queries`` queries has two candidates."""
    return PresdepError(
        f"none of the {num_queries} queries has two candidates or more, so there is no order "
        "to measure. Fix: give the queries at least two candidates (data.top_k, the run)"
    )


def analyse(
    table: Mapping[str, Mapping[str, np.ndarray]], rob: RobustnessConfig, *, seed: int
) -> dict[str, Any]:
    """``psi_metrics.json`` from ``{qid: {variant: (M, n) scores, "__grades__", "__ideal__",
    "__slots__:<variant>"}}`` (see :func:`~presentation_dependence.robustness.store.load_columnar`);
    queries of one candidate are left out (:func:`orderable`)."""
    qids, excluded = orderable(table)
    variants = [k for k in table[qids[0]] if not k.startswith("__")]
    given = {
        q: ndcg_at_k(
            table[q][NULL][0],
            table[q]["__grades__"],
            k=rob.ndcg_k,
            ideal_gains=table[q]["__ideal__"],
        )
        for q in qids
    }
    out: dict[str, Any] = {
        "num_queries": len(qids),
        "ndcg_k": rob.ndcg_k,
        "confidence": rob.confidence,
        "given_order": {
            "ndcg": mean_with_ci(
                list(given.values()),
                named_rng(seed, "given"),
                n_resamples=rob.bootstrap_resamples,
                confidence=rob.confidence,
            ),
            "per_query": given,
        },
        "variants": {},
    }
    if excluded:
        out["excluded_queries"] = excluded
    for var in variants:
        per_query = {
            q: query_metrics(table[q][var], table[q]["__grades__"], table[q]["__ideal__"], rob)
            for q in qids
        }
        buckets: dict[Hashable, list[float]] = {}
        for q in qids:
            per_bucket = _bucket_ndcg(
                table[q][var],
                table[q][f"__slots__:{var}"],
                table[q]["__grades__"],
                table[q]["__ideal__"],
                rob,
            )
            if len(per_bucket) == len(BUCKETS):  # within-query comparison: every bucket seen
                for b, v in per_bucket.items():
                    buckets.setdefault(b, []).append(v)
        out["variants"][var] = {
            "num_presentations": int(table[qids[0]][var].shape[0]),
            "summary": _summarise(per_query, rob, seed, var),
            "zeng_psi_corpus": zeng_psi_corpus(buckets) if buckets else None,
            "zeng_queries": len(next(iter(buckets.values()))) if buckets else 0,
            "zeng_bucket_ndcg": {str(b): float(np.mean(v)) for b, v in buckets.items()},
            "per_query": per_query,
        }
    return out
