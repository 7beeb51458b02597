"""``presdep study task | stage | appendix``: the reproduction study (= ``scripts/study.py``).

presdep study task list
presdep study task show --task passage-reranking          # jobs and data readiness
presdep study task generate --task passage-reranking      # one config per job
presdep study stage list --task passage-reranking
presdep study stage run --task passage-reranking --stage rerank [--jobs 'dl19--*'] [--dry-run]
presdep study stage pass --task zero-shot-students --jobs '*--off-the-shelf' --override reranker.device=cuda
presdep study appendix list | audit [--strict] | show ARTIFACT

A stage runs its command for every job whose data is materialised (others are listed as
blocked), in order, and stops at the first failure unless --keep-going; its exit status is the
failing command's. ``appendix audit --strict`` exits 1 when an artifact declared runnable is
broken. ``--data-root`` belongs to ``presdep study`` (before the group).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from presentation_dependence.cli.common import EXIT_OK, Subparsers, command

__all__ = ["register"]


def _task_args(p: argparse.ArgumentParser, jobs: bool = True) -> None:
    p.add_argument("--task", required=True, help="configs/reproduction/tasks/<task>.yaml")
    if jobs:
        p.add_argument(
            "--jobs", action="append", help="glob on job, collection or reranker id (repeatable)"
        )


def _group(actions: Subparsers, name: str, help: str) -> Subparsers:
    return actions.add_parser(name, help=help).add_subparsers(
        dest=f"{name}_action", required=True, help=f"presdep study {name} ACTION -h for its flags"
    )


def register(actions: Subparsers) -> None:
    task = _group(actions, "task", "reproduction tasks and their jobs")
    command(task, "list", _task_list, "the tasks under configs/reproduction/tasks")
    _task_args(command(task, "show", _task_show, "a task's jobs with their data readiness"))
    _task_args(command(task, "generate", _task_generate, "write one experiment config per job"))

    stage = _group(actions, "stage", "a reproduction task's stages")
    _task_args(command(stage, "list", _stage_list, "the stages of a task"), jobs=False)
    for name, help_ in (("commands", "print a stage's commands"), ("run", "run a stage")):
        sp = command(stage, name, _stage_run, help_)
        _task_args(sp)
        sp.add_argument("--stage", required=True, help="the stage id (presdep study stage list)")
        if name == "run":
            sp.add_argument("--dry-run", action="store_true", help="log the commands only")
            sp.add_argument("--keep-going", action="store_true", help="continue after a failure")

    _register_pass(stage)

    app = _group(actions, "appendix", "the appendix map: artifacts and their readiness")
    for name, help_ in (
        ("list", "the artifacts"),
        ("audit", "each artifact's readiness, honestly"),
        ("show", "one artifact's entry"),
    ):
        sp = command(app, name, _appendix, help_)
        sp.add_argument(
            "--appendix",
            default=None,
            help="the appendix map (default configs/reproduction/appendix.yaml)",
        )
        if name == "audit":
            sp.add_argument(
                "--strict", action="store_true", help="exit 1 if a runnable one is broken"
            )
        if name == "show":
            sp.add_argument("artifact", help="the artifact id (presdep study appendix list)")


def _register_pass(stage: Subparsers) -> None:
    sp = command(
        stage,
        "pass",
        _stage_pass,
        "rerank, evaluate and PSI the jobs in one process, each scorer's model built once",
    )
    _task_args(sp)
    sp.add_argument(
        "--run",
        action="append",
        default=[],
        metavar="NAME=CONFIG@RUN_DIR",
        help="a job outside the task, run after the task's (repeatable)",
    )
    sp.add_argument(
        "--override", action="append", default=[], help="KEY=VALUE for every job's config"
    )
    sp.add_argument("--deadline-s", type=float, help="start no job after this many seconds")
    sp.add_argument("--timings", help="append each stage's seconds here (steps.jsonl)")
    sp.add_argument(
        "--keep-going", action="store_true", help="log a failing job and go on (exit status 1)"
    )


def _task_list(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.reproduction.tasks import list_tasks, load_task

    for name in list_tasks():
        t = load_task(name)
        sys.stdout.write(f"{name}  (population {t.population}): {t.description}\n")
    return EXIT_OK


def _task_show(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.reproduction.tasks import load_task
    from presentation_dependence.studies.stages import format_jobs, task_jobs

    task = load_task(args.task)
    jobs = task_jobs(task, patterns=args.jobs)
    sys.stdout.write(format_jobs(task, jobs, Path(args.data_root)))
    return EXIT_OK


def _task_generate(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.reproduction.tasks import generate_configs, load_task
    from presentation_dependence.studies.stages import task_jobs

    task = load_task(args.task)
    written = generate_configs(task_jobs(task, patterns=args.jobs), data_root=args.data_root)
    sys.stdout.write(f"wrote {len(written)} configs under {task.folder / 'configs'}\n")
    return EXIT_OK


def _stage_list(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.reproduction.tasks import load_task

    for s in load_task(args.task).stages:
        sys.stdout.write(
            f"{s.id:<10} {'per job' if s.per_job else 'once':<8} {s.help}\n{'':<20}{s.command}\n"
        )
    return EXIT_OK


def _stage_run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.reproduction.tasks import load_task
    from presentation_dependence.studies.sequencer import run_steps
    from presentation_dependence.studies.stages import stage_commands, task_jobs

    task = load_task(args.task)
    jobs = task_jobs(task, patterns=args.jobs)
    cmds = stage_commands(task, task.stage(args.stage), jobs, data_root=args.data_root)
    if args.stage_action == "commands":
        for c in cmds:
            line = shlex.join(c.argv)
            sys.stdout.write(f"# blocked: {c.blocked}\n# {line}\n" if c.blocked else line + "\n")
        return EXIT_OK
    return run_steps(cmds, dry_run=args.dry_run, keep_going=args.keep_going)


def _stage_pass(args: argparse.Namespace, argv: Sequence[str]) -> int:
    import time

    from presentation_dependence.reproduction.tasks import load_task
    from presentation_dependence.studies.in_process import PassJob, parse_pass_job, run_in_process
    from presentation_dependence.studies.stages import task_jobs

    task = load_task(args.task)
    jobs = [PassJob(j.id, j.config_path, j.run_dir) for j in task_jobs(task, patterns=args.jobs)]
    jobs += [parse_pass_job(text) for text in args.run]
    start = time.monotonic()
    outcome = run_in_process(
        jobs,
        overrides=args.override,
        deadline=start + args.deadline_s if args.deadline_s is not None else None,
        timings=Path(args.timings) if args.timings else None,
        keep_going=args.keep_going,
    )
    for name, error in outcome.failed:
        sys.stderr.write(f"failed: {name}: {error}\n")
    return 1 if outcome.failed else EXIT_OK


def _appendix(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.reproduction.appendix import (
        APPENDIX,
        audit,
        format_audit,
        load_appendix,
    )

    appendix = load_appendix(args.appendix or APPENDIX)
    if args.appendix_action == "list":
        for a in appendix.artifacts:
            flag = "runnable" if a.runnable else "not runnable"
            sys.stdout.write(f"{a.id:<24} {a.kind:<7} {flag:<13} {a.title}\n")
        return EXIT_OK
    if args.appendix_action == "show":
        a = appendix.get(args.artifact)
        for key, value in a.__dict__.items():
            sys.stdout.write(f"{key}: {value}\n")
        return EXIT_OK
    rows = audit(appendix, ".", args.presdep_commands)
    sys.stdout.write(format_audit(rows))
    return 1 if args.strict and any(r.status == "broken" for r in rows) else EXIT_OK
