"""Confidence intervals and paired tests over per-query values.

The unit of resampling is the *query*: ``values[q]`` is one query's metric (e.g. its τ-PSI or
nDCG@10), and two systems are compared on the same queries, paired. The ``stratified_*``
functions take queries grouped in strata (collections) and estimate the macro mean over strata,
resampling (or sign-flipping) queries only within their stratum. Every random draw comes from
the ``numpy.random.Generator`` the caller passes, so the same seed gives the same result.
Inputs are never written; NaN values are refused (drop unjudged or undefined queries first).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from presentation_dependence.metrics.ranking import _vector
from presentation_dependence.seeding import (
    Entropy,
    named_rng,  # re-exported: its historical home
    rng_from,
)

__all__ = [
    "bootstrap_ci",
    "mean_with_ci",
    "named_rng",
    "paired_bootstrap",
    "paired_comparison",
    "paired_permutation_test",
    "stratified_bootstrap_ci",
    "stratified_paired_bootstrap",
    "stratified_permutation_test",
]

# scipy >= 1.15 takes ``rng=``; older releases only ``random_state=`` (same Generator semantics).
_RNG_KW = "rng" if "rng" in inspect.signature(stats.bootstrap).parameters else "random_state"

CIMethod = Literal["percentile", "basic", "BCa"]


def _values(name: str, values: ArrayLike) -> NDArray[np.float64]:
    v = _vector(name, values)
    if v.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.isfinite(v).all():
        raise ValueError(f"{name} must be finite")
    return v


def _check_resampling(n_resamples: int, confidence: float) -> None:
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def _is_constant(v: NDArray[np.float64]) -> bool:
    return bool(np.all(v == v[0]))


def bootstrap_ci(
    values: ArrayLike,
    *,
    rng: np.random.Generator,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    statistic: Callable[..., Any] = np.mean,
    method: CIMethod = "percentile",
) -> tuple[float, float]:
    """Bootstrap confidence interval of ``statistic(values)`` over queries.

    Resamples the n queries with replacement ``n_resamples`` times
    (``scipy.stats.bootstrap``) and, with the default **percentile** method, returns the
    (1−c)/2 and (1+c)/2 quantiles of the resampled statistic (Efron & Tibshirani, "An
    Introduction to the Bootstrap", Chapman & Hall 1993, ch. 13). Percentile rather than
    scipy's default BCa: it never needs the jackknife acceleration, which is undefined or
    unstable for the small, bounded, tie-heavy per-query samples we have (many τ-PSI or nDCG
    values of exactly 0 or 1); ``method="BCa"`` is there for large samples.

    Degenerate samples do not crash: n = 1 or all values equal returns ``(v, v)`` with
    ``v = statistic(values)`` (every resample gives v). Empty or non-finite input raises
    ``ValueError``.
    """
    _check_resampling(n_resamples, confidence)
    v = _values("values", values)
    if v.size == 1 or _is_constant(v):
        point = float(statistic(v))
        return point, point
    res = stats.bootstrap(
        (v,),
        statistic,
        n_resamples=n_resamples,
        confidence_level=confidence,
        method=method,
        **{_RNG_KW: rng},
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def mean_with_ci(
    values: ArrayLike,
    rng: np.random.Generator,
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
) -> dict[str, float | int]:
    """``{"mean", "ci_low", "ci_high", "n"}``: the mean over queries and its percentile
    bootstrap CI (:func:`bootstrap_ci`)."""
    v = _values("values", values)
    low, high = bootstrap_ci(v, rng=rng, n_resamples=n_resamples, confidence=confidence)
    return {"mean": float(v.mean()), "ci_low": low, "ci_high": high, "n": int(v.size)}


def _paired(a: ArrayLike, b: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    av = _values("a", a)
    bv = _values("b", b)
    if av.shape != bv.shape:
        raise ValueError(f"a and b must be paired (same length), got {av.size} and {bv.size}")
    return av, bv


def paired_bootstrap(
    a: ArrayLike,
    b: ArrayLike,
    *,
    rng: np.random.Generator,
    n_resamples: int = 2000,
    confidence: float = 0.95,
) -> dict[str, float]:
    """Paired bootstrap on the mean per-query difference ``d = a − b``.

    ``mean_diff`` = d̄. ``ci_low``/``ci_high``: percentile bootstrap CI of d̄ (queries resampled
    with replacement, ``scipy.stats.bootstrap``). ``p_value``: two-sided bootstrap test of
    H0: E[d] = 0 by the shift method: the bootstrap means d̄*_b recentred on the null,
    d̄*_b − d̄, are the null distribution, and

    .. math:: p = \\frac{1 + \\#\\{b : |\\bar d^*_b - \\bar d| \\ge |\\bar d|\\}}{B + 1}

    (Efron & Tibshirani 1993, ch. 16; the +1 keeps p > 0, Davison & Hinkley, "Bootstrap Methods
    and their Application", CUP 1997, ch. 4; the paired bootstrap for IR: Sakai, "Evaluating
    evaluation metrics based on the bootstrap", SIGIR 2006). The same resamples give the CI and
    p. Degenerate cases: n = 1 gives CI (d, d) and p = nan (no inference from one query);
    constant d gives CI (d̄, d̄) and p = 1 if d̄ = 0 else 1/(B+1). The bootstrap is
    anti-conservative for small n; prefer :func:`paired_permutation_test` there.
    """
    _check_resampling(n_resamples, confidence)
    av, bv = _paired(a, b)
    d = av - bv
    mean_diff = float(d.mean())
    if d.size == 1:
        return {
            "mean_diff": mean_diff,
            "ci_low": mean_diff,
            "ci_high": mean_diff,
            "p_value": float("nan"),
        }
    if _is_constant(d):
        dist = np.full(n_resamples, mean_diff)
        low = high = mean_diff
    else:
        res = stats.bootstrap(
            (d,),
            np.mean,
            n_resamples=n_resamples,
            confidence_level=confidence,
            method="percentile",
            **{_RNG_KW: rng},
        )
        dist = np.asarray(res.bootstrap_distribution, dtype=np.float64)
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    extreme = int(np.count_nonzero(np.abs(dist - mean_diff) >= abs(mean_diff)))
    p_value = (1 + extreme) / (n_resamples + 1)
    return {"mean_diff": mean_diff, "ci_low": low, "ci_high": high, "p_value": float(p_value)}


def _mean_paired_difference(x: NDArray[np.float64], y: NDArray[np.float64], axis: int) -> Any:
    return np.mean(x - y, axis=axis)


def paired_permutation_test(
    a: ArrayLike,
    b: ArrayLike,
    *,
    rng: np.random.Generator,
    n_resamples: int = 9999,
) -> dict[str, float]:
    """Two-sided paired permutation (randomisation) test of H0: a and b are exchangeable per query.

    Statistic: the mean paired difference d̄ = mean(a − b). Under H0 the labels within each
    query can be swapped, i.e. each d_q flips sign; ``scipy.stats.permutation_test(...,
    permutation_type="samples")`` enumerates all 2^n sign patterns when 2^n ≤ ``n_resamples``
    (exact p) and otherwise draws ``n_resamples`` of them from ``rng``. Source: Fisher's
    randomisation test; recommended for IR by Smucker, Allan & Carterette, "A comparison of
    statistical significance tests for information retrieval evaluation", CIKM 2007.

    Returns ``{"mean_diff", "p_value"}``; n = 1 gives p = 1 (its two sign patterns tie).
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    av, bv = _paired(a, b)
    mean_diff = float(np.mean(av - bv))
    if av.size == 1:  # scipy refuses n = 1; both sign patterns are as extreme, so p = 1 exactly
        return {"mean_diff": mean_diff, "p_value": 1.0}
    res = stats.permutation_test(
        (av, bv),
        _mean_paired_difference,
        permutation_type="samples",
        vectorized=True,
        n_resamples=n_resamples,
        alternative="two-sided",
        **{_RNG_KW: rng},
    )
    return {"mean_diff": mean_diff, "p_value": float(res.pvalue)}


def paired_comparison(
    a: ArrayLike,
    b: ArrayLike,
    *,
    stream: Sequence[Entropy],
    n_resamples: int = 2000,
    n_permutations: int = 9999,
    confidence: float = 0.95,
    tags: tuple[Sequence[Entropy], Sequence[Entropy]] = ((), (1,)),
) -> dict[str, float]:
    """a against b paired per query: :func:`paired_bootstrap` and :func:`paired_permutation_test`.

    Returns ``{"mean_diff", "ci_low", "ci_high", "p_value", "permutation_p"}``: the mean of
    ``a − b``, its percentile bootstrap CI and shift-method bootstrap p, and the two-sided
    permutation p. ``stream`` is the one named random stream of this comparison (seed material,
    e.g. ``(seed, "compare", measure)``); the bootstrap draws from ``rng_from(*stream, *tags[0])``
    and the permutations from ``rng_from(*stream, *tags[1])``. ``tags`` defaults to ``()`` and
    ``(1,)``; a caller whose committed figures were drawn under other tags (``"boot"``/``"perm"``)
    passes them, so its numbers do not change.
    """
    boot = paired_bootstrap(
        a, b, rng=rng_from(*stream, *tags[0]), n_resamples=n_resamples, confidence=confidence
    )
    perm = paired_permutation_test(
        a, b, rng=rng_from(*stream, *tags[1]), n_resamples=n_permutations
    )
    return {**boot, "permutation_p": perm["p_value"]}


# --- Stratified by collection ----------------------------------------------------------------
#
# Weighting (the one judgement call here): every stratum weighs the same, so the statistic is the
# *macro* mean over strata, θ = (1/S) Σ_s mean(x_s), never the pooled mean over all queries.
# The claim these functions serve is about collections ("on the average over collections"), as
# the per-dataset averages of IR benchmark tables are: a pooled mean would weigh each collection
# by its query count, so one large collection (hundreds of queries) would drown a small one
# (DL19's 43) and the figure would change when a collection is subsampled. Query counts still
# matter where they should: a small stratum's mean varies more under resampling and so widens
# the interval more.


def _strata(name: str, groups: Sequence[ArrayLike]) -> list[NDArray[np.float64]]:
    strata = [_values(f"{name}[{i}]", g) for i, g in enumerate(groups)]
    if not strata:
        raise ValueError(f"{name} has no stratum")
    return strata


def _paired_strata(
    a_groups: Sequence[ArrayLike], b_groups: Sequence[ArrayLike]
) -> list[NDArray[np.float64]]:
    """The per-stratum paired differences ``a_s − b_s``."""
    if len(a_groups) != len(b_groups):
        raise ValueError(
            f"a and b must have the same strata, got {len(a_groups)} and {len(b_groups)}"
        )
    return [np.subtract(*_paired(a, b)) for a, b in zip(a_groups, b_groups, strict=True)]


def _macro_mean(strata: Sequence[NDArray[np.float64]]) -> float:
    return float(np.mean([s.mean() for s in strata]))


def _stratified_means(
    strata: Sequence[NDArray[np.float64]], rng: np.random.Generator, n_resamples: int
) -> NDArray[np.float64]:
    """B macro means θ*_b = (1/S) Σ_s mean(x*_s,b), each x*_s,b drawing n_s of stratum s's queries
    with replacement. Stratum by stratum, the indices are drawn as ``scipy.stats.bootstrap`` draws
    them for one sample (``rng.integers(0, n_s, (B, n_s))``), so one stratum gives exactly its
    resamples. Holds B × n_s indices per stratum in memory."""
    total = np.zeros(n_resamples)
    for s in strata:
        total += s[rng.integers(0, s.size, (n_resamples, s.size))].mean(axis=-1)
    return total / len(strata)


def _percentile_interval(dist: NDArray[np.float64], confidence: float) -> tuple[float, float]:
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(dist, [alpha, 1.0 - alpha])
    return float(low), float(high)


def stratified_bootstrap_ci(
    groups: Sequence[ArrayLike],
    *,
    rng: np.random.Generator,
    n_resamples: int = 2000,
    confidence: float = 0.95,
) -> dict[str, float | int]:
    """``{"mean", "ci_low", "ci_high", "n", "strata"}``: the macro mean over strata
    θ = (1/S) Σ_s x̄_s of ``groups`` (one array of per-query values per stratum) and its
    percentile bootstrap CI, queries resampled with replacement within each stratum
    (:func:`_stratified_means`; the stratified bootstrap of Davison & Hinkley 1997, §3.7).
    Equal stratum weights: see the note above. With one stratum it is :func:`bootstrap_ci`
    of the mean, draw for draw. Every stratum constant: CI (θ, θ), nothing drawn."""
    _check_resampling(n_resamples, confidence)
    strata = _strata("groups", groups)
    mean = _macro_mean(strata)
    if all(s.size == 1 or _is_constant(s) for s in strata):
        low = high = mean
    else:
        low, high = _percentile_interval(_stratified_means(strata, rng, n_resamples), confidence)
    n = sum(s.size for s in strata)
    return {"mean": mean, "ci_low": low, "ci_high": high, "n": n, "strata": len(strata)}


def stratified_paired_bootstrap(
    a_groups: Sequence[ArrayLike],
    b_groups: Sequence[ArrayLike],
    *,
    rng: np.random.Generator,
    n_resamples: int = 2000,
    confidence: float = 0.95,
) -> dict[str, float]:
    """:func:`paired_bootstrap` stratified: D = (1/S) Σ_s d̄_s with d_s = a_s − b_s paired over
    stratum s's queries, D*_b from queries resampled within strata (:func:`_stratified_means`),
    the percentile CI and the shift-method p = (1 + #{b : |D*_b − D| ≥ |D|}) / (B + 1).

    With one stratum it equals :func:`paired_bootstrap` for the same rng stream. Degenerate
    cases as there: every stratum of one query gives CI (D, D) and p = nan; every stratum
    constant gives CI (D, D) and p = 1 if D = 0 else 1/(B+1)."""
    _check_resampling(n_resamples, confidence)
    strata = _paired_strata(a_groups, b_groups)
    mean_diff = _macro_mean(strata)
    if all(s.size == 1 for s in strata):
        return {
            "mean_diff": mean_diff,
            "ci_low": mean_diff,
            "ci_high": mean_diff,
            "p_value": float("nan"),
        }
    if all(_is_constant(s) for s in strata):
        dist = np.full(n_resamples, mean_diff)
        low = high = mean_diff
    else:
        dist = _stratified_means(strata, rng, n_resamples)
        low, high = _percentile_interval(dist, confidence)
    extreme = int(np.count_nonzero(np.abs(dist - mean_diff) >= abs(mean_diff)))
    p_value = (1 + extreme) / (n_resamples + 1)
    return {"mean_diff": mean_diff, "ci_low": low, "ci_high": high, "p_value": float(p_value)}


def _sign_patterns(n: int) -> NDArray[np.float64]:
    """All 2^n sign vectors, one per row."""
    bits = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
    return np.asarray(1 - 2 * bits, dtype=np.float64)


def stratified_permutation_test(
    a_groups: Sequence[ArrayLike],
    b_groups: Sequence[ArrayLike],
    *,
    rng: np.random.Generator,
    n_resamples: int = 9999,
) -> dict[str, float]:
    """:func:`paired_permutation_test` stratified: H0 is that a and b are exchangeable within
    each query, so every d_q flips sign independently (within its stratum; strata are never
    mixed). Statistic: the macro mean D = Σ_q w_q d_q with w_q = 1 / (S n_s(q)).

    Two-sided p as ``scipy.stats.permutation_test`` computes it: p = min(1, 2 min(P(D* ≤ D),
    P(D* ≥ D))), the one-sided shares over all 2^N sign patterns when 2^N ≤ ``n_resamples``
    (exact; N queries in all; the null is symmetric, so this is #{|D*| ≥ |D|} / 2^N), else
    (1 + #{b : D*_b ≥ D}) / (B + 1) and its mirror over B = ``n_resamples`` patterns drawn from
    ``rng``; the comparisons tolerate 100 ulp of |D|, as scipy's do. With one stratum and
    2^N ≤ ``n_resamples`` it equals :func:`paired_permutation_test`."""
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    strata = _paired_strata(a_groups, b_groups)
    weighted = np.concatenate([s / (s.size * len(strata)) for s in strata])
    observed = float(weighted.sum())
    gamma = abs(observed) * 100 * np.finfo(np.float64).eps
    if 2**weighted.size <= n_resamples:
        null = _sign_patterns(weighted.size) @ weighted
        greater = np.count_nonzero(null >= observed - gamma) / null.size
        less = np.count_nonzero(null <= observed + gamma) / null.size
    else:
        above = below = 0
        chunk = max(1, 2**20 // weighted.size)
        for start in range(0, n_resamples, chunk):
            rows = min(chunk, n_resamples - start)
            null = (1.0 - 2.0 * rng.integers(0, 2, (rows, weighted.size))) @ weighted
            above += int(np.count_nonzero(null >= observed - gamma))
            below += int(np.count_nonzero(null <= observed + gamma))
        greater, less = (1 + above) / (n_resamples + 1), (1 + below) / (n_resamples + 1)
    p_value = min(1.0, 2 * min(greater, less))
    return {"mean_diff": _macro_mean(strata), "p_value": float(p_value)}
