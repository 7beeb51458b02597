"""``presdep silver | train | select-lambda``: silver labels and students (docs/TRAINING.md).

presdep silver CONFIG [--override KEY=VALUE ...] [--shard K/N] [--force]   (= scripts/train/make_silver.py)
presdep train CONFIG [--override KEY=VALUE ...] [--lambda-from FILE] [--restart] [--pause-at STEP] [--wait]
    (= scripts/train/train_student.py; multi-GPU: accelerate launch -m presentation_dependence.cli train CONFIG)
presdep select-lambda CONFIG --out DIR [--override KEY=VALUE ...]   (= scripts/train/select_lambda.py)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from presentation_dependence.cli.common import (
    EXIT_OK,
    Subparsers,
    add_config,
    add_out,
    add_shard,
    command,
    log,
)
from presentation_dependence.errors import ConfigError

if TYPE_CHECKING:
    from presentation_dependence.training.config import TrainingConfig

__all__ = ["add_continue_in", "chosen_lambda", "register", "train_command"]

_TRAINING_CONFIG = "a training config (configs/self-distill/<variant>.yaml, configs/study/...)"


def register(sub: Subparsers) -> None:
    _register_silver(sub)
    _register_train(sub)
    _register_select_lambda(sub)


def _register_silver(sub: Subparsers) -> None:
    s = command(
        sub,
        "silver",
        _cmd_silver,
        "score a training config's silver data with its teacher -> silver.path",
        description="The teacher (silver.teacher, any registered reranker) scores every query of "
        "silver.data under T = silver.num_orders seeded presentations; the file goes to "
        "silver.path (format: docs/TRAINING-RUNS.md). Resumable; an existing file made the same way "
        "is kept (--force remakes it). Prints the file's path.",
    )
    add_config(s, _TRAINING_CONFIG, override_example="silver.num_orders=4")
    s.add_argument("--force", action="store_true", help="remake an existing silver file")
    add_shard(s, "score (its parts; a run without --shard then assembles the file)")


def _register_train(sub: Subparsers) -> None:
    t = command(
        sub,
        "train",
        _cmd_train,
        "train one student (LoRA) -> <output_dir>/adapter; rerun to resume",
        description="Writes <output_dir>/adapter/, resolved_config.yaml, reranker.yaml and "
        "provenance.json. Checkpoints go to <output_dir>/checkpoints/ every train.save_steps "
        "steps: rerunning the same command resumes from the latest complete one, and does "
        "nothing on a finished output_dir. Multi-GPU: accelerate launch --multi_gpu -m "
        "presentation_dependence.cli train CONFIG. Prints the adapter folder.",
    )
    add_config(t, _TRAINING_CONFIG, override_example="train.max_steps=10")
    t.add_argument(
        "--lambda-from",
        metavar="FILE",
        help="lambda_selection.json of 'presdep select-lambda': train with its chosen λ",
    )
    t.add_argument(
        "--restart",
        action="store_true",
        help="discard the output_dir's checkpoints and student and train from scratch",
    )
    t.add_argument(
        "--pause-at",
        type=int,
        metavar="STEP",
        help="stop at this step with a checkpoint, the learning-rate schedule still the full "
        "run's (a rerun without it trains on); e.g. the runs that 'select-lambda' compares "
        "at selection.at_step, trained in parallel beforehand",
    )
    t.add_argument(
        "--wait",
        action="store_true",
        help="when another process trains the same output_dir, wait for it to finish (then "
        "find its student) instead of refusing",
    )
    add_continue_in(t, "student.dtype")


def add_continue_in(parser: argparse.ArgumentParser, key: str) -> None:
    """``--continue-in DTYPE`` of a training command whose config names its dtype at ``key``."""
    parser.add_argument(
        "--continue-in",
        choices=("float32", "bfloat16", "float16"),
        metavar="DTYPE",
        help=f"resume the checkpoints in this dtype instead of {key}'s (float32 on a CPU that "
        "emulates bfloat16); the frozen config is unchanged, the resume and the provenance "
        "record it",
    )


def _register_select_lambda(sub: Subparsers) -> None:
    sl = command(
        sub,
        "select-lambda",
        _cmd_select_lambda,
        "choose OC-SFT's λ on held-out queries -> OUT/lambda_selection.json",
        description="Trains one student per λ of selection.lambdas (reusing finished ones), "
        "scores each on splits.heldout in the given order and under M seeded shuffles, and "
        "writes OUT/lambda_selection.json and OUT/lambda_curve.md. Refuses a held-out split "
        "that shares a query with splits.test or the training queries.",
    )
    add_config(sl, "an oc_sft training config (configs/self-distill/oc-sft.yaml)")
    add_out(sl, "folder of the λ students and the curve", required=True)
    sl.add_argument("--doc", help="also write the curve into a document's marker block")
    sl.add_argument("--block", default="lambda-selection", help="the marker block --doc rewrites")
    sl.add_argument(
        "--choose-only",
        action="store_true",
        help="with selection.at_step: compare the runs at that step and write the choice "
        "(OUT/lambda_choice.json and the curve) without training the chosen run to the end; "
        "a later run without it trains on and writes OUT/lambda_selection.json",
    )


def _training_config(args: argparse.Namespace, extra: Sequence[str] = ()) -> TrainingConfig:
    from presentation_dependence.training.config import load_training_config

    return load_training_config(args.config, [*args.override, *extra])


def _cmd_silver(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.runners import parse_shard
    from presentation_dependence.training.silver import generate_silver

    cfg = _training_config(args)
    path = generate_silver(cfg.silver, argv=argv, force=args.force, shard=parse_shard(args.shard))
    sys.stdout.write(f"{path}\n")
    return EXIT_OK


def chosen_lambda(path: str | Path) -> int | float:
    """``chosen_lambda`` of a ``lambda_selection.json`` (``presdep select-lambda``), as stored
    (an override written from it must read as before, or a resumed student sees another config)."""
    try:
        value = json.loads(Path(path).read_text(encoding="utf-8")).get("chosen_lambda")
    except (ValueError, AttributeError) as e:
        raise ConfigError(f"--lambda-from {path}: not a JSON object ({e})") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(
            f"--lambda-from {path}: expected the lambda_selection.json of 'presdep select-lambda' "
            f"with a numeric 'chosen_lambda', got {value!r}"
        )
    return value


def _cmd_train(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.training.trainer import train_student

    extra = [f"lambda_={chosen_lambda(args.lambda_from)}"] if args.lambda_from else []
    cfg = _training_config(args, extra)
    return train_command(train_student, cfg, args, argv, continue_in=args.continue_in)


def train_command(
    train: Callable[..., Any],
    cfg: Any,
    args: argparse.Namespace,
    argv: Sequence[str],
    **options: Any,
) -> int:
    """``train(cfg)`` (a student's ``train_student`` or a judge's ``train_judge``) with the
    command's ``--restart``, ``--pause-at`` and ``--wait`` and the trainer's own ``options``;
    prints the adapter folder (main process)."""
    if args.pause_at is not None and args.pause_at < 1:
        raise ConfigError(f"--pause-at {args.pause_at}: expected a step >= 1")
    outcome = train(
        cfg, argv=argv, restart=args.restart, pause_at=args.pause_at, wait=args.wait, **options
    )
    if outcome.is_main_process:
        sys.stdout.write(f"{outcome.adapter_dir}\n")
    return EXIT_OK


def _cmd_select_lambda(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.report.markers import splice_file
    from presentation_dependence.training.lambda_select import (
        lambda_markdown,
        run_lambda_selection,
    )

    cfg = _training_config(args)
    result = run_lambda_selection(cfg, out_dir=args.out, argv=argv, choose_only=args.choose_only)
    sys.stdout.write(f"chosen lambda: {result['chosen_lambda']:g} ({result['criterion']})\n")
    name = "lambda_choice.json" if args.choose_only else "lambda_selection.json"
    log.info("wrote %s", Path(args.out) / name)
    if args.doc:
        splice_file(args.doc, args.block, lambda_markdown(result))
        log.info("wrote the %s block of %s", args.block, args.doc)
    return EXIT_OK
