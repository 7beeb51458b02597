"""The CPU-scale study, end to end: ``uv run python scripts/train/run_cpu_study.py``.

A shim of ``presdep study plan`` (the same flags; studies/sequencer.py). Runs, in order
(docs/studies/self-distillation.md lists the same commands): prepare the training/held-out
fixtures, make the silver labels (T = 10), select λ on held-out queries, train the single-order,
order-averaged and permutation-augmentation students, then score the off-the-shelf readout, BSC
and the four students on DL19 top-20 (run + PSI, M = 10) and write the table. A step whose
output exists is skipped, and every command resumes, so an interrupted study continues where it
stopped. ``--dry-run`` prints the commands only; ``--plan FILE --lane L`` runs one lane of a
plan YAML (configs/study/content-study.yaml) instead.
"""

from __future__ import annotations

import sys

from presentation_dependence.cli import run_script

main = run_script("study", "plan")

if __name__ == "__main__":
    sys.exit(main())
