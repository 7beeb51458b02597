"""Rerun noise: the same calls judged again, compared record by record.

Per comparison of runs A and B over m records (:func:`compare_reruns`):

* ``identical``: records whose response (text and token ids) is identical, share + Wilson interval;
* ``flips``: records whose right/wrong verdict changed, share f + Wilson interval;
* ``score_change``: Δ = mean over items of (score_B − score_A) (failure = 0) ± 1 SE, the SE
  over items (sd/√n_items, ddof 1), since an item's placements are not independent;
* ``noise_to_se``: √(f / (2 p̂ (1 − p̂))) with p̂ the mean accuracy of A and B
  (:func:`~presentation_dependence.metrics.reruns.flip_noise_to_se`): the rerun SD of the
  accuracy over its binomial SE; 1 means rerun noise is as large as the sampling error;
* ``first_diff``: over differing responses, the index of the first differing generated token
  (characters of the text for a judge that returns no tokens): min / median / max.

The runs of ``presdep noise`` (:func:`~presentation_dependence.judge.sweep.run_noise`) are
compared by :func:`rerun_comparisons`: within a condition, run r against its run 0 (pure rerun
noise); across conditions, each condition's run 0 against the first condition's run 0.
:func:`summarise_noise` adds one row per run and a paired test
(:func:`~presentation_dependence.judge.scoring.paired.compare_runs`) of each condition's run 0
against the first condition's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from presentation_dependence.judge.items.records import JudgeRecord
from presentation_dependence.judge.scoring.paired import align_records, compare_runs
from presentation_dependence.judge.scoring.settings import ScoringSettings
from presentation_dependence.judge.sweep import NoiseResult
from presentation_dependence.metrics.proportions import wilson_interval
from presentation_dependence.metrics.reruns import flip_noise_to_se

__all__ = ["compare_reruns", "rerun_comparisons", "summarise_noise"]


def _first_diff(a: JudgeRecord, b: JudgeRecord) -> tuple[int, str]:
    x: Sequence[object]
    y: Sequence[object]
    if a.token_ids or b.token_ids:
        x, y, unit = a.token_ids, b.token_ids, "token"
    else:
        x, y, unit = tuple(a.judgement), tuple(b.judgement), "char"
    for i, (u, v) in enumerate(zip(x, y, strict=False)):
        if u != v:
            return i, unit
    return min(len(x), len(y)), unit


def compare_reruns(
    a: Sequence[JudgeRecord], b: Sequence[JudgeRecord], *, label: str = "", confidence: float = 0.95
) -> dict[str, Any]:
    """The rerun-noise figures of run B against run A (module docstring)."""
    pairs = align_records(a, b)
    m = len(pairs)
    same = [ra.judgement == rb.judgement and ra.token_ids == rb.token_ids for ra, rb in pairs]
    flips = sum(ra.correct != rb.correct for ra, rb in pairs)
    f = flips / m
    p_hat = float(np.mean([(ra.correct + rb.correct) / 2 for ra, rb in pairs]))
    per_item: dict[str, list[float]] = {}
    for ra, rb in pairs:
        per_item.setdefault(ra.item_id, []).append(rb.score() - ra.score())
    d = np.array([np.mean(v) for v in per_item.values()])
    se = float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else float("nan")
    diffs = [_first_diff(ra, rb) for (ra, rb), s in zip(pairs, same, strict=True) if not s]
    positions = [p for p, _ in diffs]
    id_low, id_high = wilson_interval(sum(same), m, confidence)
    fl_low, fl_high = wilson_interval(flips, m, confidence)
    return {
        "label": label,
        "records": m,
        "items": len(per_item),
        "identical": sum(same),
        "identical_share": sum(same) / m,
        "identical_ci": [id_low, id_high],
        "verdict_changed": sum(ra.verdict_slot != rb.verdict_slot for ra, rb in pairs),
        "flips": flips,
        "flip_share": f,
        "flip_ci": [fl_low, fl_high],
        "accuracy_a": float(np.mean([ra.correct for ra, _ in pairs])),
        "accuracy_b": float(np.mean([rb.correct for _, rb in pairs])),
        "score_change": float(d.mean()),
        "score_change_se": se,
        "noise_to_se": flip_noise_to_se(f, p_hat),
        "first_diff": {
            "unit": diffs[0][1] if diffs else "token",
            "count": len(positions),
            "min": min(positions) if positions else None,
            "median": float(np.median(positions)) if positions else None,
            "max": max(positions) if positions else None,
        },
    }


def rerun_comparisons(
    runs: Mapping[str, Sequence[Sequence[JudgeRecord]]], *, confidence: float = 0.95
) -> list[dict[str, Any]]:
    """:func:`compare_reruns` of every condition's run r against its run 0, then of its run 0
    against the first condition's run 0, condition by condition."""
    first = next(iter(runs))
    out = []
    for name, recs in runs.items():
        pairs = [(recs[0], recs[r], f"{name}: run {r} vs run 0") for r in range(1, len(recs))]
        if name != first:
            pairs.append((runs[first][0], recs[0], f"{name} vs {first} (run 0)"))
        out += [compare_reruns(a, b, label=label, confidence=confidence) for a, b, label in pairs]
    return out


def _run_rows(result: NoiseResult) -> list[dict[str, Any]]:
    """One row per run: its condition, index, seconds, records, accuracy and parse failure
    rate, and the server's load during it when a served judge recorded any."""
    loaded = any(x for v in result.load.values() for x in v)
    return [
        {
            "condition": cond,
            "run": r,
            "seconds": result.seconds[cond][r],
            "records": len(rs),
            "accuracy": float(np.mean([x.correct for x in rs])),
            "parse_failure_rate": float(np.mean([not x.parsed for x in rs])),
            **({"server_load": result.load.get(cond, [None] * len(recs))[r]} if loaded else {}),
        }
        for cond, recs in result.runs.items()
        for r, rs in enumerate(recs)
    ]


def _paired_tests(
    runs: Mapping[str, Sequence[Sequence[JudgeRecord]]], settings: ScoringSettings
) -> list[dict[str, Any]]:
    """:func:`compare_runs` of each condition's run 0 against the first condition's (stream
    ``noise-compare-<condition>``)."""
    first = next(iter(runs))
    return [
        {
            "a": f"{first} run 0",
            "b": f"{cond} run 0",
            **compare_runs(
                runs[first][0],
                recs[0],
                rng=settings.rng(f"noise-compare-{cond}"),
                n_resamples=settings.n_resamples,
                confidence=settings.confidence,
            ),
        }
        for cond, recs in runs.items()
        if cond != first
    ]


def summarise_noise(result: NoiseResult, settings: ScoringSettings) -> dict[str, Any]:
    """What ``noise.json`` holds besides the judge's identity: one row per run (with the
    server's load during it, for a judge of a served model), the rerun comparisons and the
    paired tests (module docstring)."""
    return {
        "runs": _run_rows(result),
        "comparisons": rerun_comparisons(result.runs, confidence=settings.confidence),
        "paired_tests": _paired_tests(result.runs, settings),
    }
