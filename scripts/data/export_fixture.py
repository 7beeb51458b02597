"""Export any loadable data to a self-contained fixture JSONL (query, candidates with text, qrels).

Example (the committed NovelEval fixture)::

    python scripts/data/export_fixture.py --loader RankLLMJsonLoader \
        --path ../shared/data/noveleval/data.json --qrels ../shared/data/noveleval/qrels.txt \
        --out fixtures/noveleval/noveleval.jsonl
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from presentation_dependence.config import DataConfig
from presentation_dependence.data import load_dataset
from presentation_dependence.errors import PresdepError
from presentation_dependence.io.fixture import write_fixture


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--loader",
        required=True,
        help="FixtureLoader | BeirLoader | RankLLMJsonLoader | TrecRunLoader",
    )
    for key in ("path", "run", "corpus", "topics", "qrels"):
        p.add_argument(f"--{key}", help=f"the data block's '{key}'")
    p.add_argument("--split", default="test")
    p.add_argument("--top-k", type=int, default=100)
    p.add_argument("--max-queries", type=int)
    p.add_argument("--out", required=True, help="fixture JSONL to write")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    log = logging.getLogger("export_fixture")
    try:
        cfg = DataConfig(
            dataloader_class=args.loader,
            path=args.path,
            run=args.run,
            corpus=args.corpus,
            topics=args.topics,
            qrels=args.qrels,
            split=args.split,
            top_k=args.top_k,
            max_queries=args.max_queries,
        )
        ds = load_dataset(cfg)
        write_fixture(args.out, ds.requests, ds.qrels)
    except PresdepError as e:
        log.error("%s", e)
        return 2
    log.info(
        "wrote %s: %d queries, %d candidates",
        args.out,
        len(ds.requests),
        sum(len(r.candidates) for r in ds.requests),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
