"""Probe: where the studies' two steps spend their wall time, along the paths this machine
takes (issue 39). Writes a ``study_steps`` probe file for docs/results/bench (rendered into
docs/studies/cpu-probes.md by ``uv run poe bench --render-evidence docs/results/bench``).

    PYTHONPATH=tools python scripts/probes/study_steps.py --out docs/results/bench/X.json \\
        --conditions "what else ran" [--psi-path NAME ...] [--train-path NAME ...]

By default today's path of each step alone (float32, eager), the one a CPU without native
bfloat16 runs; name the paths of tools/presdep_tools/bench/study_steps.py to add others.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

from presdep_tools.bench.data import bench_requests
from presdep_tools.bench.study_steps import PSI_PATHS, TRAIN_PATHS, study_steps_probe
from presentation_dependence.io.atomic import atomic_write_text


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="the probe file to write (.json)")
    ap.add_argument("--conditions", required=True, help="how the machine was during the probe")
    ap.add_argument("--model", default="embedded:smollm2-135m-instruct")
    ap.add_argument("--psi-path", action="append", choices=list(PSI_PATHS))
    ap.add_argument("--train-path", action="append", choices=list(TRAIN_PATHS))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    requests, _ = bench_requests(1)
    probe = study_steps_probe(
        requests,
        model_name=args.model,
        psi_paths=args.psi_path or [next(iter(PSI_PATHS))],
        train_paths=args.train_path or [next(iter(TRAIN_PATHS))],
        conditions=args.conditions,
        script=Path(__file__).read_text(encoding="utf-8"),
    )
    atomic_write_text(args.out, json.dumps(probe, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
