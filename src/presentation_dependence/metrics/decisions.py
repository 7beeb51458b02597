"""Decision-level instability: does presentation order change what a system *does*?

Scores feed decisions: a set of retained candidates (a threshold or a top-k cut), an extracted
answer, a preference verdict. These functions compare the decisions made under M presentations
of the same input. All are pure; sets are ``frozenset`` so they can be hashed and compared.
"""

from __future__ import annotations

import re
import string
from collections.abc import Hashable, Sequence
from itertools import combinations

import numpy as np
from numpy.typing import ArrayLike

from presentation_dependence.metrics.ranking import _vector, ranks_from_scores

__all__ = [
    "answer_flip",
    "flip_rate",
    "jaccard",
    "mean_pairwise_jaccard",
    "normalize_answer",
    "pair_flip_rate",
    "retained_set",
    "retained_set_changed",
]


def retained_set(
    scores: ArrayLike,
    docids: Sequence[Hashable],
    *,
    threshold: float | None = None,
    top_k: int | None = None,
    tiebreak: ArrayLike | None = None,
) -> frozenset[Hashable]:
    """The candidates a system keeps: ``{d_j : s_j ≥ threshold}`` or the ``top_k`` best.

    Exactly one of ``threshold`` / ``top_k`` must be given. The threshold is inclusive (a score
    equal to it is kept). ``top_k`` keeps the candidates of rank ≤ k under
    :func:`~presentation_dependence.metrics.ranking.ranks_from_scores` (score descending, ties by
    ``tiebreak`` ascending, then by position in ``docids``), so a tie across the cut is resolved
    deterministically; ``top_k`` larger than n keeps everything.
    """
    if (threshold is None) == (top_k is None):
        raise ValueError("give exactly one of threshold= or top_k=")
    s = _vector("scores", scores, len(docids))
    if len(set(docids)) != len(docids):
        raise ValueError("docids must be distinct")
    if threshold is not None:
        keep = s >= threshold
    else:
        if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 0:
            raise ValueError(f"top_k must be a non-negative integer, got {top_k!r}")
        keep = ranks_from_scores(s, tiebreak) <= top_k
    return frozenset(d for d, k in zip(docids, keep, strict=True) if k)


def jaccard(
    a: frozenset[Hashable] | set[Hashable], b: frozenset[Hashable] | set[Hashable]
) -> float:
    """Jaccard similarity |a ∩ b| / |a ∪ b| (P. Jaccard, New Phytologist 11(2):37–50, 1912).

    Two empty sets give 1.0: both presentations led to the same decision (retain nothing), and
    this is a measure of agreement between decisions, not of overlap of content.
    """
    union = len(a | b)
    return 1.0 if union == 0 else len(a & b) / union


def mean_pairwise_jaccard(sets: Sequence[frozenset[Hashable]]) -> float:
    """Mean :func:`jaccard` over all M(M−1)/2 pairs of the M presentations' retained sets.

    1.0 = every presentation retains the same set. Raises ``ValueError`` for fewer than 2 sets.
    """
    if len(sets) < 2:
        raise ValueError(f"need at least 2 sets, got {len(sets)}")
    return float(np.mean([jaccard(a, b) for a, b in combinations(sets, 2)]))


def retained_set_changed(sets: Sequence[frozenset[Hashable]]) -> bool:
    """Whether any presentation's retained set differs from the first presentation's.

    A single set cannot change (False); an empty sequence is an error.
    """
    if len(sets) == 0:
        raise ValueError("no retained sets")
    first = sets[0]
    return any(s != first for s in sets[1:])


def flip_rate(changed: Sequence[bool]) -> float:
    """Share of queries whose decision changed with the presentation: (1/Q) Σ_q 1[changed_q].

    ``changed`` has one boolean per query (e.g. :func:`retained_set_changed` or
    :func:`answer_flip`). Raises ``ValueError`` when empty.
    """
    if len(changed) == 0:
        raise ValueError("no queries")
    return float(np.mean(np.asarray(changed, dtype=bool)))


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's answer normalisation: lower-case, drop punctuation and the articles a/an/the,
    collapse whitespace (Rajpurkar et al., "SQuAD: 100,000+ Questions for Machine Comprehension
    of Text", EMNLP 2016, official evaluation script ``normalize_answer``)."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def answer_flip(answers: Sequence[str]) -> bool:
    """Whether the normalised answers of the M presentations are not all identical.

    ``len({normalize_answer(a) for a in answers}) > 1``; a single answer cannot flip. Raises
    ``ValueError`` when empty.
    """
    if len(answers) == 0:
        raise ValueError("no answers")
    return len({normalize_answer(a) for a in answers}) > 1


def pair_flip_rate(pref_matrix: ArrayLike) -> float:
    """Share of preference pairs whose verdict is not the same in all M presentations.

    ``pref_matrix[m, p]`` is True when, in presentation ``m``, pair ``p``'s chosen item was scored
    above its rejected item. A pair flips when its column holds both True and False:

    .. math:: \\mathrm{PFR} = \\frac{1}{P} \\sum_p 1[\\exists m, m' : v_{mp} \\ne v_{m'p}]

    This is 1 − position consistency (the share of pairs judged the same whatever the order)
    in the LLM-as-judge literature, e.g. Zheng et al., "Judging LLM-as-a-Judge with MT-Bench
    and Chatbot Arena", NeurIPS 2023 Datasets and Benchmarks (swap test), generalised from 2
    orders to M. How score ties map to a verdict is the caller's choice (ties → False makes a
    consistently tied pair stable). Entries must be boolean (or 0/1).
    """
    arr = np.asarray(pref_matrix)
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"pref_matrix must be (M >= 1, P >= 1), got shape {arr.shape}")
    if arr.dtype != np.bool_:
        if not np.isin(arr, (0, 1)).all():
            raise ValueError("pref_matrix must hold booleans (or 0/1)")
        arr = arr.astype(bool)
    flipped = arr.any(axis=0) & ~arr.all(axis=0)
    return float(flipped.mean())
