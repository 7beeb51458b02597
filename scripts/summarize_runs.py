"""Print (or write) a Markdown table of evaluated run folders: config, model, metrics, cost."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from presentation_dependence.errors import PresdepError
from presentation_dependence.report.markers import splice_file
from presentation_dependence.runners.summary import summary_markdown


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("run_dirs", nargs="+", help="evaluated run folders")
    p.add_argument("--write", help="write the table into this Markdown file between markers")
    p.add_argument("--marker", default="results", help="<!-- MARKER:start/end --> in --write")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    try:
        table = summary_markdown(args.run_dirs)
    except PresdepError as e:
        logging.getLogger("summarize_runs").error("%s", e)
        return 2
    if not args.write:
        sys.stdout.write(table)
        return 0
    try:
        splice_file(args.write, args.marker, table)
    except (OSError, PresdepError) as e:
        logging.getLogger("summarize_runs").error("%s", e)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
