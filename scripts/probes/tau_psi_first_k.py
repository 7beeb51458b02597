"""τ-PSI from the first K shuffles of archived PSI runs against all M of them.

    uv run python scripts/probes/tau_psi_first_k.py [--root docs/results/zero-shot] [--scorer oc-sft] [--k 5]

The random shuffles are drawn one after the other from one seeded stream
(presentations.random_shuffle; tests/test_presentations.py checks it), so the first K of an M-shuffle run are exactly the shuffles a
K-shuffle run would draw. Per collection: the mean per-query τ-PSI over all M and over the first
K, their between-query standard deviations, and the mean per-query difference (a planning check
for running a scorer at fewer shuffles; nothing is written).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from presentation_dependence.metrics.order import tau_psi
from presentation_dependence.robustness.store import load_columnar

VARIANT = "random_shuffle"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", default="docs/results/zero-shot")
    p.add_argument("--scorer", default="oc-sft")
    p.add_argument("--k", type=int, default=5)
    args = p.parse_args(argv)
    files = sorted(Path(args.root).glob(f"*/{args.scorer}/psi/grade_distributions.npz"))
    if not files:
        sys.stderr.write(f"no {args.root}/*/{args.scorer}/psi/grade_distributions.npz\n")
        return 1
    print(
        f"| collection | queries | τ-PSI, all M (sd) | τ-PSI, first {args.k} (sd) | mean difference |"
    )
    print("|---|---|---|---|---|")
    for f in files:
        mats = [q[VARIANT] for q in load_columnar(f).values() if VARIANT in q]
        full = np.array([tau_psi(s) for s in mats])
        first = np.array([tau_psi(s[: args.k]) for s in mats])
        print(
            f"| {f.parts[-4]} | {len(full)} | {full.mean():.3f} ({full.std():.3f}) | "
            f"{first.mean():.3f} ({first.std():.3f}) | {np.mean(first - full):+.4f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
