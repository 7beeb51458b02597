"""The study CLI: tasks, their stages, and the appendix map.

    python scripts/study.py task list
    python scripts/study.py task show --task passage-reranking          # jobs and data readiness
    python scripts/study.py task generate --task passage-reranking      # one config per job
    python scripts/study.py stage list --task passage-reranking
    python scripts/study.py stage run --task passage-reranking --stage rerank [--jobs 'dl19--*'] [--dry-run]
    python scripts/study.py appendix list
    python scripts/study.py appendix audit [--strict]                   # readiness, honestly
    python scripts/study.py appendix show tab-reranking-main

A stage runs its command for every job whose data is materialised (others are listed as
blocked), in order, and stops at the first failure unless --keep-going. Exit status: 0 on
success, 2 on bad input, otherwise the failing command's status; 'appendix audit --strict'
exits 1 when an artifact declared runnable is broken.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from presentation_dependence.cli import setup_logging
from presentation_dependence.errors import PresdepError
from presentation_dependence.reproduction.appendix import (
    APPENDIX,
    audit,
    format_audit,
    load_appendix,
)
from presentation_dependence.reproduction.study import (
    format_jobs,
    run_stage,
    stage_commands,
    task_jobs,
)
from presentation_dependence.reproduction.tasks import generate_configs, list_tasks, load_task

log = logging.getLogger("presentation_dependence.scripts.study")


def _task_args(p: argparse.ArgumentParser, jobs: bool = True) -> None:
    p.add_argument("--task", required=True, help="configs/reproduction/tasks/<task>.yaml")
    if jobs:
        p.add_argument(
            "--jobs", action="append", help="glob on job, collection or reranker id (repeatable)"
        )


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("--data-root", default="data")
    sub = p.add_subparsers(dest="group", required=True)

    task = sub.add_parser("task", help="tasks and their jobs").add_subparsers(
        dest="cmd", required=True
    )
    task.add_parser("list", help="the tasks under configs/reproduction/tasks")
    _task_args(task.add_parser("show", help="a task's jobs with their data readiness"))
    _task_args(task.add_parser("generate", help="write one experiment config per job"))

    stage = sub.add_parser("stage", help="a task's stages").add_subparsers(
        dest="cmd", required=True
    )
    _task_args(stage.add_parser("list", help="the stages of a task"), jobs=False)
    for name, help_ in (("commands", "print a stage's commands"), ("run", "run a stage")):
        sp = stage.add_parser(name, help=help_)
        _task_args(sp)
        sp.add_argument("--stage", required=True)
        if name == "run":
            sp.add_argument("--dry-run", action="store_true", help="log the commands only")
            sp.add_argument("--keep-going", action="store_true", help="continue after a failure")

    app = sub.add_parser("appendix", help="the appendix map").add_subparsers(
        dest="cmd", required=True
    )
    for name in ("list", "audit", "show"):
        sp = app.add_parser(name)
        sp.add_argument("--appendix", default=str(APPENDIX))
        if name == "audit":
            sp.add_argument(
                "--strict", action="store_true", help="exit 1 if a runnable one is broken"
            )
        if name == "show":
            sp.add_argument("artifact")
    return p


def _task(args: argparse.Namespace) -> int:
    if args.cmd == "list":
        for name in list_tasks():
            t = load_task(name)
            print(f"{name}  (population {t.population}): {t.description}")
        return 0
    task = load_task(args.task)
    jobs = task_jobs(task, patterns=args.jobs)
    if args.cmd == "show":
        sys.stdout.write(format_jobs(task, jobs, Path(args.data_root)))
        return 0
    written = generate_configs(jobs, data_root=args.data_root)
    print(f"wrote {len(written)} configs under {task.folder / 'configs'}")
    return 0


def _stage(args: argparse.Namespace) -> int:
    task = load_task(args.task)
    if args.cmd == "list":
        for s in task.stages:
            print(
                f"{s.id:<10} {'per job' if s.per_job else 'once':<8} {s.help}\n{'':<20}{s.command}"
            )
        return 0
    jobs = task_jobs(task, patterns=args.jobs)
    cmds = stage_commands(task, task.stage(args.stage), jobs, data_root=args.data_root)
    if args.cmd == "commands":
        for c in cmds:
            print(f"# blocked: {c.blocked}\n# {c.shell()}" if c.blocked else c.shell())
        return 0
    return run_stage(cmds, dry_run=args.dry_run, keep_going=args.keep_going)


def _appendix(args: argparse.Namespace) -> int:
    appendix = load_appendix(args.appendix)
    if args.cmd == "list":
        for a in appendix.artifacts:
            flag = "runnable" if a.runnable else "not runnable"
            print(f"{a.id:<24} {a.kind:<7} {flag:<13} {a.title}")
        return 0
    if args.cmd == "show":
        a = appendix.get(args.artifact)
        for key, value in a.__dict__.items():
            print(f"{key}: {value}")
        return 0
    rows = audit(appendix)
    sys.stdout.write(format_audit(rows))
    return 1 if args.strict and any(r.status == "broken" for r in rows) else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    setup_logging(args.verbose)
    try:
        if args.group == "task":
            return _task(args)
        if args.group == "stage":
            return _stage(args)
        return _appendix(args)
    except PresdepError as e:
        log.error("%s", e)
        return 2


if __name__ == "__main__":
    sys.exit(main())
