"""One per-query stage runner: the resumable loop of ``run``, ``psi`` and ``qa``.

A *stage* computes one query's record and writes its per-query file (the resume unit).
:func:`run_stage` owns the rest: sharding (``shard=(k, n)``: the queries at positions
``i % n == k``; shards fill one folder and the merge is the ordinary resume); resume with a
content check (a file is reused only for this query id, these candidate ids and texts, this
:func:`config_fingerprint` and what the stage checks itself, e.g. PSI's presentations; else it is
refused, naming the query, or with ``recompute_changed`` recomputed with a warning and the
stage's stale outputs removed; a file written before a fingerprint existed is compared on what
it stored); atomic writes under a per-query claim (processes sharing a folder compute each query
once); provenance; progress (:mod:`.progress`).
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

import numpy as np

from presentation_dependence.config import ExperimentConfig
from presentation_dependence.errors import PresdepError
from presentation_dependence.presentations import (
    NULL,
    PerturbationContext,
    draw_presentations,
    same_order,
)
from presentation_dependence.provenance import collect_provenance
from presentation_dependence.records import RerankRequest
from presentation_dependence.rerankers import Reranker, build_reranker
from presentation_dependence.runners.fingerprint import (
    FINGERPRINT_KEY,
    request_fingerprint,
    reuse_problem,
)
from presentation_dependence.runners.progress import progress
from presentation_dependence.runners.run_folder import RunFolder
from presentation_dependence.secrets import redact_obj

__all__ = ["CONFIG_KEY", "Stage", "StageSummary", "StoredInput", "config_fingerprint", "run_stage"]
__all__ += ["StageCommand", "parse_shard", "shard_requests"]

log = logging.getLogger(__name__)
R = TypeVar("R")
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


def shard_requests(
    requests: Sequence[RerankRequest], shard: tuple[int, int] | None
) -> list[RerankRequest]:
    """The requests at 0-based positions ``i`` with ``i % n == k`` (all when ``shard`` is None)."""
    return [r for i, r in enumerate(requests) if shard is None or i % shard[1] == shard[0]]


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


@dataclass(frozen=True)
class StageSummary:
    num_queries: int
    computed: int
    reused: int
    complete: bool  # every query of the data set has its file


@dataclass
class _Plan(Generic[R]):
    stage: Stage[R]
    folder: RunFolder

    def problem(self, req: RerankRequest) -> str | None:
        """Why the stored file of ``req`` cannot be reused (None: it can)."""
        path = self.stage.path(req.query.qid)
        try:
            stored = self.stage.read_input(path)
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise PresdepError(
                f"{path} is unreadable ({e}); delete it and rerun to recompute that "
                f"{self.stage.unit}"
            ) from None
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

    def changed(self, requests: Sequence[RerankRequest], recompute: bool) -> dict[str, str]:
        out: dict[str, str] = {}
        for req in requests:
            if self.stage.path(req.query.qid).exists():
                problem = self.problem(req)
                if problem is not None:
                    out[req.query.qid] = problem
        if out and not recompute:
            unit = self.stage.unit
            units = unit[:-1] + "ies" if unit.endswith("y") else unit + "s"
            where = self.stage.path(next(iter(out))).parent
            listed = "; ".join(f"{unit} {q!r}: {why}" for q, why in list(out.items())[:5])
            raise PresdepError(
                f"{len(out)} finished {units} in {where} were computed from other input than "
                f"this config and data give ({listed}). The paths the data resolved to are in "
                f"{self.folder.resolved_config}. Fix: rerun with --recompute-changed to "
                "recompute exactly those, or use a new --run-dir"
            )
        for qid, why in out.items():
            log.warning("%s %r changed (%s): recomputing it", self.stage.unit, qid, why)
        return out


def run_stage(
    stage: Stage[R],
    folder: RunFolder,
    requests: Sequence[RerankRequest],
    *,
    desc: str,
    shard: tuple[int, int] | None = None,
    recompute_changed: bool = False,
    argv: Sequence[str] | None = None,
    seeds: Mapping[str, Any] | None = None,
    provenance: Mapping[str, Any] | None = None,
    stale: Sequence[Path] = (),
) -> StageSummary:
    """Compute the queries of ``requests`` (in this shard) whose file is missing or changed;
    ``stale`` files go when any stored query changed; ``provenance`` adds to the record."""
    plan = _Plan(stage, folder)
    mine = shard_requests(requests, shard)
    changed = plan.changed(mine, recompute_changed)
    todo = [r for r in mine if r.query.qid in changed or not stage.path(r.query.qid).exists()]
    for path in stale if changed else ():
        if path.exists():
            path.unlink()
            log.info("removed the stale %s (rewritten once the run is complete)", path)
    folder.append_provenance(
        collect_provenance(
            argv=argv,
            seeds=dict(seeds or {}),
            extra={
                "phase": stage.name,
                "shard": None if shard is None else f"{shard[0]}/{shard[1]}",
                **(provenance or {}),
                **(stage.describe() if todo else {}),
                "queries": {
                    "total": len(requests),
                    "this_shard": len(mine),
                    "reused": len(mine) - len(todo),
                    "to_compute": len(todo),
                    "recomputed_changed": len(changed),
                },
            },
        )
    )
    done = len(mine) - len(todo)
    log.info(
        "%d %ss in this shard: %d done earlier, %d to compute",
        len(mine),
        stage.unit,
        done,
        len(todo),
    )
    computed = elsewhere = 0
    for req in progress(todo, desc, stage.unit):
        qid = req.query.qid
        path = stage.path(qid)
        # Another process sharing the folder may hold (or have finished) the query.
        with folder.claim(f"{stage.name}:{qid}") as held:
            if not held or (path.exists() and plan.problem(req) is None):
                elsewhere += 1
                continue
            fingerprints = {
                FINGERPRINT_KEY: request_fingerprint(req),
                CONFIG_KEY: stage.config_sha256,
            }
            stage.write(path, stage.compute(req), fingerprints)
            computed += 1
    if elsewhere:
        log.info(
            "%d %ss were computed by another process sharing this folder", elsewhere, stage.unit
        )
    missing = sum(1 for r in requests if not stage.path(r.query.qid).exists())
    if missing:
        log.info("%d %ss still missing; outputs are written once all are done", missing, stage.unit)
    return StageSummary(len(requests), computed, done, missing == 0)


class StageCommand:
    """What the ``run``, ``psi`` and ``qa`` commands share: the config, the run folder, the
    shard, the command line, ``recompute_changed``, the reranker (built on first use) and the
    presentations of the ``robustness`` block."""

    def __init__(
        self,
        cfg: ExperimentConfig,
        run_dir: str | Path,
        *,
        shard: tuple[int, int] | None = None,
        argv: Sequence[str] | None = None,
        reranker: Reranker | None = None,
        recompute_changed: bool = False,
    ) -> None:
        self.cfg = cfg
        self.folder = RunFolder(run_dir)
        self.shard = shard
        self.argv = argv
        self._reranker = reranker
        self.recompute_changed = recompute_changed
        rob = cfg.robustness  # the seed of the presentations below
        self.presentation_seed = rob.seed if rob.seed is not None else cfg.seed

    @property
    def reranker(self) -> Reranker:
        if self._reranker is None:
            rc = self.cfg.reranker
            self._reranker = build_reranker(rc.reranker_class, rc.options)
        return self._reranker

    def presentations(self, req: RerankRequest, grades: np.ndarray) -> dict[str, np.ndarray]:
        """What ``psi`` and ``qa`` score for ``req`` (``grades``: each candidate's qrels grade):
        every perturbation of the ``robustness`` block, and the same-order null."""
        rob = self.cfg.robustness
        b = getattr(self.cfg.reranker.options, "chunk_size", None)
        ctx = PerturbationContext(grades, rob.relevant_grade, b if isinstance(b, int) else None)
        n, m, seed = len(req.candidates), rob.num_presentations, self.presentation_seed
        out = {k: draw_presentations(k, n, m, seed, req.query.qid, ctx) for k in rob.perturbations}
        out[NULL] = same_order(n, rob.null_repeats or m)
        return out
