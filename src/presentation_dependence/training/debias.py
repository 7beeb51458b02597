"""DebiasFirst for the readout student: slot propensities, inverse-propensity weights, balanced views.

DebiasFirst (Qiao et al., "LLM-based Listwise Reranking under the Effect of Positional Bias",
arXiv 2604.03642) fine-tunes a listwise reranker with (1) *positional calibration*: each
position's contribution to the loss is re-weighted by its inverse propensity, and (2)
*position-aware augmentation*: every passage appears equally often across input positions. Its
authors ship no code; this is the adaptation to the expected-grade readout:

* **Propensity of slot j** (0-based, B slots): how much the off-the-shelf scorer's grade rises
  at slot j whatever the passage, measured on shuffled presentations (content is then
  independent of the slot, so slot means differ by position alone)::

      p_j = mean{ score at slot j } / mean{ score at any slot }

  from a PSI run folder's ``psi/grade_distributions.npz`` (rows of the shuffle perturbations;
  the same-order null is left out). Estimate it on queries that are not test queries.
* **Weight** of a candidate shown in slot j: ``w_j = 1 / p_j``, clipped to ``[1/c, c]`` and
  scaled to mean 1 over slots, so the loss keeps its scale. A slot where the scorer inflates
  grades counts less, one where it deflates them counts more. When a prompt has n ≠ B slots,
  slot j of n takes the propensity of slot ``⌊j·B/n⌋`` (relative position).
* **Balanced views** (:func:`balanced_views`): V cyclic shifts, by ``⌊k·n/V⌋`` for k = 0..V−1,
  of one seeded permutation, so each candidate visits V evenly spaced slot regions per epoch.

The judgement call: the paper's propensities are for a permutation-generating reranker's
"moved to the top" event; for a grade readout the natural analogue is the slot's multiplicative
grade inflation, which is what the off-the-shelf P(g) shows directly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from presentation_dependence.errors import ConfigError
from presentation_dependence.seeding import rng_from

__all__ = [
    "balanced_views",
    "ips_weights",
    "propensities_from_psi",
    "slot_propensities",
    "weights_for_slots",
]


def slot_propensities(slots: np.ndarray, scores: np.ndarray, num_slots: int) -> np.ndarray:
    """``p_j`` = mean score at 0-based slot j / mean score over all slots. Pure; (B,) out."""
    slots = np.asarray(slots, dtype=np.int64).ravel()
    scores = np.asarray(scores, dtype=np.float64).ravel()
    if slots.shape != scores.shape:
        raise ValueError(f"slots {slots.shape} and scores {scores.shape} differ in shape")
    if slots.size == 0:
        raise ValueError("no scores to estimate propensities from")
    if slots.min() < 0 or slots.max() >= num_slots:
        raise ValueError(f"slots must lie in [0, {num_slots}), got [{slots.min()}, {slots.max()}]")
    overall = scores.mean()
    if not overall > 0:
        raise ValueError(f"the mean score is {overall}; propensities need a positive mean")
    sums = np.bincount(slots, weights=scores, minlength=num_slots)
    counts = np.bincount(slots, minlength=num_slots)
    if (counts == 0).any():
        missing = np.flatnonzero(counts == 0).tolist()
        raise ValueError(f"no score observed at slot(s) {missing}")
    return (sums / counts) / overall


def ips_weights(propensities: np.ndarray, clip: float = 5.0) -> np.ndarray:
    """``1/p`` clipped to ``[1/clip, clip]``, then scaled to mean 1. Pure."""
    p = np.asarray(propensities, dtype=np.float64)
    if (p <= 0).any():
        raise ValueError("propensities must be > 0")
    w = np.clip(1.0 / p, 1.0 / clip, clip)
    return w / w.mean()


def weights_for_slots(weights: np.ndarray, slots: np.ndarray, num_slots: int) -> np.ndarray:
    """Weight of each 0-based ``slots`` entry in a prompt of ``num_slots`` slots (relative map)."""
    b = len(weights)
    idx = np.floor(np.asarray(slots, dtype=np.float64) * b / num_slots).astype(np.int64)
    return np.asarray(weights, dtype=np.float64)[np.clip(idx, 0, b - 1)]


def propensities_from_psi(psi_dir: str | Path) -> np.ndarray:
    """Slot propensities from ``<psi_dir>/psi/grade_distributions.npz`` (shuffled rows only)."""
    root = Path(psi_dir)
    path = root / "psi" / "grade_distributions.npz"
    if not path.is_file():
        path = root / "grade_distributions.npz"
    if not path.is_file():
        raise ConfigError(
            f"propensity.psi_dir: no psi/grade_distributions.npz under {root}. Fix: run "
            "`presdep psi CONFIG --run-dir DIR` with the off-the-shelf scorer on non-test "
            "queries and point propensity.psi_dir at DIR"
        )
    with np.load(path, allow_pickle=False) as z:
        variant, slot, score, chunk = (z[k] for k in ("variant", "slot", "score", "chunk"))
    keep = variant != "same_order"
    if not keep.any():
        raise ConfigError(f"{path}: holds no shuffled presentations (only the same-order null)")
    # slots are 1-based within a chunk; chunks of one size only (the readout's B)
    first = keep & (chunk == chunk[keep].min())
    slots0 = slot[first].astype(np.int64) - 1
    return slot_propensities(slots0, score[first], int(slots0.max()) + 1)


def balanced_views(n: int, num_views: int, *, seed: int, key: str, epoch: int) -> np.ndarray:
    """V cyclic shifts by ``⌊k·n/V⌋`` of one permutation drawn from (seed, key, epoch). (V, n)."""
    if num_views < 1 or n < 1:
        raise ValueError(f"need n >= 1 and num_views >= 1, got {n}, {num_views}")
    rng = rng_from(seed, "balanced-views", key, epoch)
    base = rng.permutation(n)
    return np.stack([np.roll(base, -((k * n) // num_views)) for k in range(num_views)])
