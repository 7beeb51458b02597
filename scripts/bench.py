"""Benchmarks: ``uv run poe bench`` -> docs/results/bench-run.json and docs/BENCHMARKS.md.

Measures the readout's documents per second (listwise B=20 vs pointwise B=1, same model and
documents) and its achieved FLOP/s against a dense matmul; the speed levers of issue 14 on and
off (eager vs optimised, attention kernel, compiled layers, dtype, autocast, padding,
logits_to_keep, threads, a shared-prefix KV cache) with a per-operator profile; the generative
listwise rate; the OC-SFT training step eager vs optimised; and the studies' two steps end to
end (one query's PSI, one OC-SFT step at the studies' geometry), today's path against the
levers (``tools/presdep_tools/bench/study_steps.py``). One run, about 17 minutes on two cores (2026-12-06).
``--conditions`` is written into the report's conditions section. The benchmarks
are development tools (``tools/presdep_tools/bench``, not in the wheel): ``poe bench`` puts
``tools/`` on the path (``PYTHONPATH=tools python scripts/bench.py`` without poe).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from presdep_tools.bench.data import bench_requests
from presdep_tools.bench.evidence import EVIDENCE_BLOCK, EVIDENCE_DOC, evidence_markdown
from presdep_tools.bench.gpu import GPU_BLOCK, gpu_markdown
from presdep_tools.bench.readout import run_readout_benchmark
from presdep_tools.bench.report import full_markdown
from presdep_tools.bench.study_steps import psi_step_benchmark, training_step_paths
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.provenance import git_state, package_versions
from presentation_dependence.report.markers import splice_file

# The measured block of docs/BENCHMARKS.md (report/markers.py); the sections after it are
# kept by hand.
BLOCK = "benchmarks"


def write_doc(results: dict[str, Any], doc: str) -> None:
    """The measured block of ``doc`` from one run's results; the hand-kept text around it stays."""
    splice_file(doc, BLOCK, full_markdown(results))
    logging.getLogger("bench").info("wrote %s", doc)


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", default="embedded:smollm2-135m-instruct")
    p.add_argument("--queries", type=int, default=3, help="queries (x 20 documents) to score")
    p.add_argument(
        "--dtypes",
        nargs="+",
        default=["bfloat16"],
        help="dtypes of the listwise-vs-pointwise table (the speed levers compare float32 too)",
    )
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    p.add_argument(
        "--skip-training", action="store_true", help="skip the OC-SFT vs single-view step benchmark"
    )
    p.add_argument("--skip-speed", action="store_true", help="skip the speed-lever table")
    p.add_argument(
        "--skip-study-steps",
        action="store_true",
        help="skip the studies' steps (one query's PSI, one OC-SFT step), today's path vs levers",
    )
    p.add_argument(
        "--conditions",
        default="",
        help="how the machine was during the run (load, other jobs), for the report",
    )
    p.add_argument(
        "--render-only",
        action="store_true",
        help="rewrite --doc from the results already in --out (measures nothing)",
    )
    p.add_argument(
        "--render-gpu",
        metavar="DIR",
        help="write --doc's GPU-check block from the committed gpu_check-*.json of DIR "
        "(scripts/device/gpu_check.sh's files; measures nothing)",
    )
    p.add_argument(
        "--render-evidence",
        metavar="DIR",
        help="write --doc's CPU-evidence block from the committed probe files of DIR "
        "(docs/results/bench; measures nothing)",
    )
    p.add_argument("--out", default="docs/results/bench-run.json")
    p.add_argument(
        "--doc",
        help="Markdown report ('' to skip); default docs/BENCHMARKS.md, and for "
        f"--render-evidence {EVIDENCE_DOC}",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    if args.doc is None:
        args.doc = EVIDENCE_DOC if args.render_evidence else "docs/BENCHMARKS.md"
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.render_gpu:  # the lent GPU machine's figures, from committed files
        splice_file(args.doc, GPU_BLOCK, gpu_markdown(args.render_gpu))
        return 0
    if args.render_evidence:  # single probes on a busy machine, from committed files
        splice_file(args.doc, EVIDENCE_BLOCK, evidence_markdown(args.render_evidence))
        return 0
    if args.render_only:  # the report again from the stored results, nothing measured
        write_doc(json.loads(Path(args.out).read_text(encoding="utf-8")), args.doc)
        return 0
    if args.threads:
        torch.set_num_threads(args.threads)
    requests, data = bench_requests(args.queries)
    speed = None
    if not args.skip_speed:  # first: its first compiled pass is the process's first
        from presdep_tools.bench.speed import readout_speed_benchmark

        speed = readout_speed_benchmark(requests, model_name=args.model)
    readout = run_readout_benchmark(requests, model_name=args.model, dtypes=args.dtypes)
    for d in readout["by_dtype"].values():
        for part in ("listwise", "pointwise"):
            d[part].pop("scores", None)
    from presdep_tools.bench.generative import generative_listwise_rate

    bf = readout["by_dtype"].get("bfloat16") or next(iter(readout["by_dtype"].values()))
    generative = generative_listwise_rate(
        requests,
        model_name=args.model,
        dtype="bfloat16" if "bfloat16" in readout["by_dtype"] else args.dtypes[0],
        num_threads=args.threads,
        readout_docs_per_second=bf["listwise"]["docs_per_second"],
    )
    training = None
    if not args.skip_training:
        from presdep_tools.bench.training import training_step_benchmark

        training = training_step_benchmark(args.model, num_threads=args.threads)
    psi_step = (
        None if args.skip_study_steps else psi_step_benchmark(requests, model_name=args.model)
    )
    study_training = None if args.skip_study_steps else training_step_paths(args.model)
    results = {
        "time_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads, "
        f"torch {torch.__version__}",
        "git": git_state(),
        "packages": package_versions(),
        "data": data,
        "readout": readout,
        "speed": speed,
        "generative_listwise": generative,
        "training": training,
        "psi_step": psi_step,
        "study_training": study_training,
        "conditions": args.conditions,
    }
    atomic_write_text(args.out, json.dumps(results, indent=1) + "\n")
    logging.getLogger("bench").info("wrote %s", args.out)
    if args.doc:
        write_doc(results, args.doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
