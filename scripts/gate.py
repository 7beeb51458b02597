"""Noise-aware gate: ``python scripts/gate.py CONFIG [--threshold T] [--k K]`` (exit 1 = fail).

Same as ``presdep gate``; see ``presdep gate --help``.
"""

from __future__ import annotations

import sys

from presentation_dependence.cli import main

if __name__ == "__main__":
    sys.exit(main(["gate", *sys.argv[1:]]))
