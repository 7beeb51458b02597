"""Turn a TREC run plus a Pyserini text index into a FixtureLoader file (needs Java 21).

    python scripts/data/build_fixture_pyserini.py --run data/trec-dl19-passage/bm25.trec \
        --index msmarco-v1-passage --topics data/trec-dl19-passage/topics.tsv \
        --qrels data/trec-dl19-passage/qrels.txt --top-k 100 --out data/trec-dl19-passage/fixture.jsonl

The index must store raw documents (Pyserini's BEIR ``.flat`` and MS MARCO passage indexes do).
``--topics``/``--qrels`` take a file or a Pyserini name. Without Pyserini, Java 21 or (for a
prebuilt index not cached yet) network it stops before any work and names what is missing.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from presentation_dependence.cli import setup_logging
from presentation_dependence.errors import PresdepError
from presentation_dependence.firststage.pyserini import build_fixture_pyserini

log = logging.getLogger("presentation_dependence.scripts.build_fixture_pyserini")


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--run", required=True, help="TREC run over the index's documents")
    p.add_argument("--index", required=True, help="prebuilt index name or local index folder")
    p.add_argument("--topics", required=True, help="'qid<TAB>text' file or Pyserini topics name")
    p.add_argument("--qrels", help="TREC qrels file or Pyserini qrels name (optional)")
    p.add_argument("--top-k", type=int, default=100, help="candidates kept per query")
    p.add_argument("--out", required=True, help="fixture JSONL to write")
    p.add_argument("--assume-cached", action="store_true", help="skip the network check")
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    setup_logging(args.verbose)
    try:
        out = build_fixture_pyserini(
            args.run,
            args.index,
            args.topics,
            args.out,
            qrels=args.qrels,
            top_k=args.top_k,
            assume_cached=args.assume_cached,
        )
    except PresdepError as e:
        log.error("%s", e)
        return 2
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
