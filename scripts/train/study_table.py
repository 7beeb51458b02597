"""The CPU-scale study's table: ``python scripts/train/study_table.py DL19_DIR [--out table.md]``.

DL19_DIR holds one evaluated run folder per scorer (``presdep run --eval`` then ``presdep psi``),
as ``run_cpu_study.py`` lays them out; rows follow the study's scorer order.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from presentation_dependence.errors import PresdepError
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.report.markers import splice_file
from presentation_dependence.training.study import STUDENT_NAMES, study_table

ORDER = ["off-the-shelf", "bsc", "teacher-e5", *STUDENT_NAMES]


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("dl19_dir", help="folder of the scorers' run folders")
    p.add_argument("--out", help="write the table here (else print it)")
    p.add_argument("--timings", help="the study sequencer's steps.jsonl (wall time per step)")
    p.add_argument(
        "--doc",
        help="also rewrite the <!-- study-table:start/end --> block of this document "
        "(docs/TRAINING.md)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    root = Path(args.dl19_dir)
    found = [p for p in root.iterdir() if (p / "psi" / "psi_metrics.json").is_file()]
    found.sort(key=lambda p: (ORDER.index(p.name) if p.name in ORDER else len(ORDER), p.name))
    if not found:
        logging.getLogger("study_table").error("no finished run folders under %s", root)
        return 2
    table = study_table(found, args.timings)
    if args.out:
        atomic_write_text(args.out, table)
        logging.getLogger("study_table").info("wrote %s", args.out)
    if args.doc:
        try:
            splice_file(args.doc, "study-table", table)
        except (OSError, PresdepError) as err:
            logging.getLogger("study_table").error("%s", err)
            return 2
        logging.getLogger("study_table").info("wrote the study-table block of %s", args.doc)
    if not args.out and not args.doc:
        sys.stdout.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
