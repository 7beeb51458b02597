"""How far a readout judge's verdict *probabilities* move with the placement, and how decided
they are (issue 37).

The flip share and the slot spread read the argmax: a judge whose P(verdict) sits near 1/N in
every placement flips its verdict on the smallest tilt towards a slot, however little its
probabilities move. Two figures from the readout's records (``extra.response_probs``: P by
*response*, so placements compare response by response) tell the two cases apart:

* **consistency**: the mean over items of the mean over pairs of the item's placements of
  mean_d (P_i(d) − P_j(d))², the squared term OC-SFT for judges trains on
  (:func:`~presentation_dependence.training.loss.verdict_loss`), here on the judged
  placements; 0 when every placement gives the same probabilities;
* **median margin**: the median over records of the largest P(verdict) minus the second
  largest; near 0, a judge that barely prefers any response (the uniform distribution
  satisfies the consistency term exactly, so a consistency-trained judge can fall there).

Records without probabilities (a generative judge) give neither (``None``).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from presentation_dependence.judge.items.records import JudgeRecord

__all__ = ["probability_agreement"]


def probability_agreement(records: Sequence[JudgeRecord]) -> dict[str, Any]:
    """``{"consistency": float | None, "median_margin": float | None}`` (module docstring);
    repeats of a placement (rerun noise) are left out."""
    first = [r for r in records if r.repeat == 0]
    if not first or not all("response_probs" in r.extra for r in first):
        return {"consistency": None, "median_margin": None}
    by_item: dict[str, list[np.ndarray]] = defaultdict(list)
    margins = []
    for r in first:
        probs = np.asarray(r.extra["response_probs"], dtype=np.float64)
        by_item[r.item_id].append(probs)
        top2 = np.sort(probs)[-2:]
        margins.append(float(top2[1] - top2[0]))
    per_item = [
        float(np.mean([np.mean((a - b) ** 2) for a, b in itertools.combinations(ps, 2)]))
        for ps in by_item.values()
        if len(ps) >= 2
    ]
    return {
        "consistency": float(np.mean(per_item)) if per_item else None,
        "median_margin": float(np.median(margins)),
    }
