"""A noise-aware gate: pass or fail a judge score against a threshold, allowing for rerun noise.

Procedure (``presdep gate``; docs/JUDGE.md):

1. Every case (item x placement) is judged ``k`` times (repeat indices 0..k−1). With
   ``adaptive``, first ``k_min`` times; the remaining calls are spent only when the mean is
   within ``near`` of the threshold.
2. A case's score is the mean of its calls (failure credit 0, or 1/N with ``convention:
   chance``), quantised to the grid: q = round(s / grid) · grid (``grid: 0`` = no quantising),
   so sub-grid jitter cannot move the mean.
3. mean = mean of q over cases. Measured noise: the SE of that mean from rerun variation alone,
   SE = √(Σ_i s²_i / k) / n with s²_i the variance (ddof 1) of case i's k calls
   (:func:`~presentation_dependence.metrics.reruns.rerun_se`); margin = z · SE.
4. Decision: ``pass`` if mean ≥ threshold; ``pass_within_noise`` if threshold − margin ≤ mean <
   threshold; ``fail`` (exit code 1) only if mean < threshold − margin. With k = 1 no noise is
   measured: the margin is 0 and the verdict says so.

Cache: ``<cache_dir>/<key>.jsonl`` holds every call's record, keyed by (item, placement, repeat),
rewritten after every 32 calls (an interrupted gate resumes there);
``key`` is :meth:`~presentation_dependence.judge.judges.base.JudgeIdentity.cache_key` of (judge class,
model snapshot, prompt version, parser version, seed), written beside it as ``<key>.json``. A
changed model, template text, parser or seed therefore never reuses an old verdict.

Known calls: ``run_gate(..., known=records)`` takes records the same judge already made of these
cases (a study's placement sweep is every case at repeat 0, its rerun repeat 1: the
same ``(item, placement, repeat)`` calls the gate would make) as calls 0 and 1 instead of judging
them again; they are counted as ``calls_reused`` and written to the cache with the rest.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import opt
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.judge.items.records import (
    JudgeRecord,
    JudgeRequest,
    read_records,
    write_records,
)
from presentation_dependence.judge.judges.base import Judge
from presentation_dependence.metrics.reruns import rerun_se
from presentation_dependence.runners.progress import progress

__all__ = ["EXIT_FAIL", "EXIT_PASS", "GateConfig", "GateVerdict", "decide", "quantise", "run_gate"]

logger = logging.getLogger(__name__)

EXIT_PASS = 0
EXIT_FAIL = 1
CHUNK = 32  # calls judged between two writes of the cache file


@dataclass(frozen=True)
class GateConfig:
    """The ``gate`` block of a judge config."""

    threshold: float = opt(0.5, "minimum acceptable mean score")
    k: int = opt(3, "calls per case")
    grid: float = opt(0.05, "quantisation step of case scores (0 = off)")
    z: float = opt(2.0, "margin = z x measured noise SE")
    adaptive: bool = opt(False, "spend k calls only near the threshold")
    k_min: int = opt(2, "calls per case in the adaptive first pass")
    near: float = opt(0.05, "adaptive: |mean - threshold| band for k")
    convention: str = opt("fail0", "parse failure credit: fail0 or chance")
    cache_dir: str | None = opt(None, "verdict cache folder; null = none")

    def __post_init__(self) -> None:
        if self.k < 1 or self.k_min < 1 or (self.adaptive and self.k_min > self.k):
            raise ConfigError(
                f"gate: need k >= 1 and 1 <= k_min <= k (adaptive), got k={self.k}, "
                f"k_min={self.k_min}"
            )
        if self.grid < 0 or self.z < 0 or self.near < 0:
            raise ConfigError("gate: grid, z and near must be >= 0")
        if self.convention not in ("fail0", "chance"):
            raise ConfigError(f"gate.convention must be fail0 or chance, got {self.convention!r}")


@dataclass(frozen=True)
class GateVerdict:
    decision: str
    exit_code: int
    reason: str
    details: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "exit_code": self.exit_code,
            "reason": self.reason,
            **self.details,
        }


def quantise(x: float, grid: float) -> float:
    """round(x / grid) · grid (half to even), cleaned to 12 decimals; grid 0 returns x."""
    if grid == 0:
        return float(x)
    return round(round(x / grid) * grid, 12)


class _Cache:
    def __init__(self, cache_dir: str | None, judge: Judge) -> None:
        self.identity = judge.identity()
        self.key = self.identity.cache_key()
        self.path = None if cache_dir is None else Path(cache_dir) / f"{self.key}.jsonl"
        self.records: dict[tuple[str, tuple[int, ...], int], JudgeRecord] = {}
        if self.path is not None and self.path.is_file():
            self.records = {r.key: r for r in read_records(self.path)}
        self.hits = 0
        self.reused = 0

    def add_known(self, known: Sequence[JudgeRecord], wanted: set[Any]) -> None:
        """Take the records of ``known`` whose call key is in ``wanted`` and not cached yet."""
        for rec in known:
            if rec.key in wanted and rec.key not in self.records:
                self.records[rec.key] = rec
                self.reused += 1
        if self.reused:  # cached as if judged here: a later gate on this cache reuses them too
            self._save()

    def _save(self) -> None:
        if self.path is not None:
            write_records(self.path, self.records.values())
            atomic_write_text(
                self.path.with_suffix(".json"),
                json.dumps(self.identity.to_dict(), indent=2) + "\n",
            )

    def judge(self, judge: Judge, requests: Sequence[JudgeRequest]) -> list[JudgeRecord]:
        """Judge the calls not cached, ``CHUNK`` at a time; the cache file is rewritten after
        each chunk, so an interrupted gate resumes at the last chunk it finished."""
        todo = [r for r in requests if r.key not in self.records]
        self.hits += len(requests) - len(todo)
        chunks = [todo[i : i + CHUNK] for i in range(0, len(todo), CHUNK)]
        for chunk in progress(chunks, "gate", unit="chunk"):
            for rec in judge.judge(chunk):
                self.records[rec.key] = rec
            self._save()
        return [self.records[r.key] for r in requests]


def _evaluate(
    cases: Sequence[JudgeRequest], calls: dict[int, list[JudgeRecord]], cfg: GateConfig
) -> dict[str, Any]:
    scores, quantised, variances, per_case = [], [], [], []
    for i, case in enumerate(cases):
        vals = [r.score(1.0 / r.n if cfg.convention == "chance" else 0.0) for r in calls[i]]
        s = float(np.mean(vals))
        q = quantise(s, cfg.grid)
        var = float(np.var(vals, ddof=1)) if len(vals) > 1 else float("nan")
        scores.append(s)
        quantised.append(q)
        variances.append(var)
        per_case.append(
            {
                "item_id": case.item.item_id,
                "placement": list(case.placement),
                "calls": vals,
                "score": s,
                "quantised": q,
            }
        )
    k = len(calls[0])
    noise_se = rerun_se(variances, k)
    return {
        "mean": float(np.mean(quantised)),
        "mean_unquantised": float(np.mean(scores)),
        "noise_se": noise_se,
        "margin": 0.0 if math.isnan(noise_se) else cfg.z * noise_se,
        "k_used": k,
        "cases": per_case,
    }


def _spend(
    judge: Judge,
    cache: _Cache,
    base: Sequence[JudgeRequest],
    calls: dict[int, list[JudgeRecord]],
    reps: range,
) -> None:
    """Judge every case at the repeat indices ``reps``; append the records to its calls."""
    reqs = [replace(c, repeat=r) for c in base for r in reps]
    recs = cache.judge(judge, reqs)
    for j, rec in enumerate(recs):
        calls[j // len(reps)].append(rec)


def _judge_cases(
    judge: Judge, base: Sequence[JudgeRequest], cache: _Cache, cfg: GateConfig
) -> tuple[dict[int, list[JudgeRecord]], dict[str, Any], bool]:
    """Every case's calls, their evaluation and whether the adaptive gate escalated: ``k``
    calls each, or (adaptive) ``k_min`` first and the rest only when the mean is near the
    threshold."""
    first_k = cfg.k_min if cfg.adaptive else cfg.k
    calls: dict[int, list[JudgeRecord]] = {i: [] for i in range(len(base))}
    _spend(judge, cache, base, calls, range(first_k))
    ev = _evaluate(base, calls, cfg)
    if (
        cfg.adaptive
        and first_k < cfg.k
        and abs(ev["mean"] - cfg.threshold) <= cfg.near + ev["margin"]
    ):
        _spend(judge, cache, base, calls, range(first_k, cfg.k))
        return calls, _evaluate(base, calls, cfg), True
    return calls, ev, False


def decide(ev: Mapping[str, Any], cfg: GateConfig, n_cases: int) -> tuple[str, int, str]:
    """The decision, its exit code and the reason (module docstring, step 4), from an
    evaluation's (or a written verdict's) ``mean``, ``margin``, ``noise_se`` and ``k_used``."""
    mean, margin, t = ev["mean"], ev["margin"], cfg.threshold
    noise_txt = (
        f"measured noise margin {margin:.4f} (z={cfg.z:g} x SE {ev['noise_se']:.4f} from "
        f"{ev['k_used']} calls of each of {n_cases} cases)"
        if ev["k_used"] > 1
        else "no noise measured (k=1), margin 0"
    )
    if mean >= t:
        return "pass", EXIT_PASS, f"PASS: mean {mean:.4f} >= threshold {t:.4f}; {noise_txt}"
    if mean >= t - margin:
        return (
            "pass_within_noise",
            EXIT_PASS,
            f"PASS (within noise): mean {mean:.4f} is below threshold {t:.4f} by "
            f"{t - mean:.4f}, not more than the {noise_txt}",
        )
    return (
        "fail",
        EXIT_FAIL,
        f"FAIL: mean {mean:.4f} is below threshold {t:.4f} by {t - mean:.4f}, more than the "
        f"{noise_txt}",
    )


def run_gate(
    judge: Judge,
    cases: Sequence[JudgeRequest],
    cfg: GateConfig,
    known: Sequence[JudgeRecord] = (),
) -> GateVerdict:
    """Judge ``cases`` (repeat indices are set here), decide, explain. ``known``: records this
    same judge already made of some of these calls (module docstring), used, not judged again."""
    if not cases:
        raise ConfigError("gate: no cases to judge")
    base = [replace(c, repeat=0) for c in cases]
    cache = _Cache(cfg.cache_dir, judge)
    cache.add_known(known, {replace(c, repeat=r).key for c in base for r in range(cfg.k)})
    calls, ev, escalated = _judge_cases(judge, base, cache, cfg)
    decision, code, reason = decide(ev, cfg, len(base))
    details = {
        "threshold": cfg.threshold,
        **{k: v for k, v in ev.items() if k != "cases"},
        "adaptive": cfg.adaptive,
        "escalated": escalated,
        "z": cfg.z,
        "grid": cfg.grid,
        "convention": cfg.convention,
        "n_cases": len(base),
        "calls_judged": sum(len(v) for v in calls.values()) - cache.hits,
        "cache_hits": cache.hits,  # of which calls_reused came from ``known``
        "calls_reused": cache.reused,
        "cache_key": cache.key,
        "cache_file": None if cache.path is None else str(cache.path),
        "identity": cache.identity.to_dict(),
        "per_case": ev["cases"],
    }
    logger.info("%s", reason)
    return GateVerdict(decision, code, reason, details)
