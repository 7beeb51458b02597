"""Test-time averaging: judge every placement of an item, then decide once (issue 37).

The fix users apply today to a judge that reads positions: show the responses in every
placement of a sweep (both orders of a pair, the cyclic or full placements of four) and
aggregate, at the cost of one call per placement. Computed from the records of an existing
sweep; nothing is judged again.

* A judge that records P(verdict) (the readout: ``extra.response_probs``, aligned by response)
  is averaged in probability: the item's verdict is the argmax of the mean over its
  placements of P(response).
* Any other judge is averaged by vote: each parsed verdict names a response; the item's
  verdict is the response named most (a parse failure votes for nothing; an item without a
  parsed verdict scores 0).

An exact tie between responses credits the share of the tied responses that are correct
(1/2 for a pair split evenly), never a draw, so the figure is deterministic. The score is the
mean over items, with a percentile bootstrap interval over items (stream ``judge-averaged``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from presentation_dependence.judge.items.records import JudgeRecord
from presentation_dependence.judge.scoring.settings import ScoringSettings
from presentation_dependence.metrics.stats import mean_with_ci

__all__ = ["averaged_item_scores", "summarise_averaged"]

AVERAGED_STREAM = "judge-averaged"


def _item_score(records: Sequence[JudgeRecord]) -> tuple[float, str]:
    """(score, method) of one item from all its records."""
    n = records[0].n
    correct = records[0].placement[records[0].correct_slot]
    if all("response_probs" in r.extra for r in records):
        mean = np.mean([np.asarray(r.extra["response_probs"], float) for r in records], axis=0)
        method = "mean P(verdict) by response"
    else:
        mean = np.zeros(n)
        for r in records:
            if r.verdict_slot is not None:
                mean[r.placement[r.verdict_slot]] += 1
        method = "majority vote"
        if not mean.any():
            return 0.0, method
    top = np.flatnonzero(mean == mean.max())
    return float(correct in top) / top.size, method


def averaged_item_scores(records: Sequence[JudgeRecord]) -> tuple[list[str], np.ndarray, str]:
    """Item ids (first-seen order), each item's test-time-averaged score, and the method
    (``mean P(verdict) by response`` when every record has P, else ``majority vote``)."""
    by_item: dict[str, list[JudgeRecord]] = defaultdict(list)
    for r in records:
        by_item[r.item_id].append(r)
    scored = [_item_score(rs) for rs in by_item.values()]
    methods = {m for _, m in scored}
    method = methods.pop() if len(methods) == 1 else "mixed"
    return list(by_item), np.array([s for s, _ in scored], dtype=np.float64), method


def summarise_averaged(records: Sequence[JudgeRecord], settings: ScoringSettings) -> dict[str, Any]:
    """The test-time-averaged accuracy of a sweep, its interval, method and cost (calls per
    item: the placements judged, against 1 for a single placement)."""
    if not records:
        raise ValueError("no judge records")
    ids, scores, method = averaged_item_scores(records)
    rng = settings.rng(AVERAGED_STREAM)
    return {
        "items": len(ids),
        "method": method,
        "calls_per_item": len(records) / len(ids),
        "accuracy": mean_with_ci(
            scores, rng, n_resamples=settings.n_resamples, confidence=settings.confidence
        ),
    }
