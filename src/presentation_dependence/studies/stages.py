"""The study CLI's logic: tasks (list, show, generate) and stages (list, commands, run).

``scripts/study.py`` parses arguments and calls these; the appendix subcommands live in
:mod:`presentation_dependence.reproduction.appendix`.

A stage's commands are expanded from its template for every job (``per_job``) or once. A job
whose input is missing (``data/<data_dir>/fixture.jsonl``, or for a ``data_source: local`` task
the files of the local copy it reads in place) is *blocked*: listed with the reason, never run.
A command is a :class:`~presentation_dependence.studies.plan.Step` (its lane: the stage),
run by the studies' one sequencer, :func:`~presentation_dependence.studies.sequencer.run_steps`:
without a shell (``shlex`` splits a command after each placeholder value is quoted), stopping
at the first failure unless told to keep going.
"""

from __future__ import annotations

import fnmatch
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from presentation_dependence.reproduction.tasks import (
    Job,
    StageSpec,
    Task,
    expand_jobs,
    in_place_copy,
)
from presentation_dependence.studies.plan import Step

__all__ = ["format_jobs", "select_jobs", "stage_commands", "task_jobs"]


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


def _blocked(job: Job, root: Path, data_root: Path) -> str | None:
    if job.task.data_source == "local":
        local = in_place_copy(job.collection)
        if local.exists(root):
            return None
        files = ", ".join(local.files.values()) or "the folder"
        return f"data missing: {root / local.path} ({files}), read in place by this task"
    fx = job.fixture(data_root)
    if fx.is_file():
        return None
    return (
        f"data missing: {fx} (python scripts/setup_reproduction_data.py run --task {job.task.task})"
    )


def _expand(template: str, values: dict[str, str]) -> list[str]:
    quoted = {k: shlex.quote(v) for k, v in values.items()}
    quoted["run_dirs"] = values.get("run_dirs", "")  # already a quoted, space-joined list
    try:
        text = template.format(**quoted)
    except KeyError as e:
        raise ValueError(f"unknown placeholder {e} in stage command {template!r}") from None
    argv = shlex.split(text)
    if argv and argv[0] == "python":
        argv[0] = sys.executable  # the interpreter running this study
    return argv


def stage_commands(
    task: Task,
    stage: StageSpec,
    jobs: Sequence[Job],
    *,
    root: str | Path = ".",
    data_root: str | Path = "data",
) -> list[Step]:
    """The commands of ``stage`` for ``jobs`` (see the module doc)."""
    data = Path(root) / data_root
    base = {"task": task.task, "output_root": task.output_root}
    if not stage.per_job:
        done = [j for j in jobs if (Path(root) / j.run_dir / "metrics.json").is_file()]
        base["run_dirs"] = " ".join(shlex.quote(str(j.run_dir)) for j in done)
        blocked = "no job is evaluated yet" if "{run_dirs}" in stage.command and not done else None
        return [Step(stage.id, _expand(stage.command, base), lane=stage.id, blocked=blocked)]
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
        argv, blocked = _expand(stage.command, values), _blocked(j, Path(root), data)
        out.append(Step(j.id, argv, lane=stage.id, blocked=blocked))
    return out


def format_jobs(task: Task, jobs: Sequence[Job], data_root: Path, root: str | Path = ".") -> str:
    """A table of a task's jobs: data readiness, config and run folder."""
    head = ("job", "data", "config", "run folder")
    rows = [head]
    for j in jobs:
        blocked = _blocked(j, Path(root), data_root)
        state = "ready" if blocked is None else "missing"
        rows.append((j.id, state, str(j.config_path), str(j.run_dir)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    n_ready = sum(1 for j in jobs if _blocked(j, Path(root), data_root) is None)
    lines.append(f"\n{task.task}: {len(jobs)} jobs, {n_ready} with data ready")
    return "\n".join(lines) + "\n"


def task_jobs(
    task: Task, root: str | Path = ".", patterns: Sequence[str] | None = None
) -> list[Job]:
    return select_jobs(expand_jobs(task, root=root), patterns)
