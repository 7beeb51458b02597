"""One judge run's summary: scores under both failure conventions, accuracy by slot, the spread.

Units. A *record* is one judge call (item x placement x repeat). An *item's score* is the mean
of its records' scores, so a full placement sweep averages over placements first; the run's
score is the mean over items, with a percentile bootstrap interval over items
(:func:`~presentation_dependence.metrics.stats.mean_with_ci`).

Conventions. A parse failure scores 0 (``score_fail0``) or 1/N, the chance credit of an N-way
item (``score_fail_chance``; RewardBench 2 credits 0.25 for N = 4). Both are always reported,
with the failure rate beside them.

Slots. ``accuracy`` of slot s = correct records / records with the correct response in slot s
(a parse failure counts as not correct), with the Wilson score interval
(:func:`~presentation_dependence.metrics.proportions.wilson_interval`). The spread is
max_s − min_s of those accuracies; its interval resamples *items* (each with all its records)
with replacement, via :func:`~presentation_dependence.metrics.stats.bootstrap_ci`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from presentation_dependence.judge.items.records import JudgeRecord
from presentation_dependence.judge.scoring.settings import ScoringSettings
from presentation_dependence.metrics.proportions import wilson_interval
from presentation_dependence.metrics.stats import bootstrap_ci, mean_with_ci

__all__ = ["correct_in_every_placement", "item_scores", "slot_table", "summarise_records"]


def item_scores(
    records: Sequence[JudgeRecord], convention: str = "fail0"
) -> tuple[list[str], np.ndarray]:
    """Item ids (first-seen order) and each item's mean record score under ``convention``
    (``fail0``: failure = 0; ``chance``: failure = 1/N)."""
    if convention not in ("fail0", "chance"):
        raise ValueError(f"convention must be fail0 or chance, got {convention!r}")
    by_item: dict[str, list[float]] = defaultdict(list)
    for r in records:
        by_item[r.item_id].append(r.score(1.0 / r.n if convention == "chance" else 0.0))
    ids = list(by_item)
    return ids, np.array([np.mean(by_item[i]) for i in ids], dtype=np.float64)


def _slot_counts(records: Sequence[JudgeRecord]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(items, correct[item, slot], total[item, slot]) over the correct response's slot."""
    width = max(r.n for r in records)
    items = list(dict.fromkeys(r.item_id for r in records))
    row = {i: k for k, i in enumerate(items)}
    correct = np.zeros((len(items), width), dtype=np.int64)
    total = np.zeros((len(items), width), dtype=np.int64)
    for r in records:
        total[row[r.item_id], r.correct_slot] += 1
        correct[row[r.item_id], r.correct_slot] += int(r.correct)
    return items, correct, total


def _spread(correct: np.ndarray, total: np.ndarray) -> float:
    k, n = correct.sum(axis=0), total.sum(axis=0)
    seen = n > 0
    if seen.sum() < 2:
        return float("nan")
    acc = k[seen] / n[seen]
    return float(acc.max() - acc.min())


def slot_table(records: Sequence[JudgeRecord], confidence: float = 0.95) -> list[dict[str, Any]]:
    """Per slot: records with the correct response there, accuracy + Wilson interval, parse
    failures there, and how often the judge *named* that slot among parsed verdicts."""
    width = max(r.n for r in records)
    parsed = [r for r in records if r.parsed]
    named = Counter(r.verdict_slot for r in parsed)
    out = []
    for s in range(width):
        at = [r for r in records if r.correct_slot == s]
        k = sum(r.correct for r in at)
        low, high = wilson_interval(k, len(at), confidence)
        out.append(
            {
                "slot": chr(ord("A") + s),
                "n": len(at),
                "correct": k,
                "accuracy": k / len(at) if at else float("nan"),
                "ci_low": low,
                "ci_high": high,
                "parse_failures": sum(not r.parsed for r in at),
                "named_share": named[s] / len(parsed) if parsed else float("nan"),
            }
        )
    return out


def _consistency(records: Sequence[JudgeRecord]) -> float:
    """Share of items whose verdict names the same *response* (not slot) in every record."""
    chosen: dict[str, set[int | None]] = defaultdict(set)
    for r in records:
        chosen[r.item_id].add(r.placement[r.verdict_slot] if r.verdict_slot is not None else None)
    return float(np.mean([len(v) == 1 and None not in v for v in chosen.values()]))


def correct_in_every_placement(records: Sequence[JudgeRecord]) -> float:
    """Share of items judged correctly in every record (every placement; a parse failure is not
    correct): an item counts only if its verdict is right *and* does not flip. For a pair judged
    in both orders it equals accuracy − flip share / 2 (an item right in one order only is half
    right and flips); for four-way cyclic placements no such identity holds."""
    right: dict[str, bool] = {}
    for r in records:
        right[r.item_id] = right.get(r.item_id, True) and bool(r.correct)
    return float(np.mean(list(right.values())))


SUMMARY_STREAM = "judge-summary"  # the named random stream of a run's bootstrap intervals


def _slot_spread(
    records: Sequence[JudgeRecord], rng: np.random.Generator, settings: ScoringSettings
) -> dict[str, float]:
    """The best-minus-worst slot accuracy and its item bootstrap interval (NaNs when fewer than
    two slots hold the correct response)."""
    items, correct, total = _slot_counts(records)

    def spread_of(idx: np.ndarray) -> float:
        i = np.asarray(idx).astype(np.int64)
        return _spread(correct[i], total[i])

    point = _spread(correct, total)
    if np.isnan(point):
        low = high = float("nan")
    else:
        low, high = bootstrap_ci(
            np.arange(len(items), dtype=np.float64),
            rng=rng,
            n_resamples=settings.n_resamples,
            confidence=settings.confidence,
            statistic=spread_of,
        )
    return {"spread": point, "ci_low": low, "ci_high": high}


def summarise_records(records: Sequence[JudgeRecord], settings: ScoringSettings) -> dict[str, Any]:
    """Everything the judge report shows, as a JSON-ready dict; the intervals draw from the
    stream ``judge-summary`` of ``settings.seed``."""
    if not records:
        raise ValueError("no judge records")
    rng, confidence = settings.rng(SUMMARY_STREAM), settings.confidence
    n_fail = sum(not r.parsed for r in records)
    fail_low, fail_high = wilson_interval(n_fail, len(records), confidence)
    scores = {}
    for conv in ("fail0", "chance"):
        _, vals = item_scores(records, conv)
        scores[conv] = mean_with_ci(
            vals, rng, n_resamples=settings.n_resamples, confidence=confidence
        )
    spread = _slot_spread(records, rng, settings)  # after the scores: the same generator
    n_items = len({r.item_id for r in records})
    return {
        "records": len(records),
        "items": n_items,
        "n_way": sorted({r.n for r in records}),
        "placements_per_item": len(records) / n_items,
        "parse_failures": n_fail,
        "parse_failure_rate": n_fail / len(records),
        "parse_failure_ci": [fail_low, fail_high],
        "parse_status": dict(sorted(Counter(r.parse_status for r in records).items())),
        "finish": dict(sorted(Counter(r.finish for r in records).items())),
        "score_fail0": scores["fail0"],
        "score_fail_chance": scores["chance"],
        "slots": slot_table(records, confidence),
        "slot_spread": spread,
        "consistent_items": _consistency(records),
        "confidence": confidence,
        "bootstrap_resamples": settings.n_resamples,
    }
