"""Run a study's steps in order (:func:`run_steps`, the one sequencer: ``presdep study plan``,
``scripts/train/run_cpu_study.py``, the reproduction stages), and find its scorers' run folders.

A plan is the built-in self-distillation plan (:func:`~.plan.study_plan`) or a YAML plan
(:func:`~.plan.load_plan`, e.g. ``configs/study/content-study.yaml``), optionally one lane of
it. A step whose ``done`` file exists is skipped and every command resumes, so an interrupted
study continues where it stopped; each finished step appends one JSON line (name, lane, seconds,
UTC end) to the study's timing record (:mod:`.timing`), the study table's cost column.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from presentation_dependence.errors import ConfigError
from presentation_dependence.provenance import utc_now
from presentation_dependence.registry import did_you_mean
from presentation_dependence.studies.plan import (
    CHOSEN,
    STUDENT_NAMES,
    Step,
    load_plan,
    study_plan,
)
from presentation_dependence.studies.timing import STEPS, record_step

__all__ = ["SCORER_ORDER", "StudyRun", "run_steps", "run_study", "study_run_dirs", "study_steps"]

log = logging.getLogger(__name__)

# Rows of the study table follow this order; other scorers come after, by name.
SCORER_ORDER = ("off-the-shelf", "bsc", "teacher-e5", *STUDENT_NAMES)


@dataclass(frozen=True)
class StudyRun:
    """What to run: the options of ``presdep study plan``."""

    root: str = "runs/self-distill/study"
    plan: str = ""  # a plan YAML; empty: the built-in self-distillation plan
    lane: str = ""  # only this lane's steps; empty: all
    stop_after: str = ""  # the last step to run (by name); empty: to the end
    timings: str = ""  # steps.jsonl; empty: runs/<plan stem>/steps.jsonl with a plan, else none
    launcher: str = ""  # prefix of the training commands (built-in plan), e.g. accelerate launch
    eval_overrides: tuple[str, ...] = ()  # extra --override of every DL19 run (built-in plan)
    reuse: tuple[str, ...] = ()  # SCORER=RUN_DIR: copy a finished run folder instead of running
    dry_run: bool = False

    @property
    def timings_path(self) -> Path | None:
        if self.timings:
            return Path(self.timings)
        return Path("runs") / Path(self.plan).stem / STEPS if self.plan else None


def study_steps(opts: StudyRun, *, python: str) -> list[Step]:
    """The steps ``opts`` selects, with ``python`` as the interpreter of every command."""
    if opts.plan:
        steps = load_plan(opts.plan, python=python)
    else:
        steps = study_plan(
            python=python,
            root=opts.root,
            launcher=shlex.split(opts.launcher),
            eval_overrides=opts.eval_overrides,
        )
    if opts.lane:
        steps = [s for s in steps if s.lane == opts.lane]
        if not steps:
            lanes = sorted({s.lane for s in study_steps(StudyRun(plan=opts.plan), python=python)})
            raise ConfigError(
                f"the plan has no step in lane {opts.lane!r}; its lanes: {', '.join(lanes)}"
            )
    if opts.stop_after:
        names = [s.name for s in steps]
        if opts.stop_after not in names:
            raise ConfigError(
                f"--stop-after {opts.stop_after!r}: no such step"
                + (f" in lane {opts.lane!r}" if opts.lane else "")
                + f".{did_you_mean(opts.stop_after, names)} The steps: {', '.join(names)}"
            )
        steps = steps[: names.index(opts.stop_after) + 1]
    return steps


def _reuse(opts: StudyRun, out: TextIO) -> None:
    for item in opts.reuse:
        name, _, source = item.partition("=")
        target = Path(opts.root) / "dl19" / name
        if not source or not Path(source, "psi", "psi_metrics.json").is_file():
            raise ConfigError(
                f"--reuse {item}: expected SCORER=RUN_DIR of a finished run with "
                "psi/psi_metrics.json"
            )
        if opts.dry_run:
            out.write(f"cp -r {shlex.quote(source)} {shlex.quote(str(target))}\n")
        elif not target.exists():
            shutil.copytree(source, target)
            log.info("reusing %s as %s", source, target)


# glibc's allocator, pinned for every step (a value set by the user wins). A 128 KiB mmap
# threshold bounds a training process's RSS (1.7-3.7 GB) but sends every activation through
# mmap/munmap: system time exceeds user time and an OC-SFT step runs 2.04x slower (poe bench,
# the allocator part). A fixed 32 MiB threshold (the adaptive threshold's ceiling) is fast but
# lets the heap fragment: an OC-SFT run grew by about 0.15 GB a minute to 8.5 GB at step 200.
# The trainer returns the heap's free pages after every step (readout_trainer.TrimHeap), which
# keeps a run at 0.9-1.4 GB between steps (docs/studies/content-study.md).
ALLOCATOR_ENV = {
    "MALLOC_ARENA_MAX": "2",
    "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
    "MALLOC_TRIM_THRESHOLD_": str(256 << 20),
}


def step_env() -> dict[str, str]:
    """The environment of a step: this process's, with :data:`ALLOCATOR_ENV` where unset."""
    return {**ALLOCATOR_ENV, **os.environ}


WAIT_POLL_S = 30.0  # how often a waiting step looks for its file
WAIT_LOG_S = 600.0  # how often it says it is still waiting


def wait_for_file(path: Path, name: str) -> None:
    """Block until ``path`` exists (another lane writes it), logging now and then."""
    waited = 0.0
    while not path.exists():
        if waited % WAIT_LOG_S < WAIT_POLL_S:
            log.info("%s waits for %s (another lane writes it; %.0f s so far)", name, path, waited)
        time.sleep(WAIT_POLL_S)
        waited += WAIT_POLL_S


def run_steps(
    steps: Sequence[Step],
    *,
    dry_run: bool = False,
    keep_going: bool = False,
    timings: Path | None = None,
    out: TextIO | None = None,
    resolve: Callable[[Step], list[str]] = lambda step: list(step.argv),
) -> int:
    """Run ``steps`` in order: a blocked step is skipped with its reason, one whose ``done`` file
    exists is skipped, each finished one appends its timing to ``timings``. The exit status of
    the first failure (the others still run with ``keep_going``), else 0. ``dry_run`` writes the
    commands to ``out``; ``resolve`` gives a step's argv when it is about to run."""
    status = 0
    for step in steps:
        if step.blocked:
            log.warning("%s: blocked, %s", step.name, step.blocked)
            continue
        if dry_run:
            (sys.stdout if out is None else out).write(shlex.join(step.argv) + "\n")
            continue
        if step.done and Path(step.done).exists():
            log.info("skip %s: %s exists", step.name, step.done)
            continue
        if step.wait_for:
            wait_for_file(Path(step.wait_for), step.name)
        line = shlex.join(argv := resolve(step))
        log.info("step %s (%s UTC): %s", step.name, utc_now(), line)
        t0 = time.perf_counter()
        rc = subprocess.run(argv, check=False, env=step_env()).returncode
        if rc != 0:
            log.error("step %s failed (exit %d): %s", step.name, rc, line)
            status = status or rc
            if not keep_going:
                break
            continue
        seconds = time.perf_counter() - t0
        log.info("step %s done in %.0f s", step.name, seconds)
        if timings is not None:
            record_step(timings, step.name, step.lane, seconds)
    return status


def run_study(opts: StudyRun, *, python: str | None = None, out: TextIO | None = None) -> int:
    """Run (or with ``dry_run`` write to ``out``) the steps in order (:func:`run_steps`)."""
    python = python or ("python" if opts.dry_run else sys.executable)
    steps = study_steps(opts, python=python)
    _reuse(opts, sys.stdout if out is None else out)
    selection = Path(opts.root) / "lambda" / "lambda_selection.json"

    def resolve(step: Step) -> list[str]:  # the λ step chose the adapter by now
        if not step.needs_chosen_adapter:
            return list(step.argv)
        chosen = json.loads(selection.read_text(encoding="utf-8"))["chosen_adapter"]
        placeholder = CHOSEN.format(selection=f"{opts.root}/lambda")
        return [a.replace(placeholder, chosen) for a in step.argv]

    t0 = time.perf_counter()
    rc = run_steps(steps, dry_run=opts.dry_run, timings=opts.timings_path, out=out, resolve=resolve)
    if rc == 0 and not opts.dry_run:
        log.info("study done in %.0f min: %s/table.md", (time.perf_counter() - t0) / 60, opts.root)
    return rc


def study_run_dirs(root: str | Path, order: Sequence[str] = SCORER_ORDER) -> list[Path]:
    """The finished scorer run folders under ``root`` (with ``psi/psi_metrics.json``), in the
    study's scorer order; an error when there is none."""
    folder = Path(root)
    if not folder.is_dir():
        raise ConfigError(f"{folder} is not a folder of scorer run folders")
    found = [p for p in folder.iterdir() if (p / "psi" / "psi_metrics.json").is_file()]
    if not found:
        raise ConfigError(f"no finished run folders under {folder} (none has psi/psi_metrics.json)")
    found.sort(key=lambda p: (order.index(p.name) if p.name in order else len(order), p.name))
    return found
