"""Run a judge study: every config of ``configs/judge/study/`` into one folder each, resumably.

``python scripts/judge_study.py [CONFIG ...] [--root runs/judge/study] [--rerun] [--gate]
[--override block.key=value ...]``

* Each config runs into ``<root>/<config id>/``: ``presdep judge`` (or ``task: rank``); a config
  whose id starts with ``noise-`` runs ``presdep noise`` instead (its ``noise`` block).
* A folder that already holds a finished run (``summary.json``, ``ranking_summary.json`` or
  ``noise.json``) is skipped, so an interrupted study resumes at the first unfinished config.
* ``--rerun``: judge the same calls once more at the configured batch size and compare with the
  sweep (``<folder>/rerun/``, the sweep reused as run 0): the rerun noise in SE units.
* ``--gate``: ``presdep gate`` on the config's cases (its ``gate`` block) ->
  ``<folder>/gate_verdict.json``.
* ``study_timing.json`` in each folder records the wall and CPU seconds of its run (CPU
  seconds are what a busy shared machine does not distort).

Then ``python scripts/judge_doc.py --study <root>`` renders the tables into docs/JUDGE.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.judge.config import JudgeTaskConfig, NoiseConfig, load_judge_config
from presentation_dependence.judge.records import read_records
from presentation_dependence.judge.runner import run_gate_task, run_judge_task, run_noise_task

log = logging.getLogger("judge_study")
STUDY_CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "judge" / "study"
DONE = ("summary.json", "ranking_summary.json", "noise.json")


def _done(folder: Path) -> bool:
    return any((folder / name).is_file() for name in DONE)


def _timed(folder: Path, what: str, fn: Callable[[], object]) -> None:
    """Run ``fn``; record its wall and CPU seconds (this process, all threads)."""
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    path = folder / "study_timing.json"
    timing = json.loads(path.read_text()) if path.is_file() else {}
    prefix = "" if what == "run" else f"{what}_"
    timing.update({f"{prefix}seconds": secs, f"{prefix}cpu_seconds": cpu})
    atomic_write_text(path, json.dumps(timing, indent=2) + "\n")
    log.info("%s %s: %.1f s wall, %.1f s CPU", folder.name, what, secs, cpu)


def run_config(
    cfg: JudgeTaskConfig, root: Path, argv: list[str], *, rerun: bool, gate: bool
) -> None:
    out = root / cfg.id
    if _done(out):
        log.info("%s: finished run found, skipped", out)
    elif cfg.id.startswith("noise-"):
        _timed(out, "run", lambda: run_noise_task(cfg, out, argv))
    else:
        _timed(out, "run", lambda: run_judge_task(cfg, out, argv))
    if cfg.task != "judge" or cfg.id.startswith("noise-"):
        return
    if rerun and not _done(out / "rerun"):
        bs = getattr(cfg.judge.options, "batch_size", 1)
        one = replace(cfg, noise=NoiseConfig(repeats=2, batch_sizes=[bs]))
        ref = out / "records.jsonl"
        read_records(ref)  # fail early on a damaged sweep
        _timed(out, "rerun", lambda: run_noise_task(one, out / "rerun", argv, reference=ref))
    if gate and not (out / "gate_verdict.json").is_file():
        _timed(out, "gate", lambda: run_gate_task(cfg, out / "gate_verdict.json", argv))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("configs", nargs="*", type=Path, help="default: configs/judge/study/*.yaml")
    p.add_argument("--root", type=Path, default=Path("runs/judge/study"))
    p.add_argument("--rerun", action="store_true", help="add the rerun-noise run")
    p.add_argument("--gate", action="store_true", help="add the gate verdict")
    p.add_argument("--override", action="append", default=[], metavar="BLOCK.KEY=VALUE")
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    paths = a.configs or sorted(STUDY_CONFIGS.glob("*.yaml"))
    configs = [load_judge_config(path, a.override) for path in paths]  # all validated first
    for cfg in configs:
        run_config(cfg, a.root, ["scripts/judge_study.py", *argv], rerun=a.rerun, gate=a.gate)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
