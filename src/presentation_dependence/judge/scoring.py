"""The score stage of a judge run: everything computed from records; nothing is judged here.

Three parts: one run's summary (:func:`summarise_records`), the paired comparison of two runs
or judges (:func:`compare_runs`), and rerun noise (:func:`compare_reruns`, which
:func:`~presentation_dependence.judge.sweep.run_noise` calls; :func:`summarise_noise`).

**Summary.** Units. A *record* is one judge call (item x placement x repeat). An *item's score*
is the mean of its records' scores, so a full placement sweep averages over placements first;
the run's score is the mean over items, with a percentile bootstrap interval over items
(:func:`~presentation_dependence.metrics.stats.mean_with_ci`).

Conventions. A parse failure scores 0 (``score_fail0``) or 1/N, the chance credit of an N-way
item (``score_fail_chance``; RewardBench 2 credits 0.25 for N = 4). Both are always reported,
with the failure rate beside them.

Slots. ``accuracy`` of slot s = correct records / records with the correct response in slot s
(a parse failure counts as not correct), with the Wilson score interval
(``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``; Wilson, JASA 22:209–212, 1927).
The spread is max_s − min_s of those accuracies; its interval resamples *items* (each with all
its records) with replacement, via :func:`~presentation_dependence.metrics.stats.bootstrap_ci`.

**Paired comparisons.** :func:`mcnemar_exact`: the exact McNemar test on the discordant pairs.
With b = units only A gets right and c = units only B gets right, under H0 b ~ Binomial(b + c,
1/2), and the two-sided p is ``scipy.stats.binomtest(b, b + c, 0.5).pvalue`` (McNemar,
Psychometrika 12:153–157, 1947; the exact form avoids the chi-square approximation at small
b + c). No discordant unit: p = 1. :func:`compare_runs` aligns two record lists on (item,
placement), runs McNemar on the per-record right/wrong verdicts and a paired bootstrap
(:func:`~presentation_dependence.metrics.stats.paired_bootstrap`) on the per-*item* scores. With
a placement sweep an item's records are not independent, so McNemar's p is then optimistic; the
paired bootstrap resamples whole items and is the figure to read.

**Rerun noise.** Per comparison of runs A and B over m records (:func:`compare_reruns`):

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

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from presentation_dependence.judge.items.records import JudgeRecord
from presentation_dependence.metrics.proportions import mcnemar_exact, wilson_interval
from presentation_dependence.metrics.reruns import flip_noise_to_se
from presentation_dependence.metrics.stats import bootstrap_ci, mean_with_ci, paired_bootstrap
from presentation_dependence.seeding import named_rng

__all__ = [
    "align_records",
    "compare_reruns",
    "compare_runs",
    "item_scores",
    "slot_table",
    "summarise_noise",
    "summarise_records",
]


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


def summarise_records(
    records: Sequence[JudgeRecord],
    *,
    rng: np.random.Generator,
    n_resamples: int = 2000,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Everything the judge report shows, as a JSON-ready dict."""
    if not records:
        raise ValueError("no judge records")
    n_fail = sum(not r.parsed for r in records)
    fail_low, fail_high = wilson_interval(n_fail, len(records), confidence)
    scores = {}
    for conv in ("fail0", "chance"):
        _, vals = item_scores(records, conv)
        scores[conv] = mean_with_ci(vals, rng, n_resamples=n_resamples, confidence=confidence)
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
            n_resamples=n_resamples,
            confidence=confidence,
            statistic=spread_of,
        )
    return {
        "records": len(records),
        "items": len(items),
        "n_way": sorted({r.n for r in records}),
        "placements_per_item": len(records) / len(items),
        "parse_failures": n_fail,
        "parse_failure_rate": n_fail / len(records),
        "parse_failure_ci": [fail_low, fail_high],
        "parse_status": dict(sorted(Counter(r.parse_status for r in records).items())),
        "finish": dict(sorted(Counter(r.finish for r in records).items())),
        "score_fail0": scores["fail0"],
        "score_fail_chance": scores["chance"],
        "slots": slot_table(records, confidence),
        "slot_spread": {"spread": point, "ci_low": low, "ci_high": high},
        "consistent_items": _consistency(records),
        "confidence": confidence,
        "bootstrap_resamples": n_resamples,
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
    items, sa = item_scores([ra for ra, _ in pairs], failure_credit)
    _, sb = item_scores([rb for _, rb in pairs], failure_credit)
    boot = paired_bootstrap(sa, sb, rng=rng, n_resamples=n_resamples, confidence=confidence)
    return {
        "mcnemar": mc,
        "paired_bootstrap": {**boot, "items": len(items), "convention": failure_credit},
    }


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


def summarise_noise(
    runs: Mapping[str, Sequence[Sequence[JudgeRecord]]],
    seconds: Mapping[str, Sequence[float]],
    comparisons: Sequence[Mapping[str, Any]],
    *,
    seed: int,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    load: Mapping[str, Sequence[Mapping[str, Any] | None]] | None = None,
) -> dict[str, Any]:
    """What ``noise.json`` holds besides the judge's identity: one row per run (with the
    server's load during it, for a judge of a served model), the rerun comparisons, and a paired
    test of each condition's run 0 against the first condition's."""
    rows = [
        {
            "condition": cond,
            "run": r,
            "seconds": seconds[cond][r],
            "records": len(rs),
            "accuracy": float(np.mean([x.correct for x in rs])),
            "parse_failure_rate": float(np.mean([not x.parsed for x in rs])),
            **({"server_load": (load or {}).get(cond, [None] * len(recs))[r]} if load else {}),
        }
        for cond, recs in runs.items()
        for r, rs in enumerate(recs)
    ]
    first = next(iter(runs))
    paired = [
        {
            "a": f"{first} run 0",
            "b": f"{cond} run 0",
            **compare_runs(
                runs[first][0],
                recs[0],
                rng=named_rng(seed, f"noise-compare-{cond}"),
                n_resamples=n_resamples,
                confidence=confidence,
            ),
        }
        for cond, recs in runs.items()
        if cond != first
    ]
    return {"runs": rows, "comparisons": list(comparisons), "paired_tests": paired}
