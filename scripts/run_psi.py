"""Order instability: ``python scripts/run_psi.py CONFIG --run-dir DIR [--from-scores]``.

Same as ``presdep psi``; see ``presdep psi --help``.
"""

from __future__ import annotations

import sys

from presentation_dependence.cli import main

if __name__ == "__main__":
    sys.exit(main(["psi", *sys.argv[1:]]))
