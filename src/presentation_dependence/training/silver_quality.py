"""How much a silver file can teach: the teacher's own quality and order dependence.

For every silver query with judgements, over its T stored teacher orders (``order_scores``,
candidate-aligned):

* ``ndcg_first_stage``: nDCG@k of the first-stage order (candidate rank), the floor any
  reranker starts from;
* ``ndcg_single_order``: nDCG@k of one teacher order's scores, mean over the T orders (the
  label of single-order distillation, OC-SFT and permutation augmentation);
* ``ndcg_order_mean``: nDCG@k of the mean over the T orders (order-averaged distillation's label,
  = BSC's score);
* ``tau_psi``: the teacher's τ-PSI over its T orders (0 for an order-free teacher's one row);
* ``label_spread``: within-query standard deviation of the order-mean label, calibrated as the
  student sees it (how much there is to rank once order is averaged out), ``single_spread`` the
  same for one order (mean over orders).

A teacher whose order-mean label is barely better than the first stage and has little spread
gives a student little besides "give every candidate the same score".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from presentation_dependence.io.markdown import markdown_table
from presentation_dependence.metrics.order import score_spread, tau_psi
from presentation_dependence.metrics.ranking import ndcg_at_k
from presentation_dependence.records import Qrels
from presentation_dependence.training.silver import SilverQuery

__all__ = ["silver_quality", "silver_quality_markdown"]


def _query(q: SilverQuery, judged: Mapping[str, int], k: int) -> dict[str, float]:
    grades = np.array([judged.get(c.docid, 0) for c in q.candidates], dtype=np.float64)
    ideal = np.array(sorted(judged.values(), reverse=True), dtype=np.float64)
    first = -np.array([c.rank for c in q.candidates], dtype=np.float64)
    s = q.order_scores
    mean = s.mean(axis=0)
    labels = q.calibration(s)
    return {
        "ndcg_first_stage": ndcg_at_k(first, grades, k=k, ideal_gains=ideal),
        "ndcg_single_order": float(
            np.mean([ndcg_at_k(row, grades, k=k, ideal_gains=ideal) for row in s])
        ),
        "ndcg_order_mean": ndcg_at_k(mean, grades, k=k, ideal_gains=ideal),
        "tau_psi": 0.0 if q.order_free else tau_psi(s) if s.shape[0] > 1 else float("nan"),
        "label_spread": score_spread(labels.mean(axis=0)[None, :]),
        "single_spread": score_spread(labels),
    }


def silver_quality(
    queries: Sequence[SilverQuery], qrels: Mapping[str, Qrels], *, k: int = 10
) -> dict[str, Any]:
    """Per-source means of the figures above. ``qrels`` maps a silver ``source`` (fixture stem)
    to its judgements; queries without a judged relevant candidate are skipped and counted."""
    per_source: dict[str, list[dict[str, float]]] = {}
    skipped = 0
    for q in queries:
        judged = qrels.get(q.source, Qrels()).judgements.get(q.qid, {})
        if not any(g > 0 for g in judged.values()):
            skipped += 1
            continue
        per_source.setdefault(q.source, []).append(_query(q, judged, k))
    every = [r for v in per_source.values() for r in v]
    groups = {**per_source, "all": every} if every else per_source
    rows = {
        src: {"queries": len(v), **{m: float(np.nanmean([r[m] for r in v])) for m in v[0]}}
        for src, v in groups.items()
    }
    return {"k": k, "skipped_unjudged": skipped, "sources": rows}


def silver_quality_markdown(result: Mapping[str, Any], num_orders: int) -> str:
    k = result["k"]
    head = ["source", "queries", f"nDCG@{k} first stage", f"nDCG@{k} one teacher order (mean)"]
    head += [f"nDCG@{k} mean of {num_orders} orders", "teacher τ-PSI", "label spread (order mean)"]
    head += ["label spread (one order)"]
    keys = ("ndcg_first_stage", "ndcg_single_order", "ndcg_order_mean", "tau_psi")
    rows = [
        [src, r["queries"], *(f"{r[m]:.3f}" for m in (*keys, "label_spread", "single_spread"))]
        for src, r in result["sources"].items()
    ]
    return "\n".join(markdown_table(head, rows)) + "\n"
