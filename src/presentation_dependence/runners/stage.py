"""One stage runner: the resumable loop of ``run``, ``psi``, ``qa``, the silver labels and the
judge's sweeps and reruns.

A *stage* computes one *unit*'s record and writes its file (the resume unit): a query for the
per-query stages (:class:`Stage`, run through :func:`run_stage`), or any unit a
:class:`UnitStage` names by a key (:func:`run_units`; the judge's parts of whole items).
:func:`run_units` owns the rest: sharding (``shard=(k, n)``: the units at positions
``i % n == k``; shards fill one folder and the merge is the ordinary resume); resume with a
content check (a file is reused only when the stage finds nothing changed: for a query, this
query id, these candidate ids and texts, this :func:`config_fingerprint` and what the stage
checks itself, e.g. PSI's presentations; else it is refused, naming the unit, or with
``recompute_changed`` recomputed with a warning and the stage's stale outputs removed; a file
written before a fingerprint existed is compared on what it stored); atomic writes under a
per-unit claim (processes sharing a folder compute each unit once); each computed unit's wall
and CPU seconds (:mod:`.costs`, ``unit_costs.jsonl``); provenance; progress (:mod:`.progress`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from presentation_dependence.errors import PresdepError
from presentation_dependence.provenance import collect_provenance, cpu_info, cpu_label
from presentation_dependence.records import RerankRequest
from presentation_dependence.runners.costs import UnitClock, record_unit_cost, units_by_processor
from presentation_dependence.runners.fingerprint import (
    FINGERPRINT_KEY,
    request_fingerprint,
    reuse_problem,
)
from presentation_dependence.runners.progress import progress
from presentation_dependence.runners.run_folder import RunFolder
from presentation_dependence.secrets import redact_obj

__all__ = ["CONFIG_KEY", "Stage", "StageSummary", "StoredInput", "config_fingerprint", "run_stage"]
__all__ += ["UnitStage", "parse_shard", "run_units", "shard_requests"]

log = logging.getLogger(__name__)
R = TypeVar("R")
U = TypeVar("U")
U_contra = TypeVar("U_contra", contravariant=True)
S = TypeVar("S")  # what a unit's stored file says it was computed from
CONFIG_KEY = "config_sha256"


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``"k/n"`` (0 <= k < n) -> ``(k, n)``; ``None`` -> ``None``."""
    if text is None:
        return None
    try:
        k_s, n_s = text.split("/")
        k, n = int(k_s), int(n_s)
    except ValueError:
        raise PresdepError(f"--shard {text!r}: expected k/n with integers, e.g. 0/4") from None
    if not (n >= 1 and 0 <= k < n):
        raise PresdepError(f"--shard {text!r}: need n >= 1 and 0 <= k < n")
    return k, n


def shard_requests(units: Sequence[U], shard: tuple[int, int] | None) -> list[U]:
    """The units at 0-based positions ``i`` with ``i % n == k`` (all when ``shard`` is None)."""
    return [r for i, r in enumerate(units) if shard is None or i % shard[1] == shard[0]]


def _set_fields(obj: Any) -> Any:
    """A config value as plain data, dataclass fields at their default left out (so that an
    option added later, at a default that keeps the old behaviour, changes no fingerprint)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = {f.name: f for f in dataclasses.fields(obj)}
        default = {
            k: f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
            for k, f in fields.items()
        }
        return {k: _set_fields(getattr(obj, k)) for k in fields if getattr(obj, k) != default[k]}
    if isinstance(obj, Mapping):
        return {str(k): _set_fields(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_set_fields(v) for v in obj]
    return obj


def config_fingerprint(blocks: Mapping[str, Any]) -> str:
    """sha256 of the config ``blocks`` a stage's per-query result depends on (dataclasses or
    plain data; fields at their default left out, secrets redacted)."""
    plain = redact_obj(_set_fields(blocks))
    blob = json.dumps(plain, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class StoredInput:
    """What a per-query file says it was computed from."""

    docids: list[str]
    request_sha256: str | None
    config_sha256: str | None
    query_text: str | None = None
    texts: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # stage-specific (PSI's perms)


class Stage(Protocol[R]):
    """One per-query computation: ``compute`` one query, ``write`` / ``read_input`` its file."""

    name: str  # "run", "psi", "qa": the phase in provenance and the claim prefix
    unit: str  # "query", "question"
    config_sha256: str  # config_fingerprint of the blocks the result depends on

    def path(self, qid: str) -> Path: ...
    def read_input(self, path: Path) -> StoredInput: ...
    def stage_problem(self, req: RerankRequest, stored: StoredInput) -> str | None: ...
    def compute(self, req: RerankRequest) -> R: ...
    def write(self, path: Path, record: R, fingerprints: Mapping[str, str]) -> None: ...
    def describe(self) -> dict[str, Any]: ...


class UnitStage(Protocol[U_contra, S, R]):
    """One computation per unit of any kind: ``key`` names a unit (claim; file ``path(key)``);
    ``read`` a stored file (unreadable: OSError, ValueError, KeyError or TypeError), ``problem``
    why it cannot be reused for the unit (None: it can); ``fingerprints`` are written with a
    record; ``fix`` ends the error that refuses changed units."""

    @property
    def name(self) -> str: ...
    @property
    def unit(self) -> str: ...
    @property
    def fix(self) -> str: ...
    def key(self, unit: U_contra) -> str: ...
    def path(self, key: str) -> Path: ...
    def read(self, path: Path) -> S: ...
    def problem(self, unit: U_contra, stored: S) -> str | None: ...
    def fingerprints(self, unit: U_contra) -> Mapping[str, Any]: ...
    def compute(self, unit: U_contra) -> R: ...
    def write(self, path: Path, record: R, fingerprints: Mapping[str, Any]) -> None: ...
    def describe(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class StageSummary:
    num_queries: int  # units
    computed: int
    reused: int
    complete: bool  # every unit has its file


class _QueryUnits(Generic[R]):
    """A per-query :class:`Stage` as a :class:`UnitStage` of requests keyed by query id."""

    fix = "rerun with --recompute-changed to recompute exactly those, or use a new --run-dir"

    def __init__(self, stage: Stage[R]) -> None:
        self.stage, self.name, self.unit = stage, stage.name, stage.unit
        self.path, self.read, self.compute = stage.path, stage.read_input, stage.compute
        self.write, self.describe = stage.write, stage.describe

    def key(self, req: RerankRequest) -> str:
        return req.query.qid

    def problem(self, req: RerankRequest, stored: StoredInput) -> str | None:
        problem = reuse_problem(
            req,
            stored.docids,
            stored.request_sha256,
            query_text=stored.query_text,
            texts=stored.texts,
        )
        if problem is None and stored.config_sha256 not in (None, self.stage.config_sha256):
            problem = "it was computed with another config"
        return problem or self.stage.stage_problem(req, stored)

    def fingerprints(self, req: RerankRequest) -> dict[str, str]:
        return {FINGERPRINT_KEY: request_fingerprint(req), CONFIG_KEY: self.stage.config_sha256}


@dataclass
class _Plan(Generic[U, S, R]):
    stage: UnitStage[U, S, R]
    folder: RunFolder

    def problem(self, unit: U) -> str | None:
        """Why the stored file of ``unit`` cannot be reused (None: it can)."""
        path = self.stage.path(self.stage.key(unit))
        try:
            stored = self.stage.read(path)
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise PresdepError(
                f"{path} is unreadable ({e}); delete it and rerun to recompute that "
                f"{self.stage.unit}"
            ) from None
        return self.stage.problem(unit, stored)

    def missing(self, unit: U) -> bool:
        """Whether ``unit`` has no file yet."""
        return not self.stage.path(self.stage.key(unit)).exists()

    def changed(self, units: Sequence[U], recompute: bool) -> dict[str, str]:
        out: dict[str, str] = {}
        for u in units:
            key = self.stage.key(u)
            if self.stage.path(key).exists():
                problem = self.problem(u)
                if problem is not None:
                    out[key] = problem
        if out and not recompute:
            unit = self.stage.unit
            units_word = unit[:-1] + "ies" if unit.endswith("y") else unit + "s"
            where = self.stage.path(next(iter(out))).parent
            listed = "; ".join(f"{unit} {q!r}: {why}" for q, why in list(out.items())[:5])
            raise PresdepError(
                f"{len(out)} finished {units_word} in {where} were computed from other input "
                f"than this config and data give ({listed}). The paths the data resolved to are "
                f"in {self.folder.resolved_config}. Fix: {self.stage.fix}"
            )
        for key, why in out.items():
            log.warning("%s %r changed (%s): recomputing it", self.stage.unit, key, why)
        return out


def run_stage(
    stage: Stage[R],
    folder: RunFolder,
    requests: Sequence[RerankRequest],
    **kw: Any,
) -> StageSummary:
    """:func:`run_units` of a per-query stage over ``requests`` (keyword arguments the same)."""
    return run_units(_QueryUnits(stage), folder, requests, **kw)


def _warn_other_processors(folder: RunFolder, phase: str) -> None:
    """Say so when this process resumes units that another processor computed: where scores are
    bfloat16 the two machines are two judges item by item (docs/studies/judge-study.md measured it)."""
    here = cpu_label(cpu_info())
    other = {cpu: n for cpu, n in units_by_processor(folder.path, phase).items() if cpu != here}
    if other:
        log.warning(
            "%s: %s of its %s units were computed on another processor (%s); this one is %s. "
            "bfloat16 scores (and the last bits of float32 ones) follow the CPU's kernels: "
            "the units each processor computed are counted in unit_costs.jsonl",
            folder.path,
            sum(other.values()),
            phase,
            "; ".join(f"{n} on {cpu}" for cpu, n in other.items()),
            here,
        )


def run_units(
    stage: UnitStage[U, S, R],
    folder: RunFolder,
    units: Sequence[U],
    *,
    desc: str,
    shard: tuple[int, int] | None = None,
    recompute_changed: bool = False,
    argv: Sequence[str] | None = None,
    seeds: Mapping[str, Any] | None = None,
    provenance: Mapping[str, Any] | None = None,
    stale: Sequence[Path] = (),
    wait_for_others: bool = False,
) -> StageSummary:
    """Compute the units (in this shard) whose file is missing or changed; ``stale`` files go
    when any stored unit changed; ``provenance`` adds to the record. ``wait_for_others``: then
    wait for the units that other processes sharing the folder hold, and compute any whose
    process ended without writing it, so that the stage is complete when this returns (what
    comes next, e.g. a rerun that processes share, then starts for both at once)."""
    plan = _Plan(stage, folder)
    mine = shard_requests(units, shard)
    changed = plan.changed(mine, recompute_changed)
    todo = [u for u in mine if stage.key(u) in changed or plan.missing(u)]
    for path in stale if changed else ():
        if path.exists():
            path.unlink()
            log.info("removed the stale %s (rewritten once the run is complete)", path)
    if todo:
        _warn_other_processors(folder, stage.name)
    counts = {
        "total": len(units),
        "this_shard": len(mine),
        "reused": len(mine) - len(todo),
        "to_compute": len(todo),
        "recomputed_changed": len(changed),
    }
    extra = {
        "phase": stage.name,
        "shard": None if shard is None else f"{shard[0]}/{shard[1]}",
        **(provenance or {}),
        **(stage.describe() if todo else {}),
        "queries": counts,
    }
    folder.append_provenance(collect_provenance(argv=argv, seeds=dict(seeds or {}), extra=extra))
    done = len(mine) - len(todo)
    log.info(
        "%s units in this shard: %d, %d done earlier, %d to compute",
        stage.unit,
        len(mine),
        done,
        len(todo),
    )
    computed = _compute(stage, folder, plan, todo, len(units), desc, wait_for_others)
    left = sum(map(plan.missing, units))
    _log_outcome(stage.unit, len(todo) - computed, left)
    return StageSummary(len(units), computed, done, left == 0)


def _log_outcome(unit: str, elsewhere: int, left: int) -> None:
    """Say how many units another process computed and how many are still missing."""
    if elsewhere:
        log.info("%d %ss were computed by another process sharing this folder", elsewhere, unit)
    if left:
        log.info("%d %ss still missing; outputs are written once all are done", left, unit)


def _compute(
    stage: UnitStage[U, S, R],
    folder: RunFolder,
    plan: _Plan[U, S, R],
    todo: Sequence[U],
    total: int,
    desc: str,
    wait_for_others: bool,
) -> int:
    """Compute each unit of ``todo`` under its claim; the number this process computed.
    Another process sharing the folder may hold (or have finished) a unit: with
    ``wait_for_others`` the units it holds and has not written are waited for, and taken over
    when it ends without writing them."""

    def attempt(u: U, *, wait: bool) -> bool:
        """Compute ``u`` under its claim; False when another process holds or wrote it."""
        key = stage.key(u)
        path = stage.path(key)
        with folder.claim(f"{stage.name}:{key}", wait=wait) as held:
            if not held or (path.exists() and plan.problem(u) is None):
                return False
            clock = UnitClock()
            stage.write(path, stage.compute(u), stage.fingerprints(u))
            record_unit_cost(folder.path, stage.name, key, total, *clock.elapsed())
            return True

    computed = 0
    held_elsewhere: list[U] = []
    for u in progress(todo, desc, stage.unit):
        if attempt(u, wait=False):
            computed += 1
        elif wait_for_others and not stage.path(stage.key(u)).exists():  # held, unwritten
            held_elsewhere.append(u)
    if held_elsewhere:
        log.info(
            "waiting for %d %ss that another process sharing this folder computes",
            len(held_elsewhere),
            stage.unit,
        )
        computed += sum(attempt(u, wait=True) for u in held_elsewhere)
    return computed
