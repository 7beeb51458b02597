"""The paired comparison of two runs or judges on the same calls.

:func:`compare_runs` aligns two record lists on (item, placement) (:func:`align_records`), runs
the exact McNemar test (:func:`~presentation_dependence.metrics.proportions.mcnemar_exact`) on
the per-record right/wrong verdicts and a paired bootstrap
(:func:`~presentation_dependence.metrics.stats.paired_bootstrap`) on the per-*item* scores. With
a placement sweep an item's records are not independent, so McNemar's p is then optimistic; the
paired bootstrap resamples whole items and is the figure to read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from presentation_dependence.judge.items.records import JudgeRecord
from presentation_dependence.judge.scoring.summary import item_scores
from presentation_dependence.metrics.proportions import mcnemar_exact
from presentation_dependence.metrics.stats import paired_bootstrap

__all__ = ["align_records", "compare_runs"]


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
    items, sa = item_scores([ra for ra, _ in pairs], failure_credit)
    _, sb = item_scores([rb for _, rb in pairs], failure_credit)
    boot = paired_bootstrap(sa, sb, rng=rng, n_resamples=n_resamples, confidence=confidence)
    return {
        "mcnemar": mc,
        "paired_bootstrap": {**boot, "items": len(items), "convention": failure_credit},
    }
