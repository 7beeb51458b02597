"""``presdep study judge-arms``: the trained judges against off the shelf and test-time averaging.

presdep study judge-arms --trained docs/results/judge-train --baseline docs/results/judge-study/runs \\
    --doc docs/studies/judge-train.md --figures docs/results/judge-train
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from presentation_dependence.cli.common import Subparsers, command, write_markdown
from presentation_dependence.errors import PresdepError

__all__ = ["register_judge_arms"]


def register_judge_arms(actions: Subparsers) -> None:
    c = command(
        actions,
        "judge-arms",
        _cmd_judge_arms,
        "trained judges vs off the shelf and test-time averaging, from archived runs",
    )
    c.add_argument(
        "--trained",
        default="docs/results/judge-train",
        help="the arms' archived runs: TRAINED/<arm>/<run id>/",
    )
    c.add_argument(
        "--baseline",
        default="docs/results/judge-study/runs",
        help="the off-the-shelf runs: BASELINE/<run id>/",
    )
    c.add_argument(
        "--splits",
        default="configs/judge/train/splits.json",
        help="the judge splits file: its test sets' runs are shown off the shelf before any arm",
    )
    c.add_argument("--doc", help="write the section into this document's marker block")
    c.add_argument(
        "--figures",
        help="also draw the held-out curves and the accuracy by slot of each arm into this "
        "folder (heldout_curves.png, slot_accuracy.png), linked from --doc",
    )
    c.add_argument("--block", default="judge-arms", help="the marker block --doc rewrites")


def _cmd_judge_arms(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.studies.judge_arms import (
        ARMS,
        arms_markdown,
        baseline_run_ids,
        load_arms,
        write_figures,
    )
    from presentation_dependence.studies.judge_curves import load_curves
    from presentation_dependence.studies.judge_gates import heldout_gates_markdown

    if args.figures and not args.doc:
        raise PresdepError("--figures FOLDER: give --doc too (the figures are linked from it)")
    trained = Path(args.trained)
    groups = load_arms(trained, Path(args.baseline), run_ids=baseline_run_ids(args.splits))
    curves = load_curves(trained, ARMS)
    figures = (
        write_figures(groups, curves, Path(args.figures), Path(args.doc)) if args.figures else None
    )
    gates = heldout_gates_markdown(trained, Path(args.baseline))
    return write_markdown(args, arms_markdown(groups, curves, figures, gates))
