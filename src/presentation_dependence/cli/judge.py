"""``presdep judge | noise | gate``: LLM-as-judge placement sweeps, rerun noise, the gate.

presdep judge CONFIG [--override KEY=VALUE ...] [--out DIR]
presdep noise CONFIG [--batch-sizes 1 4] [--repeats 2] [--one-at-a-time] [--reference FILE] [--out DIR]
presdep gate CONFIG [--threshold T | --threshold-from SUMMARY] [--k K] [--verdict FILE]   (exit 1 = fail beyond noise)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from presentation_dependence.cli.common import (
    EXIT_OK,
    Subparsers,
    add_config,
    add_out,
    command,
    log,
)

__all__ = ["register"]

_OUT_HELP = "output folder (default <output_root>/<ID>/<timestamp>/)"


def register(sub: Subparsers) -> None:
    jd = command(sub, "judge", _cmd_judge, "N-way judge sweep (or task: rank) -> records + report")
    add_config(jd, "configs/judge/<ID>.yaml")
    add_out(jd, _OUT_HELP)

    nz = command(sub, "noise", _cmd_noise, "rerun noise: judge the same items repeatedly, compare")
    add_config(nz, "configs/judge/<ID>.yaml (its noise block)")
    add_out(nz, _OUT_HELP)
    nz.add_argument("--batch-sizes", type=int, nargs="+", help="conditions (default: config)")
    nz.add_argument("--repeats", type=int, help="runs per condition (default: config)")
    nz.add_argument("--one-at-a-time", action="store_true", help="add a one-at-a-time condition")
    nz.add_argument("--reference", help="records.jsonl of these requests: run 0 of condition 1")

    g = command(sub, "gate", _cmd_gate, "noise-aware pass/fail of a judge score (exit 1 = fail)")
    add_config(g, "configs/judge/<ID>.yaml (its gate block)")
    t = g.add_mutually_exclusive_group()
    t.add_argument("--threshold", type=float, help="gate.threshold")
    t.add_argument(
        "--threshold-from",
        metavar="SUMMARY",
        help="choose gate.threshold from a held-out sweep's summary.json: the lower end of its "
        "accuracy interval, rounded down to gate.grid (judge/scoring/threshold.py)",
    )
    g.add_argument("--k", type=int, help="gate.k: calls per case")
    g.add_argument("--verdict", help="JSON verdict path (default <output_root>/<ID>/<ts>/...)")


def _judge_config(args: argparse.Namespace, extra: Sequence[str] = ()) -> Any:
    from presentation_dependence.judge.config import load_judge_config

    return load_judge_config(args.config, [*args.override, *extra])


def _cmd_judge(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.judge.runner import run_judge_task

    cfg = _judge_config(args)
    run_judge_task(cfg, Path(args.out) if args.out else None, argv)
    return EXIT_OK


def _cmd_noise(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.judge.runner import run_noise_task

    extra = [f"noise.batch_sizes={list(args.batch_sizes)}"] if args.batch_sizes else []
    extra += [f"noise.repeats={args.repeats}"] if args.repeats is not None else []
    extra += ["noise.one_at_a_time=true"] if args.one_at_a_time else []
    cfg = _judge_config(args, extra)
    ref = Path(args.reference) if args.reference else None
    run_noise_task(cfg, Path(args.out) if args.out else None, argv, reference=ref)
    return EXIT_OK


def _cmd_gate(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.judge.runner import run_gate_task
    from presentation_dependence.judge.scoring.threshold import read_heldout_threshold

    extra = [f"gate.k={args.k}"] if args.k is not None else []
    choice = None
    if args.threshold_from:
        gate = _judge_config(args, extra).gate
        choice = read_heldout_threshold(
            args.threshold_from, grid=gate.grid, convention=gate.convention
        )
        log.info("threshold %g from %s", choice.threshold, args.threshold_from)
        extra.append(f"gate.threshold={choice.threshold}")
    elif args.threshold is not None:
        extra.append(f"gate.threshold={args.threshold}")
    verdict = run_gate_task(
        _judge_config(args, extra),
        Path(args.verdict) if args.verdict else None,
        argv,
        threshold_choice=choice.to_dict() if choice else None,
    )
    sys.stdout.write(verdict.reason + "\n")
    return verdict.exit_code
