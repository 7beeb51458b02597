"""The judge-call stage: requests in, records out, resumable sweeps and reruns.

**The sweep** (``presdep judge``). :func:`judge_in_parts` judges the requests in *parts* and
writes each part atomically to ``records_parts/partNNNNN.jsonl`` as soon as it is judged, so a
killed sweep loses at most the part in flight and a rerun judges only the parts that are
missing. A part holds whole items and ends on a multiple of the judge's batch size, so every
``generate`` call sees exactly the prompts it sees in one uninterrupted sweep and the records
are byte-identical: with batch size 1 (or a batch size dividing the placements per item) a part
is one item. The judge's identity (model snapshot, prompt, parser, seed) is kept in
``records_parts/identity.json``; parts of another identity are refused.

**Reruns** (``presdep noise``). :func:`run_noise` judges the same requests with nothing changed
under every *condition* (a batch size, or one prompt at a time) ``repeats`` times (run r passes
repeat index r; the transformers judge ignores it, a scripted judge draws its per-call noise from
it), then compares, each on records aligned by (item, placement), with
:func:`~presentation_dependence.judge.scoring.compare_reruns`:

* within a condition: run r against its run 0 (pure rerun noise);
* across conditions: each condition's run 0 against the first condition's run 0.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from presentation_dependence.errors import PresdepError
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.judge.base import Judge
from presentation_dependence.judge.records import (
    JudgeRecord,
    JudgeRequest,
    read_records,
    write_records,
)
from presentation_dependence.judge.scoring import compare_reruns

__all__ = ["PARTS_DIR", "NoiseCondition", "NoiseResult", "judge_in_parts", "parts", "run_noise"]

log = logging.getLogger(__name__)

PARTS_DIR = "records_parts"


def parts(requests: Sequence[JudgeRequest], batch_size: int) -> list[tuple[int, int]]:
    """``[(start, end)]`` slices of ``requests``: each ends at an item boundary that is a
    multiple of ``batch_size`` (or at the end)."""
    bs = max(1, batch_size)
    out, start = [], 0
    for i in range(1, len(requests) + 1):
        boundary = i == len(requests) or requests[i].item.item_id != requests[i - 1].item.item_id
        if boundary and (i % bs == 0 or i == len(requests)):
            out.append((start, i))
            start = i
    return out


def _batch_size(judge: Judge) -> int:
    opts = getattr(judge, "options", None)
    if getattr(opts, "one_at_a_time", False):
        return 1
    bs = getattr(opts, "batch_size", 1)
    return bs if isinstance(bs, int) and bs >= 1 else 1


def judge_in_parts(
    judge: Judge, requests: Sequence[JudgeRequest], folder: Path
) -> list[JudgeRecord]:
    """Every request's record, in order; parts already on disk are reused (module docstring)."""
    identity = judge.identity().to_dict()
    ident_path = folder / "identity.json"
    if ident_path.exists():
        old = json.loads(ident_path.read_text(encoding="utf-8"))
        if old != identity:
            raise PresdepError(
                f"{folder} holds records of another judge identity ({old}); now {identity}. "
                "Fix: use another --out (the model, prompt, parser or seed changed)"
            )
    else:
        atomic_write_text(ident_path, json.dumps(identity, indent=2) + "\n")
    slices = parts(requests, _batch_size(judge))
    records: list[JudgeRecord] = []
    judged = 0
    for k, (a, b) in enumerate(slices):
        path = folder / f"part{k:05d}.jsonl"
        want = [r.key for r in requests[a:b]]
        if path.exists():
            recs = read_records(path)
            if [r.key for r in recs] != want:
                raise PresdepError(
                    f"{path} holds other requests than part {k} of this sweep (the data or the "
                    "placements changed). Fix: use another --out"
                )
        else:
            recs = judge.judge(requests[a:b])
            write_records(path, recs)
            judged += len(recs)
        records.extend(recs)
    log.info(
        "%d requests in %d parts: %d judged now, %d reused from %s",
        len(requests),
        len(slices),
        judged,
        len(requests) - judged,
        folder,
    )
    return records


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
            log.info("noise: %s run %d: %d records, %.1f s", cond.name, rep, len(reqs), secs[-1])
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
