"""Paired comparisons of two judges, or two runs of one judge, on the same requests.

* :func:`mcnemar_exact`: the exact McNemar test on the discordant pairs. With b = units only A
  gets right and c = units only B gets right, under H0 b ~ Binomial(b + c, 1/2), and the two-sided
  p is ``scipy.stats.binomtest(b, b + c, 0.5).pvalue`` (McNemar, Psychometrika 12:153–157, 1947;
  the exact form avoids the chi-square approximation at small b + c). No discordant unit: p = 1.
* :func:`compare_runs`: aligns two record lists on (item, placement), runs McNemar on the
  per-record right/wrong verdicts and a paired bootstrap
  (:func:`~presentation_dependence.metrics.stats.paired_bootstrap`) on the per-*item* scores.
  With a placement sweep an item's records are not independent, so McNemar's p is then
  optimistic; the paired bootstrap resamples whole items and is the figure to read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from presentation_dependence.judge.records import JudgeRecord
from presentation_dependence.metrics.stats import paired_bootstrap

__all__ = ["align_records", "compare_runs", "mcnemar_exact"]


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


def align_records(
    a: Sequence[JudgeRecord], b: Sequence[JudgeRecord]
) -> list[tuple[JudgeRecord, JudgeRecord]]:
    """Pairs of records of the same (item, placement), in A's order. Each side must hold one
    record per (item, placement), and both sides the same set."""

    def index(
        rs: Sequence[JudgeRecord], side: str
    ) -> dict[tuple[str, tuple[int, ...]], JudgeRecord]:
        out: dict[tuple[str, tuple[int, ...]], JudgeRecord] = {}
        for r in rs:
            key = (r.item_id, r.placement)
            if key in out:
                raise ValueError(f"{side} has two records of item {r.item_id!r} at {r.placement}")
            out[key] = r
        return out

    ia, ib = index(a, "A"), index(b, "B")
    if ia.keys() != ib.keys():
        missing = len(ia.keys() ^ ib.keys())
        raise ValueError(f"A and B judged different requests ({missing} not in both)")
    return [(ra, ib[k]) for k, ra in ia.items()]


def compare_runs(
    a: Sequence[JudgeRecord],
    b: Sequence[JudgeRecord],
    *,
    rng: np.random.Generator,
    failure_credit: str = "fail0",
    n_resamples: int = 2000,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """McNemar on the records' right/wrong verdicts and a paired item bootstrap on the item
    scores (difference A − B, ``failure_credit`` fail0 or chance)."""
    pairs = align_records(a, b)
    mc = mcnemar_exact([p.correct for p, _ in pairs], [q.correct for _, q in pairs])
    items: dict[str, list[tuple[float, float]]] = {}
    for ra, rb in pairs:
        credit = 1.0 / ra.n if failure_credit == "chance" else 0.0
        items.setdefault(ra.item_id, []).append((ra.score(credit), rb.score(credit)))
    sa = np.array([np.mean([x for x, _ in v]) for v in items.values()])
    sb = np.array([np.mean([y for _, y in v]) for v in items.values()])
    boot = paired_bootstrap(sa, sb, rng=rng, n_resamples=n_resamples, confidence=confidence)
    return {
        "mcnemar": mc,
        "paired_bootstrap": {**boot, "items": len(items), "convention": failure_credit},
    }
