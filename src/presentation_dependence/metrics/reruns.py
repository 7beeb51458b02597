"""Rerun noise: how much a measurement moves when it is simply taken again.

**Flip noise in SE units** (:func:`flip_noise_to_se`): m units scored right/wrong twice, a
share f of them flipped, p̂ the mean accuracy of the two runs. When each unit flips with
probability f the rerun SD of the accuracy is √(f / 2m); over its binomial SE √(p̂(1 − p̂)/m)
that is √(f / (2 p̂ (1 − p̂))): 1 means rerun noise is as large as the sampling error. 0 when
f = 0; NaN when p̂ is 0 or 1 and f > 0.

**SE of a mean from reruns** (:func:`rerun_se`): n cases each scored k times, s²_i the variance
(ddof 1) of case i's k scores; the SE of the mean over cases (each case the mean of its k
scores) from rerun variation alone is √(Σ_i s²_i / k) / n. NaN when k < 2 (nothing measured).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["flip_noise_to_se", "rerun_se"]


def flip_noise_to_se(flip_share: float, accuracy: float) -> float:
    """√(f / (2 p̂ (1 − p̂))) for flip share f and mean accuracy p̂ (module docstring)."""
    if flip_share == 0:
        return 0.0
    if 0 < accuracy < 1:
        return float(np.sqrt(flip_share / (2 * accuracy * (1 - accuracy))))
    return float("nan")


def rerun_se(variances: Sequence[float], k: int) -> float:
    """√(Σ_i s²_i / k) / n over the n cases' rerun variances s²_i of k scores each (NaN when
    k < 2)."""
    if k < 2:
        return float("nan")
    return math.sqrt(sum(variances) / k) / len(variances)
