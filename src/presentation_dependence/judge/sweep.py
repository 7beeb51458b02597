"""The judge-call stage: requests in, records out, resumable sweeps and reruns.

**Parts** (:class:`JudgeStage`, run by :func:`~presentation_dependence.runners.stage.run_units`:
resume, claims, provenance, progress). A run of judge calls is judged in *parts*, each written
atomically to ``<run>/partNNNNN.json`` (its records, the seconds they took, and what they were
computed from: the requests' ``request_sha256``, the judge's identity (model snapshot, prompt,
parser, seed) and ``config_sha256``; a part is reused only when all three match). So a killed run
loses at most the part in flight. A part holds whole items and ends on a multiple of the batch
size of its judge calls, so every ``generate`` call sees exactly the prompts it sees in one
uninterrupted run and the records are byte-identical: with batch size 1 (or a batch size
dividing the placements per item) a part is one item. Parts of the older layout
(``partNNNNN.jsonl`` beside ``identity.json``) are still reused.

**The sweep** (``presdep judge``): :func:`judge_in_parts` into ``records_parts/``.

**Reruns** (``presdep noise``). :func:`run_noise` judges the same requests with nothing changed
under every *condition* (a batch size, or one prompt at a time) ``repeats`` times (run r passes
repeat index r; the transformers judge ignores it, a scripted judge draws its per-call noise from
it), each run in parts under ``noise/<condition>/run<r>/``. Nothing is compared here: the score
stage compares the runs (:mod:`~presentation_dependence.judge.scoring.noise`).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from presentation_dependence.judge.items.records import JudgeRecord, JudgeRequest, read_records
from presentation_dependence.judge.judges.api import merge_pass_stats
from presentation_dependence.judge.judges.base import Judge
from presentation_dependence.runners.fingerprint import FINGERPRINT_KEY
from presentation_dependence.runners.run_folder import RunFolder
from presentation_dependence.runners.stage import CONFIG_KEY, config_fingerprint, run_units

__all__ = ["PARTS_DIR", "JudgeStage", "NoiseCondition", "NoiseResult", "Part", "judge_in_parts"]
__all__ += ["noise_conditions", "noise_run_dir", "parts", "run_noise"]

PARTS_DIR = "records_parts"
IDENTITY_KEY = "judge"  # the judge's identity in a part file
LOAD_KEY = "server_load"  # a served judge's load during the part (timings: not in records)


def _batch_size(judge: Judge, batch_size: int | None, one_at_a_time: bool | None) -> int:
    """The prompts per judge call of ``judge.judge(..., batch_size, one_at_a_time)``."""
    opts = getattr(judge, "options", None)
    one = getattr(opts, "one_at_a_time", False) if one_at_a_time is None else one_at_a_time
    own = getattr(opts, "batch_size", getattr(opts, "concurrency", 1))  # a server's: in flight
    bs = own if batch_size is None else batch_size
    return 1 if one or not isinstance(bs, int) or bs < 1 else bs


def _fingerprint(requests: Sequence[JudgeRequest]) -> str:
    """sha256 of every request's item (id, prompt, responses, labels), placement and repeat."""
    blob = json.dumps(
        [[r.item.to_dict(), list(r.placement), r.repeat] for r in requests],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Part:
    """A resume unit: consecutive requests of one run (``run``: its parts folder, relative to
    the run folder), judged in one call with this batching (None: the judge's own)."""

    run: str
    index: int
    requests: tuple[JudgeRequest, ...]
    batch_size: int | None = None
    one_at_a_time: bool | None = None


def parts(
    judge: Judge,
    run: str,
    requests: Sequence[JudgeRequest],
    batch_size: int | None = None,
    one_at_a_time: bool | None = None,
) -> list[Part]:
    """The parts of one run: each ends at an item boundary that is a multiple of the batch size
    of its judge calls (or at the end)."""
    bs, start = _batch_size(judge, batch_size, one_at_a_time), 0
    out: list[Part] = []
    for i in range(1, len(requests) + 1):
        boundary = i == len(requests) or requests[i].item.item_id != requests[i - 1].item.item_id
        if boundary and (i % bs == 0 or i == len(requests)):
            out.append(Part(run, len(out), tuple(requests[start:i]), batch_size, one_at_a_time))
            start = i
    return out


@dataclass(frozen=True)
class JudgedPart:
    """A part's records, the seconds its judge call took (None: not recorded), the fingerprints
    stored with it (only the identity for a part of the old layout) and, for a judge of a served
    model, the server's load during the call (:class:`~presentation_dependence.judge.judges.api.PassStats`)."""

    records: list[JudgeRecord]
    seconds: float | None
    fingerprints: Mapping[str, Any] = field(default_factory=dict)
    load: Mapping[str, Any] | None = None


class JudgeStage:
    """Judge one :class:`Part`; its file is ``<run folder>/<part.run>/partNNNNN.json``."""

    unit = "part"
    fix = "use another --out (the data, the placements, the judge or its config changed)"

    def __init__(
        self, folder: RunFolder, judge: Judge, config: Mapping[str, Any], name: str = "judge"
    ) -> None:
        self.name = name  # the phase in provenance ("judge", "noise") and the claims' prefix
        self.folder = folder
        self.judge = judge
        self.config = dict(config)  # the config blocks the records depend on
        self.identity = judge.identity().to_dict()

    def key(self, part: Part) -> str:
        return f"{part.run}/part{part.index:05d}"

    def path(self, key: str) -> Path:
        new = self.folder.path / f"{key}.json"
        old = new.with_suffix(".jsonl")  # the layout before parts were unit files
        return old if old.exists() and not new.exists() else new

    def read(self, path: Path) -> JudgedPart:
        if path.suffix == ".jsonl":
            ident = json.loads((path.parent / "identity.json").read_text(encoding="utf-8"))
            return JudgedPart(read_records(path), None, {IDENTITY_KEY: ident})
        d = json.loads(path.read_text(encoding="utf-8"))
        recs = [JudgeRecord.from_dict(r) for r in d.pop("records")]
        load = d.pop(LOAD_KEY, None)
        return JudgedPart(recs, d.pop("seconds"), d, load)

    def problem(self, part: Part, stored: JudgedPart) -> str | None:
        fps = stored.fingerprints
        if [r.key for r in stored.records] != [r.key for r in part.requests]:
            return "it holds other requests (the data or the placements changed)"
        if fps.get(FINGERPRINT_KEY) not in (None, _fingerprint(part.requests)):
            return "the items' prompts or responses differ"
        if fps.get(IDENTITY_KEY) != self.identity:
            return f"it was judged by another judge identity ({fps.get(IDENTITY_KEY)})"
        if fps.get(CONFIG_KEY) not in (None, self.config_sha256(part)):
            return "it was computed with another config"
        return None

    def config_sha256(self, part: Part) -> str:
        return config_fingerprint(
            {**self.config, "batching": [part.batch_size, part.one_at_a_time]}
        )

    def fingerprints(self, part: Part) -> dict[str, Any]:
        return {
            FINGERPRINT_KEY: _fingerprint(part.requests),
            IDENTITY_KEY: self.identity,
            CONFIG_KEY: self.config_sha256(part),
        }

    def compute(self, part: Part) -> JudgedPart:
        t0 = time.perf_counter()
        recs = self.judge.judge(
            list(part.requests), batch_size=part.batch_size, one_at_a_time=part.one_at_a_time
        )
        passes = getattr(self.judge, "passes", None)  # a judge of a served model keeps them
        load = passes[-1].to_dict() if passes else None
        return JudgedPart(recs, time.perf_counter() - t0, load=load)

    def write(self, path: Path, record: JudgedPart, fingerprints: Mapping[str, Any]) -> None:
        out = {**fingerprints, "seconds": record.seconds}
        if record.load is not None:
            out[LOAD_KEY] = dict(record.load)
        out["records"] = [r.to_dict() for r in record.records]
        text = json.dumps(out, ensure_ascii=False) + "\n"
        self.folder.write_text(path.relative_to(self.folder.path), text)

    def describe(self) -> dict[str, Any]:
        return {"judge": self.judge.describe()}

    def stored(self, units: Sequence[Part]) -> JudgedPart:
        """The records of ``units`` (all on disk), in order, their seconds summed and their
        server load merged."""
        got = [self.read(self.path(self.key(u))) for u in units]
        secs = [g.seconds for g in got]
        total = None if None in secs else sum(s for s in secs if s is not None)
        load = merge_pass_stats([g.load for g in got])
        return JudgedPart([r for g in got for r in g.records], total, load=load)


def judge_in_parts(
    judge: Judge,
    requests: Sequence[JudgeRequest],
    folder: RunFolder,
    *,
    config: Mapping[str, Any] | None = None,
    **run_kw: Any,
) -> list[JudgeRecord] | None:
    """Every request's record, in order, judged part by part into ``records_parts/`` (module
    docstring); None while parts that another process sharing the folder judges are missing.
    ``config``: the config blocks the records depend on; ``run_kw`` go to ``run_units``."""
    stage = JudgeStage(folder, judge, config or {})
    units = parts(judge, PARTS_DIR, requests)
    done = run_units(stage, folder, units, desc="judge", **run_kw).complete
    return stage.stored(units).records if done else None


def noise_run_dir(condition: str, repeat: int) -> str:
    """``noise/<condition without '='>/run<r>``: the run's parts folder (``.jsonl``: its records)."""
    return f"noise/{condition.replace('=', '')}/run{repeat}"


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
    """Every run's records, the wall time of each run and, for a judge of a served model, the
    server's load during each run; by condition, in the order the conditions were given."""

    runs: dict[str, list[list[JudgeRecord]]] = field(default_factory=dict)
    seconds: dict[str, list[float]] = field(default_factory=dict)
    load: dict[str, list[Mapping[str, Any] | None]] = field(default_factory=dict)


def noise_conditions(
    batch_sizes: Sequence[int | None], one_at_a_time: bool
) -> list[NoiseCondition]:
    """One condition per batch size, then one at a time if asked; refuses none and duplicates."""
    conditions = [NoiseCondition(b) for b in batch_sizes]
    if one_at_a_time:
        conditions.append(NoiseCondition(None, True))
    if not conditions:
        raise ValueError("no condition to run: give a batch size or one_at_a_time")
    if len({c.name for c in conditions}) != len(conditions):
        raise ValueError(f"duplicate conditions: {[c.name for c in conditions]}")
    return conditions


def _check_reference(base: Sequence[JudgeRequest], reference: Sequence[JudgeRecord]) -> None:
    """Refuse reference records that do not cover exactly the (item, placement) pairs of ``base``."""
    want = {(r.item.item_id, r.placement) for r in base}
    have = {(r.item_id, r.placement) for r in reference}
    if want != have or len(reference) != len(base):
        raise ValueError(
            "the reference records do not cover exactly these requests "
            f"({len(want ^ have)} (item, placement) pairs differ)"
        )


def _plan(
    judge: Judge,
    base: Sequence[JudgeRequest],
    conditions: Sequence[NoiseCondition],
    repeats: int,
    with_reference: bool,
) -> dict[tuple[str, int], list[Part]]:
    """The parts of every (condition, run) to judge: run r passes repeat index r; run 0 of the
    first condition is left out when reference records stand in for it."""
    planned: dict[tuple[str, int], list[Part]] = {}
    for ci, cond in enumerate(conditions):
        for rep in range(repeats):
            if not (ci == 0 and rep == 0 and with_reference):
                reqs = [replace(r, repeat=rep) for r in base]
                run = noise_run_dir(cond.name, rep)
                planned[cond.name, rep] = parts(
                    judge, run, reqs, cond.batch_size, cond.one_at_a_time
                )
    return planned


def _collect(
    stage: JudgeStage,
    conditions: Sequence[NoiseCondition],
    planned: Mapping[tuple[str, int], Sequence[Part]],
    repeats: int,
    reference: list[JudgeRecord],
) -> NoiseResult:
    """Every run's records, seconds and load from its stored parts (or the reference records)."""
    result = NoiseResult()
    for cond in conditions:
        got = [
            stage.stored(ps)
            if (ps := planned.get((cond.name, rep)))
            else JudgedPart(reference, None)
            for rep in range(repeats)
        ]
        result.runs[cond.name] = [g.records for g in got]
        result.seconds[cond.name] = [float("nan") if g.seconds is None else g.seconds for g in got]
        result.load[cond.name] = [g.load for g in got]
    return result


def run_noise(
    judge: Judge,
    requests: Sequence[JudgeRequest],
    folder: RunFolder,
    *,
    repeats: int = 2,
    batch_sizes: Sequence[int | None] = (None,),
    one_at_a_time: bool = False,
    reference: Sequence[JudgeRecord] | None = None,
    config: Mapping[str, Any] | None = None,
    **run_kw: Any,
) -> NoiseResult | None:
    """Judge ``requests`` ``repeats`` times under each batch size (and one at a time), each run
    in parts under :func:`noise_run_dir` (resumable); None while parts that another process
    sharing the folder judges are missing. ``config`` and ``run_kw``: as for
    :func:`judge_in_parts`. The score stage compares the runs
    (:func:`~presentation_dependence.judge.scoring.noise.rerun_comparisons`).

    ``reference``: records of an earlier run of exactly these requests, used as run 0 of the
    first condition instead of judging again (e.g. the placement sweep itself).
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    conditions = noise_conditions(batch_sizes, one_at_a_time)
    base = [replace(r, repeat=0) for r in requests]
    if reference is not None:
        _check_reference(base, reference)
    planned = _plan(judge, base, conditions, repeats, reference is not None)
    stage = JudgeStage(folder, judge, config or {}, "noise")
    units = [u for us in planned.values() for u in us]
    if not run_units(stage, folder, units, desc="noise", **run_kw).complete:
        return None
    return _collect(stage, conditions, planned, repeats, list(reference or ()))
