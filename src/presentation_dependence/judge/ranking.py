"""Response ranking with the expected-grade readout: responses as candidates, B = 4 per prompt.

Each item's responses are scored under M seeded shuffles (``random_shuffle`` from
:mod:`~presentation_dependence.presentations`, generator from (seed, 'response_rank',
item id)), by any registered reranker; the default is ``GradeReranker`` with ``chunk_size: 4``
(docs/SCORING.md §2). A presented list gives response j the first-stage rank of its slot, so
score ties resolve by slot, as in the passage experiments. Per item, with the (M, n) score
matrix aligned by response:

* nDCG@k (k = 1 by default) per presentation, gains = correctness labels (1/0), averaged over M;
* τ-PSI over the M presentations (docs/EVAL-PROTOCOL.md);
* for every (correct, incorrect) pair, "correct scored strictly above incorrect" per
  presentation: the pair flip rate (pairs whose verdict is not the same in all M) and the pairwise
  accuracy (share of presentation x pair verdicts that are right).

Items without a correct or without an incorrect response are skipped (logged): they have no
pair and nDCG is constant.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from presentation_dependence.judge.records import ResponseItem
from presentation_dependence.metrics import (
    mean_with_ci,
    ndcg_per_presentation,
    pair_flip_rate,
    tau_psi,
)
from presentation_dependence.presentations import (
    PerturbationContext,
    draw_presentations,
)
from presentation_dependence.records import Candidate, Query
from presentation_dependence.rerankers import Reranker

__all__ = ["rank_item", "rank_responses"]

logger = logging.getLogger(__name__)
STREAM = "response_rank"


def rank_item(
    item: ResponseItem, reranker: Reranker, *, num_presentations: int, seed: int, ndcg_k: int = 1
) -> dict[str, Any]:
    """Score one item under M seeded presentations; its per-item record."""
    n = len(item.responses)
    ctx = PerturbationContext(grades=np.asarray(item.labels, dtype=np.int64))
    perms = draw_presentations(
        "random_shuffle", n, num_presentations, seed, f"{STREAM}:{item.item_id}", ctx
    )
    query = Query(item.item_id, item.prompt)
    scores = np.zeros((len(perms), n), dtype=np.float64)
    slots = np.zeros((len(perms), n), dtype=np.int64)
    for m, perm in enumerate(perms):
        shown = [
            Candidate(f"r{int(j)}", item.responses[int(j)], rank=pos + 1)
            for pos, j in enumerate(perm)
        ]
        res = reranker.rank(query, shown)
        for pos, it in enumerate(res.items):
            j = int(perm[pos])
            scores[m, j] = it.score
            slots[m, j] = int(it.details.get("slot", pos + 1))
    gains = np.asarray(item.labels, dtype=np.float64)
    ndcgs = ndcg_per_presentation(scores, gains, ndcg_k, gains)
    correct = [i for i, lab in enumerate(item.labels) if lab]
    wrong = [i for i, lab in enumerate(item.labels) if not lab]
    pref = np.array(
        [[scores[m, c] > scores[m, w] for c in correct for w in wrong] for m in range(len(perms))]
    )
    return {
        "item_id": item.item_id,
        "labels": [bool(x) for x in item.labels],
        "presentations": perms.tolist(),
        "scores": scores.tolist(),
        "slots": slots.tolist(),
        "ndcg": [float(x) for x in ndcgs],
        "ndcg_mean": float(np.mean(ndcgs)),
        "tau_psi": float(tau_psi(scores)),
        "pref": pref.astype(int).tolist(),
    }


def rank_responses(
    items: Sequence[ResponseItem],
    reranker: Reranker,
    *,
    num_presentations: int,
    seed: int,
    ndcg_k: int = 1,
    rng: np.random.Generator,
    n_resamples: int = 2000,
    confidence: float = 0.95,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per-item records and the corpus summary (means with bootstrap intervals over items)."""
    usable = [it for it in items if 0 < it.num_correct < len(it.responses)]
    if len(usable) < len(items):
        logger.info(
            "ranking: skipped %d items with no correct or no incorrect response",
            len(items) - len(usable),
        )
    if not usable:
        raise ValueError("no item has both a correct and an incorrect response")
    per_item = [
        rank_item(it, reranker, num_presentations=num_presentations, seed=seed, ndcg_k=ndcg_k)
        for it in usable
    ]
    ndcg = np.array([r["ndcg_mean"] for r in per_item])
    taus = np.array([r["tau_psi"] for r in per_item])
    taus = taus[~np.isnan(taus)]
    pref = np.concatenate([np.asarray(r["pref"], dtype=bool) for r in per_item], axis=1)
    summary = {
        "items": len(per_item),
        "skipped_items": len(items) - len(usable),
        "num_presentations": num_presentations,
        "ndcg_k": ndcg_k,
        "ndcg": mean_with_ci(ndcg, rng, n_resamples=n_resamples, confidence=confidence),
        "tau_psi": (
            mean_with_ci(taus, rng, n_resamples=n_resamples, confidence=confidence)
            if taus.size
            else None
        ),
        "pairs": int(pref.shape[1]),
        "pair_flip_rate": pair_flip_rate(pref),
        "pairwise_accuracy": float(pref.mean()),
    }
    return per_item, summary
