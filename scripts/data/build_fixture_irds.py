"""Turn a TREC run over an ir_datasets corpus into a FixtureLoader file.

    python scripts/data/build_fixture_irds.py --dataset msmarco-passage/trec-dl-2019/judged \
        --run data/trec-dl19-passage/bm25.trec --top-k 100 --out data/trec-dl19-passage/fixture.jsonl

Query texts and (unless --qrels is given) judgements come from the dataset. Without the
ir_datasets package, or without network when ir_datasets has no local copy of the dataset
(IR_DATASETS_HOME, default ~/.ir_datasets), it stops before any work and names what is missing.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from presentation_dependence.cli import setup_logging
from presentation_dependence.data.irds import build_fixture_irds
from presentation_dependence.errors import PresdepError

log = logging.getLogger("presentation_dependence.scripts.build_fixture_irds")


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dataset", required=True, help="ir_datasets id, e.g. beir/scifact/test")
    p.add_argument("--run", required=True, help="TREC run over the dataset's documents")
    p.add_argument("--qrels", help="TREC qrels file (default: the dataset's own judgements)")
    p.add_argument("--top-k", type=int, default=100, help="candidates kept per query")
    p.add_argument("--out", required=True, help="fixture JSONL to write")
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    setup_logging(args.verbose)
    try:
        out = build_fixture_irds(
            args.dataset, args.run, args.out, top_k=args.top_k, qrels=args.qrels
        )
    except PresdepError as e:
        log.error("%s", e)
        return 2
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
