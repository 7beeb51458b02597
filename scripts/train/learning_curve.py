"""Learning curves of trained students on held-out queries (studies/curve.py), as a plot.

A shim of ``presdep study curve`` (the same flags)::

    uv run python scripts/train/learning_curve.py configs/study/oc-sft.yaml configs/study/single-order.yaml \\
        --png docs/results/content-study/learning-curve.png
"""

from __future__ import annotations

import sys

from presentation_dependence.cli import run_script

main = run_script("study", "curve")

if __name__ == "__main__":
    sys.exit(main())
