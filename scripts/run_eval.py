"""Evaluate a run folder with pytrec_eval: ``python scripts/run_eval.py --run-dir DIR``.

Same as ``presdep eval``; see ``presdep eval --help``.
"""

from __future__ import annotations

import sys

from presentation_dependence.cli import main

if __name__ == "__main__":
    sys.exit(main(["eval", *sys.argv[1:]]))
