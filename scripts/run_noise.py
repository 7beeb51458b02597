"""Rerun noise: ``python scripts/run_noise.py CONFIG [--batch-sizes 1 4] [--repeats 2] [--out DIR]``.

Same as ``presdep noise``; see ``presdep noise --help``.
"""

from __future__ import annotations

import sys

from presentation_dependence.cli import main

if __name__ == "__main__":
    sys.exit(main(["noise", *sys.argv[1:]]))
