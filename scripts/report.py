"""Order-instability report: ``python scripts/report.py RUN_DIR [RUN_DIR ...] --out DIR``.

Writes DIR/report.md, DIR/report.html (self-contained, plots embedded) and the PNGs. The first
run folder is the baseline of the paired tests.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from presentation_dependence.errors import PresdepError
from presentation_dependence.report import write_report


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("run_dirs", nargs="+", help="run folders with psi/psi_metrics.json")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--seed", type=int, default=0, help="seed of the paired tests")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    try:
        md, page = write_report(args.run_dirs, args.out, seed=args.seed)
    except PresdepError as e:
        logging.getLogger("report").error("%s", e)
        return 2
    logging.getLogger("report").info("wrote %s and %s", md, page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
