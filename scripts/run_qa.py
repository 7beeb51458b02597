"""QA with a frozen reader: ``python scripts/run_qa.py CONFIG --run-dir DIR [--from-records]``.

Same as ``presdep qa``; see ``presdep qa --help``.
"""

from __future__ import annotations

import sys

from presentation_dependence.cli import main

if __name__ == "__main__":
    sys.exit(main(["qa", *sys.argv[1:]]))
