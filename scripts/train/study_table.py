"""The CPU-scale study's table: ``python scripts/train/study_table.py DL19_DIR [--out table.md]``.

A shim of ``presdep study table`` (the same flags). DL19_DIR holds one evaluated run folder per
scorer (``presdep run --eval`` then ``presdep psi``), as ``presdep study plan`` lays them out;
rows follow the study's scorer order.
"""

from __future__ import annotations

import sys

from presentation_dependence.cli import run_script

main = run_script("study", "table")

if __name__ == "__main__":
    sys.exit(main())
