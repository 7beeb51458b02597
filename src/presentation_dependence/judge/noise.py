"""Rerun noise: judge the same requests several times with nothing changed, and compare.

``run_noise`` runs every *condition* (a batch size, or one prompt at a time) ``repeats`` times on
the same requests (run r passes repeat index r; the transformers judge ignores it, a scripted
judge draws its per-call noise from it). Comparisons, each on records aligned by
(item, placement):

* within a condition: run r against its run 0 (pure rerun noise);
* across conditions: each condition's run 0 against the first condition's run 0.

Per comparison of runs A and B over m records:

* ``identical``: records whose response (text and token ids) is identical, share + Wilson interval;
* ``flips``: records whose right/wrong verdict changed, share f + Wilson interval;
* ``score_change``: Δ = mean over items of (score_B − score_A) (failure = 0) ± 1 SE, the SE
  over items (sd/√n_items, ddof 1), since an item's placements are not independent;
* ``noise_to_se``: √(f / (2 p̂ (1 − p̂))) with p̂ the mean accuracy of A and B: the rerun SD of
  the accuracy (√(f / 2m) when each record flips with probability f) over its binomial SE
  √(p̂(1 − p̂)/m); 1 means rerun noise is as large as the sampling error. 0 when f = 0;
  NaN when p̂ is 0 or 1 and f > 0;
* ``first_diff``: over differing responses, the index of the first differing generated token
  (characters of the text for a judge that returns no tokens): min / median / max.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from presentation_dependence.judge.base import Judge
from presentation_dependence.judge.compare import align_records
from presentation_dependence.judge.records import JudgeRecord, JudgeRequest
from presentation_dependence.judge.scoring import wilson_interval

__all__ = ["NoiseCondition", "NoiseResult", "compare_reruns", "run_noise"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class NoiseCondition:
    """One way of running the judge: a batch size, or one prompt at a time."""

    batch_size: int | None = None
    one_at_a_time: bool = False

    @property
    def name(self) -> str:
        if self.one_at_a_time:
            return "one_at_a_time"
        return "configured" if self.batch_size is None else f"batch_size={self.batch_size}"


@dataclass
class NoiseResult:
    """Every run's records, the comparisons and the wall time of each run."""

    runs: dict[str, list[list[JudgeRecord]]] = field(default_factory=dict)
    seconds: dict[str, list[float]] = field(default_factory=dict)
    comparisons: list[dict[str, Any]] = field(default_factory=list)


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
    if f == 0:
        ratio = 0.0
    elif 0 < p_hat < 1:
        ratio = float(np.sqrt(f / (2 * p_hat * (1 - p_hat))))
    else:
        ratio = float("nan")
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
        "noise_to_se": ratio,
        "first_diff": {
            "unit": diffs[0][1] if diffs else "token",
            "count": len(positions),
            "min": min(positions) if positions else None,
            "median": float(np.median(positions)) if positions else None,
            "max": max(positions) if positions else None,
        },
    }


def run_noise(
    judge: Judge,
    requests: Sequence[JudgeRequest],
    *,
    repeats: int = 2,
    batch_sizes: Sequence[int | None] = (None,),
    one_at_a_time: bool = False,
    reference: Sequence[JudgeRecord] | None = None,
    confidence: float = 0.95,
) -> NoiseResult:
    """Judge ``requests`` ``repeats`` times under each batch size (and one at a time).

    ``reference``: records of an earlier run of exactly these requests, used as run 0 of the
    first condition instead of judging again (e.g. the placement sweep itself).
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    conditions = [NoiseCondition(b) for b in batch_sizes]
    if one_at_a_time:
        conditions.append(NoiseCondition(None, True))
    if not conditions:
        raise ValueError("no condition to run: give a batch size or one_at_a_time")
    if len({c.name for c in conditions}) != len(conditions):
        raise ValueError(f"duplicate conditions: {[c.name for c in conditions]}")
    base = [replace(r, repeat=0) for r in requests]
    result = NoiseResult()
    for ci, cond in enumerate(conditions):
        runs: list[list[JudgeRecord]] = []
        secs: list[float] = []
        for rep in range(repeats):
            if ci == 0 and rep == 0 and reference is not None:
                want = {(r.item.item_id, r.placement) for r in base}
                have = {(r.item_id, r.placement) for r in reference}
                if want != have or len(reference) != len(base):
                    raise ValueError(
                        "the reference records do not cover exactly these requests "
                        f"({len(want ^ have)} (item, placement) pairs differ)"
                    )
                runs.append(list(reference))
                secs.append(float("nan"))
                continue
            reqs = [replace(r, repeat=rep) for r in base]
            t0 = time.perf_counter()
            runs.append(
                judge.judge(reqs, batch_size=cond.batch_size, one_at_a_time=cond.one_at_a_time)
            )
            secs.append(time.perf_counter() - t0)
            logger.info("noise: %s run %d: %d records, %.1f s", cond.name, rep, len(reqs), secs[-1])
        result.runs[cond.name] = runs
        result.seconds[cond.name] = secs
    first = conditions[0].name
    for cond in conditions:
        runs = result.runs[cond.name]
        for rep in range(1, len(runs)):
            result.comparisons.append(
                compare_reruns(
                    runs[0],
                    runs[rep],
                    label=f"{cond.name}: run {rep} vs run 0",
                    confidence=confidence,
                )
            )
        if cond.name != first:
            result.comparisons.append(
                compare_reruns(
                    result.runs[first][0],
                    runs[0],
                    label=f"{cond.name} vs {first} (run 0)",
                    confidence=confidence,
                )
            )
    return result
