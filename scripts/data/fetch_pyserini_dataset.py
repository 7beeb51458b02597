"""Fetch a collection's first stage with Pyserini (Java 21 + network): data/<dataset>/ holds the
TREC run, ``qrels.txt``, ``topics.tsv`` and ``dataset_meta.yaml`` naming the exact retriever.

    python scripts/data/fetch_pyserini_dataset.py dl19                 # a population collection
    python scripts/data/fetch_pyserini_dataset.py scifact --depth 100
    python scripts/data/fetch_pyserini_dataset.py mine --index PATH --topics T.tsv --qrels Q.txt --k1 0.9 --b 0.4

A collection id (or alias) is looked up in the population (default reranking-primary-18), which
declares its index, topics, qrels and BM25: MS MARCO-tuned (k1=0.82, b=0.68) for TREC DL on
MS MARCO v1, k1=0.9 b=0.4 for v2, flat BM25 (k1=0.9, b=0.4, --remove-query) for BEIR. Mixing
them moves nDCG@10 by 1-3 points, hence the record. Without Pyserini, Java 21 or network the
command stops before any work and names what is missing (exit 2).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from presentation_dependence.cli import setup_logging
from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.firststage.pyserini import PyseriniSpec, fetch_pyserini_dataset
from presentation_dependence.reproduction.populations import load_population

log = logging.getLogger("presentation_dependence.scripts.fetch_pyserini_dataset")


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "dataset", help="a collection id/alias of the population, or a name with --index"
    )
    p.add_argument("--population", default="reranking-primary-18")
    p.add_argument("--index", help="prebuilt index name or local index folder (ad hoc dataset)")
    p.add_argument("--topics", help="Pyserini topics name or a 'qid<TAB>text' file")
    p.add_argument("--qrels", help="Pyserini qrels name or a TREC qrels file")
    p.add_argument("--k1", type=float, help="BM25 k1 (overrides the declared value)")
    p.add_argument("--b", type=float, help="BM25 b (overrides the declared value)")
    p.add_argument("--remove-query", action="store_true", help="drop docs whose id is the qid")
    p.add_argument("--out", help="output folder (default data/<data_dir>)")
    p.add_argument("--depth", type=int, default=1000, help="hits per query")
    p.add_argument("--threads", type=int, default=4)
    p.add_argument(
        "--assume-cached",
        action="store_true",
        help="the prebuilt index is already in Pyserini's cache: skip the network check",
    )
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def spec_from_args(args: argparse.Namespace) -> tuple[PyseriniSpec, Path]:
    if args.index:
        if not (args.topics and args.qrels and args.k1 is not None and args.b is not None):
            raise ConfigError("with --index give --topics, --qrels, --k1 and --b as well")
        label = f"BM25 (k1={args.k1:g}, b={args.b:g}), Pyserini index {args.index}"
        spec = PyseriniSpec(
            args.dataset, args.index, args.topics, args.qrels, args.k1, args.b, label,
            args.remove_query,
        )  # fmt: skip
        return spec, Path(args.out or Path("data") / args.dataset)
    c = load_population(args.population).get(args.dataset)
    src, fs = c.source.pyserini, c.first_stage
    if src is None or fs.k1 is None or fs.b is None:
        raise ConfigError(
            f"{c.id}: the population declares no Pyserini route ({c.notes or c.licence})"
        )
    if c.needs.gated:
        log.warning("%s is gated: %s", c.id, c.notes or c.licence)
    k1 = fs.k1 if args.k1 is None else args.k1
    b = fs.b if args.b is None else args.b
    label = fs.label if (k1, b) == (fs.k1, fs.b) else f"BM25 (k1={k1:g}, b={b:g}), overridden"
    spec = PyseriniSpec(
        c.data_dir, src.index, args.topics or src.topics, args.qrels or src.qrels, k1, b, label,
        fs.remove_query or args.remove_query,
    )  # fmt: skip
    return spec, Path(args.out or Path("data") / c.data_dir)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = make_parser().parse_args(argv)
    setup_logging(args.verbose)
    try:
        spec, out = spec_from_args(args)
        run = fetch_pyserini_dataset(
            spec,
            out,
            depth=args.depth,
            threads=args.threads,
            assume_cached=args.assume_cached,
            argv=["python", "scripts/data/fetch_pyserini_dataset.py", *argv],
        )
    except PresdepError as e:
        log.error("%s", e)
        return 2
    print(f"{run}: {spec.label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
