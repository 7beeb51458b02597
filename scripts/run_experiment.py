"""Rerank a config's data into a run folder: ``python scripts/run_experiment.py CONFIG [options]``.

Same as ``presdep run``; see ``presdep run --help``.
"""

from __future__ import annotations

import sys

from presentation_dependence.cli import main

if __name__ == "__main__":
    sys.exit(main(["run", *sys.argv[1:]]))
