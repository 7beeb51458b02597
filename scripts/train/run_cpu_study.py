"""The CPU-scale study, end to end: ``uv run python scripts/train/run_cpu_study.py``.

Runs, in order (docs/TRAINING.md, "The CPU-scale study", lists the same commands):
prepare the training/held-out fixtures, make the silver labels (T = 10), select λ on
held-out queries, train the single-order, order-averaged and permutation-augmentation students,
then score the off-the-shelf readout, BSC and the four students on DL19 top-20 (run + PSI,
M = 10) and write the table. A step whose output exists is skipped, and every command resumes,
so an interrupted study continues where it stopped. ``--dry-run`` prints the commands only.
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from presentation_dependence.training.study import CHOSEN, load_plan, study_plan


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--root", default="runs/self-distill/study", help="where the study writes")
    p.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    p.add_argument(
        "--plan",
        default="",
        help="a study plan YAML (e.g. configs/study/content-study.yaml) instead of the built-in "
        "self-distillation plan",
    )
    p.add_argument("--lane", default="", help="run only the plan's steps of this lane")
    p.add_argument(
        "--timings",
        default="",
        help="append one JSON line per finished step (name, lane, seconds, UTC end) to this file "
        "(default with --plan: runs/<plan stem>/steps.jsonl); the study table's cost column",
    )
    p.add_argument(
        "--launcher",
        default="",
        help="prefix of the training commands, e.g. 'accelerate launch' (default: python)",
    )
    p.add_argument(
        "--eval-override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra --override for every DL19 run (e.g. data.max_queries=8)",
    )
    p.add_argument(
        "--reuse",
        action="append",
        default=[],
        metavar="SCORER=RUN_DIR",
        help="copy a finished run folder of the same experiment config instead of recomputing "
        "it, e.g. bsc=runs/psi-dl19-smollm2-bsc/<timestamp> (its run and psi steps are then "
        "skipped; presdep refuses a folder made from another config)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    log = logging.getLogger("run_cpu_study")
    python = sys.executable if not args.dry_run else "python"
    if args.plan:
        steps = load_plan(args.plan, python=python)
    else:
        steps = study_plan(
            python=python,
            root=args.root,
            launcher=shlex.split(args.launcher),
            eval_overrides=args.eval_override,
        )
    if args.lane:
        steps = [s for s in steps if s.lane == args.lane]
        if not steps:
            log.error("the plan has no step in lane %r", args.lane)
            return 2
    selection = Path(args.root) / "lambda" / "lambda_selection.json"
    for item in args.reuse:
        name, _, source = item.partition("=")
        target = Path(args.root) / "dl19" / name
        if not source or not Path(source, "psi", "psi_metrics.json").is_file():
            log.error("--reuse %s: expected SCORER=RUN_DIR of a finished run with psi/", item)
            return 2
        if args.dry_run:
            print(f"cp -r {shlex.quote(source)} {shlex.quote(str(target))}")
        elif not target.exists():
            shutil.copytree(source, target)
            log.info("reusing %s as %s", source, target)
    timings: Path | None = None
    if args.timings:
        timings = Path(args.timings)
    elif args.plan:
        timings = Path("runs") / Path(args.plan).stem / "steps.jsonl"
    t_start = time.perf_counter()
    for step in steps:
        argv_ = list(step.argv)
        if step.needs_chosen_adapter and not args.dry_run:
            chosen = json.loads(selection.read_text(encoding="utf-8"))["chosen_adapter"]
            placeholder = CHOSEN.format(selection=f"{args.root}/lambda")
            argv_ = [a.replace(placeholder, chosen) for a in argv_]
        line = shlex.join(argv_)
        if args.dry_run:
            print(line)
            continue
        if step.done and Path(step.done).exists():
            log.info("skip %s: %s exists", step.name, step.done)
            continue
        log.info("step %s: %s", step.name, line)
        t0 = time.perf_counter()
        rc = subprocess.run(argv_, check=False).returncode
        if rc != 0:
            log.error("step %s failed (exit %d): %s", step.name, rc, line)
            return rc
        seconds = time.perf_counter() - t0
        log.info("step %s done in %.0f s", step.name, seconds)
        if timings is not None:
            timings.parent.mkdir(parents=True, exist_ok=True)
            record = {
                "step": step.name,
                "lane": step.lane,
                "seconds": round(seconds, 1),
                "utc_end": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            with timings.open("a", encoding="utf-8") as f:  # one short line: an atomic append
                f.write(json.dumps(record) + "\n")
    if not args.dry_run:
        log.info(
            "study done in %.0f min: %s/table.md", (time.perf_counter() - t_start) / 60, args.root
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
