"""Order-instability metrics: how much a query's scores depend on the presentation order.

Input is a score matrix of shape (M, n): M presentations (permutations) of the same n candidates,
row ``m`` holding the score each candidate got in presentation ``m``. Columns are aligned by
*candidate*, never by slot. Every function is pure (inputs never written) and refuses NaN.

Tie rule for τ (the one judgement call here, see :func:`mean_pairwise_tau`)
-------------------------------------------------------------------------
Partial ties inside a presentation are handled by Kendall's τ-b. A presentation whose scores
are *all* equal carries no order information, and τ-b is 0/0 for it; every pair of
presentations that involves such a row counts as τ = 0, *including* a pair of two all-tied rows.
So a scorer that ties everything gets τ-PSI = 0.5 (uninformative), not 0 (perfectly stable).
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Mapping
from itertools import combinations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from presentation_dependence.metrics.ranking import _matrix, _vector, ranks_from_scores

__all__ = [
    "TIE_TOL",
    "delta_ndcg",
    "kendall_tau_b",
    "mean_pairwise_tau",
    "rank_variance",
    "score_spread",
    "score_variance",
    "tau_psi",
    "tied_share",
    "zeng_psi",
    "zeng_psi_corpus",
]

log = logging.getLogger(__name__)


def _is_constant(v: NDArray[np.float64]) -> bool:
    return bool(v.size == 0 or np.all(v == v[0]))


def kendall_tau_b(x: ArrayLike, y: ArrayLike) -> float:
    """Kendall's τ-b between two score vectors over the same candidates.

    .. math::

        \\tau_b = \\frac{n_c - n_d}{\\sqrt{(n_0 - n_1)(n_0 - n_2)}}

    with ``n_c``/``n_d`` the concordant/discordant candidate pairs, ``n_0 = n(n−1)/2``, and
    ``n_1``, ``n_2`` the pairs tied in ``x`` and in ``y``. Computed by
    ``scipy.stats.kendalltau(x, y, variant="b")``. Source: M. G. Kendall, "The treatment of ties
    in ranking problems", Biometrika 33(3):239–251, 1945.

    Identical (reversed) weak orders give exactly 1.0 (−1.0): they are detected on the ranks,
    because scipy's float denominator can return 0.9999999999999999 there. Undefined cases
    return ``nan`` (as scipy does), without a warning: fewer than 2 candidates,
    or either vector constant (its denominator factor is 0). :func:`mean_pairwise_tau` decides
    what such a pair is worth; this function does not guess.
    """
    xv = _vector("x", x)
    yv = _vector("y", y, xv.size)
    if xv.size < 2 or _is_constant(xv) or _is_constant(yv):
        return float("nan")
    # τ-b = ±1 exactly iff the two weak orders are equal / reversed. scipy divides by
    # sqrt(n0 − n1)·sqrt(n0 − n2), which rounds 1 to 0.9999999999999999 for some n (5, 6, 8, …);
    # a same-order null must give τ-PSI exactly 0, so these two cases are decided on the ranks.
    rx = stats.rankdata(xv)
    if np.array_equal(rx, stats.rankdata(yv)):
        return 1.0
    if np.array_equal(rx, stats.rankdata(-yv)):
        return -1.0
    return float(stats.kendalltau(xv, yv, variant="b").statistic)


def mean_pairwise_tau(score_matrix: ArrayLike) -> float:
    """Mean Kendall τ-b over all M(M−1)/2 pairs of presentations of one query.

    .. math::

        \\bar\\tau = \\binom{M}{2}^{-1} \\sum_{m < m'} \\tau^*(s_m, s_{m'}),\\qquad
        \\tau^*(x, y) = \\begin{cases} 0 & x \\text{ or } y \\text{ constant} \\\\
                                     \\tau_b(x, y) & \\text{otherwise} \\end{cases}

    Rows are compared candidate by candidate (columns aligned by candidate, not by slot).

    **Tie rule.** Partial ties are τ-b's business. A *constant* row (every candidate tied)
    induces no order at all: whatever ranking a system emits from it comes from its tie-break
    (slot, first-stage rank, docno), not from the scorer. A pair with one constant row is
    therefore scored τ = 0, "no evidence of agreement". A pair of two constant rows is *also*
    scored 0, not 1: the two outputs are identical, but they agree on no order, and scoring them 1
    would give a scorer that abstains (ties everything, every time) τ-PSI = 0, the best possible
    stability. τ-PSI measures whether the order a scorer produces survives re-presentation; a
    scorer that produces none gets the uninformative value τ-PSI = 0.5. (For a constant row 0 is
    also what τ-a, (n_c − n_d)/n_0, gives.) Read ``score_variance`` alongside to tell "ties
    everything" from "orders at random". Rows that are constant are logged at DEBUG.

    Returns ``nan`` when n < 2 (no pair of candidates to order). Raises ``ValueError`` when
    M < 2 (no pair of presentations).
    """
    s = _matrix("score_matrix", score_matrix)
    m, n = s.shape
    if m < 2:
        raise ValueError(f"need at least 2 presentations, got {m}")
    if n < 2:
        return float("nan")
    constant = [_is_constant(row) for row in s]
    if any(constant):
        log.debug("%d of %d presentations have all scores tied (τ = 0)", sum(constant), m)
    taus = [
        0.0 if (constant[i] or constant[j]) else kendall_tau_b(s[i], s[j])
        for i, j in combinations(range(m), 2)
    ]
    return float(np.mean(taus))


def tau_psi(score_matrix: ArrayLike) -> float:
    """τ-PSI = (1 − τ̄)/2, with τ̄ = :func:`mean_pairwise_tau` (same tie rule).

    0 = every presentation gives the same ranking, 0.5 = rankings uncorrelated across
    presentations (or no order information, e.g. a scorer that ties everything), 1 = every pair
    of presentations reversed. Without ties it is the mean normalised Kendall distance, the
    share of discordant candidate pairs (Kendall, "A new measure of rank correlation",
    Biometrika 30(1/2):81–93, 1938). The name is this project's; the pairwise-τ view of
    permutation (in)consistency follows Tang et al., "Found in the Middle: Permutation
    Self-Consistency Improves Listwise Ranking in Large Language Models", NAACL 2024.
    """
    return (1.0 - mean_pairwise_tau(score_matrix)) / 2.0


def score_variance(score_matrix: ArrayLike) -> NDArray[np.float64]:
    """Per-candidate variance of the score across presentations, population form (ddof = 0).

    ``Var_j = (1/M) Σ_m (s_mj − mean_m s_mj)²``. ddof = 0 because the M presentations are the
    whole set measured (and M = 1 gives 0, not nan); multiply by M/(M−1) for the unbiased
    estimate of the variance over all permutations. Returns shape (n,).
    """
    return np.asarray(np.var(_matrix("score_matrix", score_matrix), axis=0), dtype=np.float64)


def score_spread(score_matrix: ArrayLike) -> float:
    """Mean within-presentation spread of the scores: ``(1/M) Σ_m std_j(s_mj)`` (ddof = 0).

    How far apart the scorer puts the candidates of one query, averaged over presentations.
    Beside τ-PSI it tells a stable ranking from a flattened one: a scorer that pushes every
    candidate to the same score becomes "order-stable" only because there is nothing left to
    order (Zhao et al., "Calibrate Before Use", ICML 2021, discuss the same flattening for
    content-free calibration). 0 for n = 1.
    """
    s = _matrix("score_matrix", score_matrix)
    return float(np.std(s, axis=1).mean())


# Two scores closer than this are tied (:func:`tied_share`): an absolute tolerance on the 0–3
# grade scale, below the three decimals reports print. On another scale (a bi-encoder's cosines,
# which span a few hundredths within a query) it counts near-equal scores, not ties.
TIE_TOL = 1e-3


def tied_share(score_matrix: ArrayLike, tol: float = TIE_TOL) -> float:
    """Share of candidates tied with another candidate of the same presentation, averaged.

    Candidate j of presentation m is tied when some k ≠ j has ``|s_mj − s_mk| ≤ tol``
    (default :data:`TIE_TOL`, 1e-3 on the 0–3 grade scale).
    ``(1/(M n)) Σ_m Σ_j 1[∃ k ≠ j: |s_mj − s_mk| ≤ tol]``. 0 = every score distinct, 1 = no
    candidate separable from all others. Ranks of tied candidates come from the tie-break
    (first-stage rank), not from the scorer.
    """
    if tol < 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    s = _matrix("score_matrix", score_matrix)
    if s.shape[1] < 2:
        return 0.0
    diff = np.abs(s[:, :, None] - s[:, None, :])
    idx = np.arange(s.shape[1])
    diff[:, idx, idx] = np.inf  # a candidate is not tied with itself
    return float((diff <= tol).any(axis=2).mean())


def rank_variance(
    score_matrix: ArrayLike, tiebreak: ArrayLike | None = None
) -> NDArray[np.float64]:
    """Per-candidate variance of the 1-based rank across presentations (ddof = 0, as above).

    Ranks come from :func:`ranks_from_scores` per row: score descending, then ``tiebreak``
    ascending, then candidate index. ``tiebreak`` is (n,) (e.g. first-stage rank, the same in
    every presentation) or (M, n) (e.g. each candidate's slot in that presentation, to reproduce
    a system that breaks ties by slot). With a tie-break that is the same in every presentation
    an all-tied scorer gets rank variance 0: its *emitted* ranking really is stable, it is just
    the tie-break's ranking; τ-PSI is the metric that flags it. Returns shape (n,).
    """
    s = _matrix("score_matrix", score_matrix)
    if tiebreak is None:
        tb: list[NDArray[np.float64] | None] = [None] * s.shape[0]
    else:
        t = np.asarray(tiebreak, dtype=np.float64)
        if t.shape not in {(s.shape[1],), s.shape}:
            raise ValueError(
                f"tiebreak must have shape {(s.shape[1],)} or {s.shape}, got {t.shape}"
            )
        tb = list(np.broadcast_to(t, s.shape))
    ranks = np.stack([ranks_from_scores(row, t_row) for row, t_row in zip(s, tb, strict=True)])
    return np.asarray(np.var(ranks.astype(np.float64), axis=0), dtype=np.float64)


def delta_ndcg(ndcgs: ArrayLike) -> dict[str, float]:
    """Spread of one query's nDCG@k over its M presentations.

    Returns ``{"max_minus_min": max − min, "std": population std (ddof = 0), "mean": mean,
    "min": min, "max": max}``. ``max − min`` is the worst-case swing a user could see from
    presentation order alone; ``std`` its typical size.
    """
    v = _vector("ndcgs", ndcgs)
    if v.size == 0:
        raise ValueError("ndcgs is empty")
    return {
        "max_minus_min": float(v.max() - v.min()),
        "std": float(v.std()),
        "mean": float(v.mean()),
        "min": float(v.min()),
        "max": float(v.max()),
    }


def zeng_psi(position_scores: ArrayLike) -> float:
    """Zeng et al.'s Position Sensitivity Index over position buckets: PSI = 1 − min(s)/max(s).

    ``s`` holds one effectiveness score (e.g. nDCG@10) per position bucket; 0 = the same in every
    bucket, larger = worse worst case. Source: Z. Zeng, D. Zhang, J. Li, P. Zou, Y. Zhou,
    Y. Yang, "An Empirical Study of Position Bias in Modern Information Retrieval", Findings of
    EMNLP 2025, arXiv:2505.13950 (code: github.com/NovaSearch-Team/position-bias-in-IR; their
    README example: 1 − 0.9246/0.9503 ≈ 0.027).

    **Two different "positions".** In Zeng et al. the position is *where the answer sits
    inside a passage* (beginning/middle/end of the text). In this project it is *the slot of a
    candidate in a listwise prompt*. Same formula, different quantity: never mix the two kinds of
    bucket in one PSI, and say which one a reported PSI is (we call ours slot-PSI).

    Scores must be ≥ 0. Returns ``nan`` when every bucket scores 0 (0/0), 0.0 for one bucket.
    """
    s = _vector("position_scores", position_scores)
    if s.size == 0:
        raise ValueError("position_scores is empty")
    if not np.isfinite(s).all() or (s < 0).any():
        raise ValueError("position_scores must be finite and non-negative")
    top = float(s.max())
    if top == 0.0:
        return float("nan")
    return 1.0 - float(s.min()) / top


def zeng_psi_corpus(bucket_ndcg: Mapping[Hashable, ArrayLike]) -> float:
    """Corpus-level PSI: :func:`zeng_psi` of the per-bucket means, 1 − min_b μ_b / max_b μ_b.

    ``bucket_ndcg[b]`` holds the per-query scores of bucket ``b`` (buckets may hold different
    queries and counts); ``μ_b`` is their mean, as in Zeng et al. (arXiv:2505.13950), who compare
    the mean nDCG@10 of each answer-position group. The same caveat applies: answer position
    inside a passage (Zeng) and prompt slot (here) are different buckets, never pooled.
    """
    if not bucket_ndcg:
        raise ValueError("bucket_ndcg has no buckets")
    means = []
    for bucket, values in bucket_ndcg.items():
        v = _vector(f"bucket {bucket!r}", values)
        if v.size == 0:
            raise ValueError(f"bucket {bucket!r} has no queries")
        means.append(float(v.mean()))
    return zeng_psi(means)
