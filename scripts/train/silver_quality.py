"""What a silver file can teach: ``python scripts/train/silver_quality.py SILVER FIXTURE...``.

Reads the silver labels (``make_silver.py``) and the fixtures they were made from (the
judgements), and prints per source the first-stage nDCG@10, the nDCG@10 of one teacher order and
of the mean over the T orders, the teacher's τ-PSI and the label spread
(:mod:`presentation_dependence.training.silver_quality`). ``--out`` writes the table.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from presentation_dependence.errors import PresdepError
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.io.fixture import read_fixture
from presentation_dependence.report.markers import splice_file
from presentation_dependence.training.silver import read_silver
from presentation_dependence.training.silver_quality import (
    silver_quality,
    silver_quality_markdown,
)

log = logging.getLogger("silver_quality")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("silver", help="silver JSONL (make_silver.py)")
    p.add_argument("fixtures", nargs="+", help="fixture JSONL files holding the judgements")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--out", help="write the Markdown table here (else print it)")
    p.add_argument("--doc", help="also rewrite the <!-- BLOCK:start/end --> block of this document")
    p.add_argument("--block", default="silver-quality", help="the doc block's name")
    p.add_argument(
        "--dl19",
        action="append",
        default=[],
        metavar="LABEL=RUN_DIR",
        help="add a test-set row: nDCG@10 of an evaluated run folder (its metrics.json)",
    )
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    try:
        silver = read_silver(args.silver)
        qrels = {Path(f).stem: read_fixture(f)[1] for f in args.fixtures}
    except (OSError, PresdepError) as err:
        log.error("%s", err)
        return 2
    result = silver_quality(silver.queries, qrels, k=args.k)
    if not result["sources"]:
        log.error("no silver query has judgements in %s", ", ".join(args.fixtures))
        return 2
    table = silver_quality_markdown(result, silver.num_orders)
    if args.dl19:
        rows = [
            "",
            "| DL19 (BM25 top-20, 43 queries) | nDCG@10 | MAP | queries |",
            "|---|---|---|---|",
        ]
        for item in args.dl19:
            label, _, folder = item.partition("=")
            try:
                m = json.loads((Path(folder) / "metrics.json").read_text(encoding="utf-8"))
            except (OSError, ValueError) as err:
                log.error("--dl19 %s: %s", item, err)
                return 2
            mean = m.get("mean", {})
            rows.append(
                f"| {label} | {mean.get('ndcg@10', float('nan')):.4f} | "
                f"{mean.get('map', float('nan')):.4f} | {m.get('num_queries')} |"
            )
        table += "\n".join(rows) + "\n"
    if args.out:
        atomic_write_text(args.out, table)
        log.info("wrote %s", args.out)
    if args.doc:
        try:
            splice_file(args.doc, args.block, table)
        except (OSError, PresdepError) as err:
            log.error("%s", err)
            return 2
        log.info("wrote the %s block of %s", args.block, args.doc)
    if not args.out and not args.doc:
        sys.stdout.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
