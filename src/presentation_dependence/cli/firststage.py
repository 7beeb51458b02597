"""``presdep bm25``: the Java-free BM25 first stage (bm25s) over a BEIR folder.

presdep bm25 FOLDER [--out RUN] [--preset pyserini-flat] [--k1 0.9 --b 0.4 ...]

Writes a TREC run and ``dataset_meta.yaml`` beside it (the parameters and, unless --no-eval,
the run's nDCG@10 against ``qrels/<split>.tsv``); ``presdep rerank RUN --beir FOLDER`` reranks
it. ``scripts/data/run_bm25s.py`` is a shim of this command.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from presentation_dependence.cli.common import EXIT_OK, Subparsers, command

__all__ = ["register"]


def register(sub: Subparsers) -> None:
    p = command(
        sub,
        "bm25",
        _cmd_bm25,
        "BM25 first stage (bm25s, no Java) over a BEIR folder -> a TREC run",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("folder", help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
    p.add_argument("--out", help="TREC run to write (default data/<folder name>/bm25s.trec)")
    p.add_argument("--split", default="test", help="qrels split whose queries are run")
    p.add_argument("--all-queries", action="store_true", help="run every query in queries.jsonl")
    p.add_argument("--preset", default="pyserini-flat", help="pyserini-flat (default) or plain")
    p.add_argument(
        "--method",
        choices=["lucene", "robertson", "atire", "bm25l", "bm25+"],
        help="bm25s scoring variant (preset's otherwise)",
    )
    p.add_argument("--k1", type=float, help="term-frequency saturation (preset's otherwise)")
    p.add_argument("--b", type=float, help="length normalisation (preset's otherwise)")
    p.add_argument("--stemmer", help="PyStemmer algorithm (porter, english, ...) or 'none'")
    p.add_argument("--stopwords", choices=["lucene-en", "none"], help="stopword list")
    p.add_argument("--depth", type=int, help="documents per query (preset: 1000)")
    p.add_argument("--keep-query-ids", action="store_true", help="keep docs whose id is the qid")
    p.add_argument("--no-eval", action="store_true", help="do not evaluate against the qrels")
    p.add_argument("--dataset", help="dataset name in dataset_meta.yaml (default: folder name)")


def _cmd_bm25(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.firststage.bm25 import params_from, run_bm25s_beir

    folder = Path(args.folder)
    out = Path(args.out) if args.out else Path("data") / folder.name / "bm25s.trec"
    params = params_from(
        args.preset,
        method=args.method,
        k1=args.k1,
        b=args.b,
        stemmer=args.stemmer,
        stopwords=args.stopwords,
        depth=args.depth,
        remove_query_ids=False if args.keep_query_ids else None,
    )
    res = run_bm25s_beir(
        folder,
        out,
        params,
        split=args.split,
        all_queries=args.all_queries,
        evaluate=not args.no_eval,
        dataset=args.dataset,
        argv=list(argv),
    )
    figures = ", ".join(f"{k} {v:.4f}" for k, v in (res.metrics or {}).items()) or "not evaluated"
    sys.stdout.write(f"{res.run_path}: {res.num_queries} queries; {figures}; {params.describe()}\n")
    return EXIT_OK
