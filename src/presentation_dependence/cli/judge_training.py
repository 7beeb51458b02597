"""``presdep judge-splits | train-judge``: trained verdict readout judges (docs/JUDGE-TRAINING.md).

presdep judge-splits SPEC                                 build the splits file (spec's ``out``)
presdep judge-splits --export SPLIT --splits FILE --out DIR   one jsonl response set per set
presdep train-judge CONFIG [--override KEY=VALUE ...] [--restart] [--pause-at STEP] [--wait]
    [--continue-in DTYPE]
presdep train-reward CONFIG [--override KEY=VALUE ...] [--restart] [--wait]   trl reward model
presdep judge-averaged RUN_DIR ...    test-time averaging of a sweep's records -> averaged.json
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from presentation_dependence.cli.common import EXIT_OK, Subparsers, add_config, command, log
from presentation_dependence.cli.training import add_continue_in, train_command
from presentation_dependence.errors import ConfigError

__all__ = ["register"]


def register(sub: Subparsers) -> None:
    s = command(
        sub,
        "judge-splits",
        _cmd_splits,
        "split the judge sets by item (train / held-out / test) -> the spec's splits file",
        description="Test = the items each set's judge study config judges; train = the rest of "
        "its pool (no item or prompt of a test set); held-out = a seeded share of the training "
        "pool. Records the seed, the item ids and the sha256 of every source file. With "
        "--export, writes one split's items as jsonl response sets instead.",
    )
    s.add_argument("spec", nargs="?", help="a splits spec (configs/judge/train/splits.yaml)")
    s.add_argument("--export", choices=("train", "heldout", "test"), help="export this split")
    s.add_argument("--splits", help="the splits file to export from")
    s.add_argument("--out", help="folder of the exported <set>.jsonl files")
    t = command(
        sub,
        "train-judge",
        _cmd_train_judge,
        "train a verdict readout judge (LoRA) -> <output_dir>/adapter; rerun to resume",
        description="The student trainer with the judge's data and loss: writes "
        "<output_dir>/adapter/, judge.yaml (the judge block with adapter_path), "
        "resolved_config.yaml and provenance.json; checkpoints every train.save_steps steps, "
        "resumed by rerunning the same command. Prints the adapter folder.",
    )
    add_config(
        t,
        "a judge training config (configs/judge/train/*.yaml)",
        override_example="train.max_steps=5",
    )
    t.add_argument("--restart", action="store_true", help="discard checkpoints and the judge")
    t.add_argument("--pause-at", type=int, metavar="STEP", help="stop at this step (checkpoint)")
    t.add_argument("--wait", action="store_true", help="wait for another process on the folder")
    add_continue_in(t, "judge.dtype")
    _register_reward(sub)
    _register_averaged(sub)


def _register_reward(sub: Subparsers) -> None:
    r = command(
        sub,
        "train-reward",
        _cmd_train_reward,
        "train the order-free reference judge: a reward model (trl RewardTrainer, LoRA)",
        description="Each response scored alone by the base with a scalar head, fitted by "
        "trl's RewardTrainer on (chosen, rejected) pairs of the judge sets' train split. Writes "
        "<output_dir>/adapter/ (LoRA + head), judge.yaml (judge_class: reward_model), "
        "resolved_config.yaml and provenance.json; rerun to resume. Prints the adapter folder.",
    )
    add_config(
        r,
        "a reward-model config (configs/judge/train/reward-model.yaml)",
        override_example="train.max_steps=5",
    )
    r.add_argument("--restart", action="store_true", help="discard checkpoints and the model")
    r.add_argument("--wait", action="store_true", help="wait for another process on the folder")


def _register_averaged(sub: Subparsers) -> None:
    a = command(
        sub,
        "judge-averaged",
        _cmd_averaged,
        "score test-time averaging (every placement judged, then one decision) from a sweep",
        description="Reads <run>/records.jsonl of a 'presdep judge' placement sweep and writes "
        "<run>/averaged.json: per item the argmax of the mean P(verdict) by response (the "
        "readout) or the majority vote (other judges); accuracy with its interval; calls per "
        "item. Nothing is judged. Prints one line per run.",
    )
    a.add_argument("runs", nargs="+", help="judge run folders (with records.jsonl)")


def _cmd_averaged(args: argparse.Namespace, argv: Sequence[str]) -> int:
    import json
    from pathlib import Path

    from presentation_dependence.io.atomic import atomic_write_text
    from presentation_dependence.judge.config import config_from_raw
    from presentation_dependence.judge.items.records import read_records
    from presentation_dependence.judge.scoring.averaged import summarise_averaged
    from presentation_dependence.runners.readback import folder_config

    for run in map(Path, args.runs):
        settings = folder_config(run, config_from_raw).scoring
        summary = summarise_averaged(read_records(run / "records.jsonl"), settings)
        atomic_write_text(run / "averaged.json", json.dumps(summary, indent=1) + "\n")
        acc = summary["accuracy"]
        sys.stdout.write(
            f"{run}: {summary['method']}, {summary['calls_per_item']:g} calls/item, accuracy "
            f"{acc['mean']:.3f} [{acc['ci_low']:.3f}, {acc['ci_high']:.3f}] over {acc['n']} items\n"
        )
    return EXIT_OK


def _cmd_splits(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.training.judge_splits import (
        build_splits,
        export_split,
        load_splits_spec,
    )

    if args.export:
        if not args.splits or not args.out:
            raise ConfigError("--export needs --splits FILE and --out DIR")
        for path in export_split(args.splits, args.export, args.out):
            sys.stdout.write(f"{path}\n")
        return EXIT_OK
    if not args.spec:
        raise ConfigError("give a splits spec (configs/judge/train/splits.yaml), or --export")
    spec = load_splits_spec(args.spec)
    splits = build_splits(spec, spec_path=args.spec)
    for name, entry in splits["sets"].items():
        counts = ", ".join(f"{k} {len(entry.get(k, []))}" for k in ("train", "heldout", "test"))
        log.info("%s: %s", name, counts)
    sys.stdout.write(f"{spec.out}\n")
    return EXIT_OK


def _cmd_train_judge(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.training.judge_config import load_judge_training_config
    from presentation_dependence.training.judge_trainer import train_judge

    cfg = load_judge_training_config(args.config, args.override or ())
    return train_command(train_judge, cfg, args, argv, continue_in=args.continue_in)


def _cmd_train_reward(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.training.reward_config import load_reward_model_config
    from presentation_dependence.training.reward_trainer import train_reward_model

    cfg = load_reward_model_config(args.config, args.override or ())
    outcome = train_reward_model(cfg, argv=argv, restart=args.restart, wait=args.wait)
    sys.stdout.write(f"{outcome.adapter_dir}\n")
    return EXIT_OK
