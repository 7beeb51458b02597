"""Right/wrong outcomes: the interval of one proportion and the paired test of two.

**Wilson interval** (:func:`wilson_interval`): the Wilson score interval of k successes in n
trials, ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")`` (Wilson, JASA
22:209–212, 1927). Unlike the Wald interval it stays inside [0, 1] and keeps its coverage near
k = 0 or k = n.

**Exact McNemar test** (:func:`mcnemar_exact`): two systems' right/wrong verdicts on the same
units. With b = units only A gets right and c = units only B gets right, under H0 b ~
Binomial(b + c, 1/2), and the two-sided p is ``scipy.stats.binomtest(b, b + c, 0.5).pvalue``
(McNemar, Psychometrika 12:153–157, 1947; the exact form avoids the chi-square approximation at
small b + c). No discordant unit: p = 1. The units must be independent for p to hold.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

__all__ = ["mcnemar_exact", "wilson_interval"]


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of k successes in n trials (NaNs when n = 0)."""
    if n == 0:
        return float("nan"), float("nan")
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def mcnemar_exact(a_correct: ArrayLike, b_correct: ArrayLike) -> dict[str, Any]:
    """Exact McNemar test between paired right/wrong verdicts of A and B."""
    a = np.asarray(a_correct, dtype=bool)
    b = np.asarray(b_correct, dtype=bool)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"a and b must be paired 1-D vectors, got {a.shape} and {b.shape}")
    if a.size == 0:
        raise ValueError("no paired units")
    a_only = int(np.count_nonzero(a & ~b))
    b_only = int(np.count_nonzero(~a & b))
    discordant = a_only + b_only
    p = 1.0 if discordant == 0 else float(stats.binomtest(a_only, discordant, 0.5).pvalue)
    return {
        "n": int(a.size),
        "both_correct": int(np.count_nonzero(a & b)),
        "a_only": a_only,
        "b_only": b_only,
        "both_wrong": int(np.count_nonzero(~a & ~b)),
        "accuracy_a": float(a.mean()),
        "accuracy_b": float(b.mean()),
        "diff": float(a.mean() - b.mean()),
        "p_value": p,
    }
