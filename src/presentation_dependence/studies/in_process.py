"""Several jobs in one process: rerank, evaluate and PSI, each scorer's model built once.

``presdep study stage run`` runs each job's command as its own process, so each loads its model.
Where scoring is fast (a GPU: the 135M readout scores about 240 presentations a second there,
docs/BENCHMARKS.md) and the jobs are many and small (the zero-shot task: 14 collections per
scorer, at most 50 queries each), loading dominates. :func:`run_in_process` runs the three
stages of each job (``presdep run``, its evaluation, ``presdep psi``) in order within one
process, passes every job with the same reranker block the same reranker, and stops between
jobs once a deadline has passed. Each stage resumes per query as it does from the command line,
so a pass that stops early is continued by the next one, in or out of process.

The run folders are those of the commands: the same config (with ``overrides`` applied, e.g.
``reranker.device=cuda``), the same content checks and the same archive.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from presentation_dependence.config import ExperimentConfig, load_experiment_config
from presentation_dependence.errors import PresdepError
from presentation_dependence.rerankers import Reranker, build_reranker
from presentation_dependence.robustness.runner import PSIRunner
from presentation_dependence.runners import EvalManager, ExperimentManager
from presentation_dependence.studies.timing import record_step

__all__ = ["PassJob", "PassOutcome", "StageTiming", "parse_pass_job", "run_in_process"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PassJob:
    """One job of a pass: its name, experiment config and run folder."""

    name: str
    config: Path
    run_dir: Path


@dataclass(frozen=True)
class StageTiming:
    """One stage of one job as it finished: wall seconds and, for ``run``, the queries computed
    (not reused)."""

    job: str
    stage: str  # run | eval | psi
    seconds: float
    computed: int | None


def parse_pass_job(text: str) -> PassJob:
    """``NAME=CONFIG@RUN_DIR`` (a job outside a task, e.g. a student's DL19 run)."""
    name, sep, rest = text.partition("=")
    config, sep2, run_dir = rest.partition("@")
    if not (sep and sep2 and name and config and run_dir):
        raise PresdepError(
            f"--run {text!r}: expected NAME=CONFIG@RUN_DIR, e.g. "
            "oc-sft=configs/experiments/psi-dl19-interleaved.yaml@runs/students/dl19/oc-sft"
        )
    return PassJob(name, Path(config), Path(run_dir))


def _from_config(cfg: ExperimentConfig) -> Reranker:
    return build_reranker(cfg.reranker.reranker_class, cfg.reranker.options)


class _Rerankers:
    """One reranker per distinct reranker block (class and options, overrides applied)."""

    def __init__(self, build: Callable[[ExperimentConfig], Reranker] | None = None) -> None:
        self._built: dict[str, Reranker] = {}
        self._build = build or _from_config

    def __call__(self, cfg: ExperimentConfig) -> Reranker:
        key = json.dumps(cfg.reranker.to_plain(), sort_keys=True, default=str)
        if key not in self._built:
            log.info(
                "pass: building %s (%d built before)", cfg.reranker.reranker_class, len(self._built)
            )
            self._built[key] = self._build(cfg)
        return self._built[key]


def _timed(job: str, stage: str, fn: Callable[[], int | None], timings: Path | None) -> StageTiming:
    t0 = time.perf_counter()
    computed = fn()
    done = StageTiming(job, stage, time.perf_counter() - t0, computed)
    log.info("pass: %s %s in %.1f s", job, stage, done.seconds)
    if timings is not None:  # the studies' one timing record: step "<job> <stage>", lane "pass"
        record_step(timings, f"{job} {stage}", "pass", done.seconds)
    return done


def _stages(
    job: PassJob, cfg: ExperimentConfig, reranker: Reranker, timings: Path | None
) -> list[StageTiming]:
    """``presdep run --eval`` then ``presdep psi`` on ``job``'s folder, with ``reranker``."""

    def run() -> int:
        return ExperimentManager(cfg, job.run_dir, reranker=reranker).run().computed

    def evaluate() -> None:
        EvalManager(job.run_dir).evaluate()

    def psi() -> None:
        if PSIRunner(cfg, job.run_dir, reranker=reranker).run() is None:
            raise PresdepError(f"psi of {job.run_dir} is incomplete after its pass")

    return [
        _timed(job.name, n, fn, timings)
        for n, fn in (("run", run), ("eval", evaluate), ("psi", psi))
    ]


@dataclass(frozen=True)
class PassOutcome:
    """What a pass did: the stages that finished, and the jobs that failed (name, error)."""

    stages: list[StageTiming]
    failed: list[tuple[str, str]]


def run_in_process(
    jobs: Sequence[PassJob],
    *,
    overrides: Sequence[str] = (),
    deadline: float | None = None,
    timings: Path | None = None,
    build: Callable[[ExperimentConfig], Reranker] | None = None,
    keep_going: bool = False,
) -> PassOutcome:
    """Run, evaluate and PSI each of ``jobs`` in order (see the module doc). ``deadline`` is a
    ``time.monotonic()`` value: no job starts after it. A failing job stops the pass, unless
    ``keep_going``: then it is logged and recorded, and the next job starts."""
    rerankers = _Rerankers(build)
    out = PassOutcome([], [])
    for job in jobs:
        if deadline is not None and time.monotonic() > deadline:
            log.warning("pass: deadline passed; %s and the jobs after it are left", job.name)
            break
        try:
            cfg = load_experiment_config(job.config, list(overrides))
            out.stages.extend(_stages(job, cfg, rerankers(cfg), timings))
        except (PresdepError, OSError, ValueError, RuntimeError) as e:
            if not keep_going:
                raise
            log.error("pass: %s failed (%s); going on", job.name, e)
            out.failed.append((job.name, str(e)))
    return out
