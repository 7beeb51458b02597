"""Make the silver labels of a training config: ``python scripts/train/make_silver.py CONFIG``.

A shim of ``presdep silver`` (the same flags: ``presdep silver -h``). The teacher
(``silver.teacher``, any registered reranker) scores every query of ``silver.data`` under
T = ``silver.num_orders`` seeded presentations; the file goes to ``silver.path`` (format:
docs/TRAINING-RUNS.md). Resumable; an existing file made the same way is kept (``--force`` remakes
it); ``--shard K/N`` scores parts only. The four configs in configs/self-distill/ share one file.
"""

from __future__ import annotations

import sys

from presentation_dependence.cli import run_script

main = run_script("silver")

if __name__ == "__main__":
    sys.exit(main())
