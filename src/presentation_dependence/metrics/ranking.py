"""Ranks and nDCG@k for one query's candidates, with the project's tie and gain conventions.

Every function is pure: inputs are read, never written (read-only arrays are accepted), and the
result is a new array or a Python float.

Conventions
-----------
* **Candidates are aligned by candidate, not by slot.** Index ``j`` of every vector is the same
  candidate in every presentation.
* **Ties.** :func:`ranks_from_scores` ranks by score descending, then by ``tiebreak`` ascending
  (e.g. the first-stage rank), then by index, like
  :meth:`presentation_dependence.records.RankResult.from_scores`. :func:`ndcg_at_k` breaks ties by
  index only; pass candidates in first-stage order and the two agree. trec_eval instead breaks
  score ties by docno *descending* (trec_eval #22, pytrec_eval #56), which is why the run writer
  makes scores tie-safe; on untied scores all three orders coincide.
* **Gains.** Linear, as in trec_eval's ``ndcg_cut``: the gain of a candidate is its graded label,
  negative labels count as 0, unjudged candidates have gain 0.
* **NaN scores are refused** (``ValueError``): a NaN has no place in an order. ``±inf`` is allowed.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["ndcg_at_k", "ndcg_per_presentation", "random_order_ndcg", "ranks_from_scores"]


def _vector(name: str, values: ArrayLike, size: int | None = None) -> NDArray[np.float64]:
    """``values`` as a 1-D float array (a view or a fresh copy; callers never write to it)."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if size is not None and arr.size != size:
        raise ValueError(f"{name} has {arr.size} entries, expected {size}")
    if np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN")
    return arr


def _matrix(name: str, values: ArrayLike) -> NDArray[np.float64]:
    """``values`` as a 2-D float array of shape (M presentations, n candidates), NaN refused."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (presentations, candidates), got shape {arr.shape}")
    if np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN")
    return arr


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return int(k)


def ranks_from_scores(scores: ArrayLike, tiebreak: ArrayLike | None = None) -> NDArray[np.int64]:
    """1-based rank of every candidate: score descending, ties by ``tiebreak`` then index.

    ``rank[j] = 1 + #{i : key(i) < key(j)}`` with the lexicographic key
    ``(−scores[i], tiebreak[i], i)``, so ranks are a permutation of ``1..n`` whatever the ties.
    ``tiebreak`` (e.g. the first-stage rank) is sorted ascending; without it ties fall to the
    lower index. This is the order of ``RankResult.from_scores``.

    >>> ranks_from_scores([0.2, 0.9, 0.2], tiebreak=[3, 1, 2]).tolist()
    [3, 1, 2]
    """
    s = _vector("scores", scores)
    index = np.arange(s.size)
    if tiebreak is None:
        keys: tuple[NDArray[np.generic], ...] = (index, -s)
    else:
        keys = (index, _vector("tiebreak", tiebreak, s.size), -s)
    order = np.lexsort(keys)  # sorts by the last key first
    ranks = np.empty(s.size, dtype=np.int64)
    ranks[order] = np.arange(1, s.size + 1)
    return ranks


def _discounts(length: int) -> NDArray[np.float64]:
    """``1 / log2(i + 1)`` for ranks ``i = 1..length``."""
    return 1.0 / np.log2(np.arange(2, length + 2, dtype=np.float64))


def _ideal_dcg(ideal_gains: NDArray[np.float64], k: int) -> float:
    ideal = np.sort(np.clip(ideal_gains, 0.0, None))[::-1][:k]
    return float(ideal @ _discounts(ideal.size))


def ndcg_at_k(
    scores: ArrayLike,
    gains: ArrayLike,
    k: int = 10,
    ideal_gains: ArrayLike | None = None,
) -> float:
    """nDCG@k of the ranking that ``scores`` induce, with trec_eval's linear gain.

    .. math::

        \\mathrm{DCG@k} = \\sum_{i=1}^{\\min(k, n)} \\frac{g_{\\pi(i)}}{\\log_2(i + 1)}, \\qquad
        \\mathrm{nDCG@k} = \\frac{\\mathrm{DCG@k}}{\\mathrm{IDCG@k}}

    where ``π`` sorts candidates by score descending (ties: lower index first, a stable sort),
    ``g = max(gains, 0)`` and IDCG@k is the DCG@k of ``ideal_gains`` sorted descending. As in
    trec_eval's ``ndcg_cut.k``, ``ideal_gains`` should be *every* judged grade of the query, not
    only those of the retrieved candidates (default: ``gains``); a query whose ideal DCG is 0
    scores 0.0. Same numbers as ``presentation_dependence.data.smoke.expected_ndcg_at_10`` and
    pytrec_eval on untied scores (trec_eval breaks score ties by docno descending instead).

    Source: Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR techniques",
    ACM TOIS 20(4):422–446, 2002; linear gain and the ideal over all judgements as in trec_eval's
    ``ndcg_cut`` measure (the ranx ``ndcg`` with ``jarvelin`` gain computes the same).

    Args:
        scores: (n,) scores of the candidates; higher is better.
        gains: (n,) graded labels of the same candidates (0 for unjudged).
        k: cutoff, a positive integer.
        ideal_gains: all judged grades of the query, in any order.
    """
    k = _check_k(k)
    s = _vector("scores", scores)
    g = np.clip(_vector("gains", gains, s.size), 0.0, None)
    ideal = g if ideal_gains is None else _vector("ideal_gains", ideal_gains)
    idcg = _ideal_dcg(ideal, k)
    if idcg <= 0.0:
        return 0.0
    top = g[np.argsort(-s, kind="stable")][:k]
    return float(top @ _discounts(top.size)) / idcg


def ndcg_per_presentation(
    score_matrix: ArrayLike,
    gains: ArrayLike,
    k: int = 10,
    ideal_gains: ArrayLike | None = None,
) -> NDArray[np.float64]:
    """nDCG@k of every presentation: row ``m`` is :func:`ndcg_at_k` of ``score_matrix[m]``.

    Args:
        score_matrix: (M, n) scores, one row per presentation, columns aligned by candidate.
        gains: (n,) graded labels of the candidates.
        k: cutoff.
        ideal_gains: all judged grades of the query (default: ``gains``).

    Returns:
        (M,) array of nDCG@k values; ties within a row fall to the lower column index.
    """
    k = _check_k(k)
    s = _matrix("score_matrix", score_matrix)
    g = np.clip(_vector("gains", gains, s.shape[1]), 0.0, None)
    ideal = g if ideal_gains is None else _vector("ideal_gains", ideal_gains)
    idcg = _ideal_dcg(ideal, k)
    if idcg <= 0.0:
        return np.zeros(s.shape[0], dtype=np.float64)
    top = g[np.argsort(-s, axis=1, kind="stable")][:, :k]
    return np.asarray((top @ _discounts(top.shape[1])) / idcg, dtype=np.float64)


def random_order_ndcg(gains: ArrayLike, k: int = 10, ideal_gains: ArrayLike | None = None) -> float:
    """The expected nDCG@k of the candidates put in a uniformly random order: the chance level.

    Each of the first ``min(k, n)`` ranks holds every candidate with probability 1/n, so its
    expected gain is the mean gain and, IDCG being fixed, E[nDCG@k] = mean(g) · Σ_{i<=min(k,n)}
    1/log2(i + 1) / IDCG@k (exact, no sampling; same gains and ideal as :func:`ndcg_at_k`).
    With one correct response among four, chance nDCG@1 is 0.25.
    """
    k = _check_k(k)
    g = np.clip(_vector("gains", gains), 0.0, None)
    ideal = g if ideal_gains is None else _vector("ideal_gains", ideal_gains)
    idcg = _ideal_dcg(ideal, k)
    if idcg <= 0.0 or g.size == 0:
        return 0.0
    return float(g.mean() * _discounts(min(k, g.size)).sum() / idcg)
