"""The study CLI's logic: tasks (list, show, generate) and stages (list, commands, run).

``scripts/study.py`` parses arguments and calls these; the appendix subcommands live in
:mod:`presentation_dependence.reproduction.appendix`.

A stage's commands are expanded from its template for every job (``per_job``) or once. A job
whose ``data/<data_dir>/fixture.jsonl`` is missing is *blocked*: listed with the reason, never
run. ``run_stage`` runs commands one after another without a shell (``shlex`` splits them after
each placeholder value is quoted) and stops at the first failure unless told to keep going.
"""

from __future__ import annotations

import fnmatch
import logging
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from presentation_dependence.reproduction.tasks import Job, StageSpec, Task, expand_jobs

__all__ = ["StageCommand", "format_jobs", "run_stage", "select_jobs", "stage_commands"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StageCommand:
    """One command of a stage: for a job (or once), its argv, and why it is blocked if it is."""

    stage: str
    job: str | None
    argv: tuple[str, ...]
    blocked: str | None = None

    def shell(self) -> str:
        return shlex.join(self.argv)


def select_jobs(jobs: Sequence[Job], patterns: Sequence[str] | None) -> list[Job]:
    """Jobs whose id, collection id or reranker id matches any glob in ``patterns``."""
    if not patterns:
        return list(jobs)
    return [
        j
        for j in jobs
        if any(
            fnmatch.fnmatchcase(name, p)
            for p in patterns
            for name in (j.id, j.collection.id, j.reranker.id)
        )
    ]


def _blocked(job: Job, data_root: Path) -> str | None:
    fx = job.fixture(data_root)
    if fx.is_file():
        return None
    return (
        f"data missing: {fx} (python scripts/setup_reproduction_data.py run --task {job.task.task})"
    )


def _expand(template: str, values: dict[str, str]) -> tuple[str, ...]:
    quoted = {k: shlex.quote(v) for k, v in values.items()}
    quoted["run_dirs"] = values.get("run_dirs", "")  # already a quoted, space-joined list
    try:
        text = template.format(**quoted)
    except KeyError as e:
        raise ValueError(f"unknown placeholder {e} in stage command {template!r}") from None
    argv = tuple(shlex.split(text))
    if argv and argv[0] == "python":
        argv = (sys.executable, *argv[1:])  # the interpreter running this study
    return argv


def stage_commands(
    task: Task,
    stage: StageSpec,
    jobs: Sequence[Job],
    *,
    root: str | Path = ".",
    data_root: str | Path = "data",
) -> list[StageCommand]:
    """The commands of ``stage`` for ``jobs`` (see the module doc)."""
    data = Path(root) / data_root
    base = {"task": task.task, "output_root": task.output_root}
    if not stage.per_job:
        done = [j for j in jobs if (Path(root) / j.run_dir / "metrics.json").is_file()]
        base["run_dirs"] = " ".join(shlex.quote(str(j.run_dir)) for j in done)
        blocked = "no job is evaluated yet" if "{run_dirs}" in stage.command and not done else None
        return [StageCommand(stage.id, None, _expand(stage.command, base), blocked)]
    out = []
    for j in jobs:
        values = {
            **base,
            "job": j.id,
            "config": str(j.config_path),
            "run_dir": str(j.run_dir),
            "collection": j.collection.id,
            "reranker": j.reranker.id,
        }
        out.append(StageCommand(stage.id, j.id, _expand(stage.command, values), _blocked(j, data)))
    return out


def run_stage(
    commands: Sequence[StageCommand],
    *,
    cwd: str | Path = ".",
    dry_run: bool = False,
    keep_going: bool = False,
) -> int:
    """Run the unblocked commands in order; the exit code is that of the first failure (or 0)."""
    status = 0
    for cmd in commands:
        label = cmd.job or cmd.stage
        if cmd.blocked:
            log.warning("%s: blocked, %s", label, cmd.blocked)
            continue
        log.info("%s: %s", label, cmd.shell())
        if dry_run:
            continue
        rc = subprocess.run(list(cmd.argv), cwd=cwd, check=False).returncode
        if rc != 0:
            log.error("%s: exited with %d", label, rc)
            status = status or rc
            if not keep_going:
                return status
    return status


def format_jobs(task: Task, jobs: Sequence[Job], data_root: Path) -> str:
    """A table of a task's jobs: data readiness, config and run folder."""
    head = ("job", "data", "config", "run folder")
    rows = [head]
    for j in jobs:
        blocked = _blocked(j, data_root)
        state = "ready" if blocked is None else "missing"
        rows.append((j.id, state, str(j.config_path), str(j.run_dir)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    n_ready = sum(1 for j in jobs if _blocked(j, data_root) is None)
    lines.append(f"\n{task.task}: {len(jobs)} jobs, {n_ready} with data ready")
    return "\n".join(lines) + "\n"


def task_jobs(
    task: Task, root: str | Path = ".", patterns: Sequence[str] | None = None
) -> list[Job]:
    return select_jobs(expand_jobs(task, root=root), patterns)
