"""Train one student: ``python scripts/train/train_student.py CONFIG [--override KEY=VALUE]``.

Multi-GPU data parallelism needs no code change::

    accelerate launch --multi_gpu --num_processes 4 scripts/train/train_student.py CONFIG

Writes ``<output_dir>/adapter/``, ``resolved_config.yaml``, ``reranker.yaml`` and
``provenance.json`` (docs/TRAINING.md). ``--lambda-from lambda_selection.json`` sets λ to the
one ``select_lambda.py`` chose.

Stopping is safe: checkpoints go to ``<output_dir>/checkpoints/`` every ``train.save_steps``
steps and rerunning the same command resumes from the latest complete one; on a finished
``output_dir`` it does nothing. ``--restart`` discards the checkpoints (and a finished student)
and trains from scratch; without it, checkpoints or a student of another config are refused.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from presentation_dependence.errors import PresdepError
from presentation_dependence.training.config import load_training_config


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("config", help="configs/self-distill/<variant>.yaml")
    p.add_argument("--override", "-o", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--lambda-from", help="lambda_selection.json: train with its chosen λ")
    p.add_argument(
        "--restart",
        action="store_true",
        help="discard the output_dir's checkpoints and student and train from scratch",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train_student")
    overrides = list(args.override)
    try:
        if args.lambda_from:
            chosen = json.loads(Path(args.lambda_from).read_text(encoding="utf-8"))["chosen_lambda"]
            overrides.append(f"lambda_={chosen}")
        cfg = load_training_config(args.config, overrides)
        from presentation_dependence.training.trainer import train_student

        outcome = train_student(cfg, argv=sys.argv, restart=args.restart)
    except (PresdepError, OSError, KeyError) as e:
        log.error("%s", e)
        return 2
    if outcome.is_main_process:
        print(outcome.adapter_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
