"""Order-instability report: ``python scripts/report.py RUN_DIR [RUN_DIR ...] --out DIR``.

A shim of ``presdep report`` (the same flags: ``presdep report -h``). Writes DIR/report.md,
DIR/report.html (self-contained, plots embedded) and the PNGs. The first run folder is the
baseline of the paired tests.
"""

from __future__ import annotations

import sys

from presentation_dependence.cli import run_script

main = run_script("report")

if __name__ == "__main__":
    sys.exit(main())
