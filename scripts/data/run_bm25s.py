"""Java-free BM25 first stage (bm25s) over a BEIR-layout folder: a TREC run + dataset_meta.yaml.

    python scripts/data/run_bm25s.py ../shared/data/beir-scifact --out data/beir-scifact/bm25s.trec

The default preset, ``pyserini-flat``, emulates Pyserini's BEIR BM25 flat (Lucene BM25 k1=0.9
b=0.4, Porter stemmer, Lucene's English stopwords, title+text); docs/DATA-SETUP.md has the
measured nDCG@10. The run is evaluated against ``qrels/<split>.tsv`` with pytrec_eval and the
figure is recorded in ``dataset_meta.yaml`` next to the run.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from presentation_dependence.cli import setup_logging
from presentation_dependence.errors import PresdepError
from presentation_dependence.firststage.bm25 import PRESETS, params_from, run_bm25s_beir

log = logging.getLogger("presentation_dependence.scripts.run_bm25s")


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("folder", help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
    p.add_argument("--out", help="TREC run to write (default data/<folder name>/bm25s.trec)")
    p.add_argument("--split", default="test", help="qrels split whose queries are run")
    p.add_argument("--all-queries", action="store_true", help="run every query in queries.jsonl")
    p.add_argument("--preset", default="pyserini-flat", choices=sorted(PRESETS))
    p.add_argument("--method", choices=["lucene", "robertson", "atire", "bm25l", "bm25+"])
    p.add_argument("--k1", type=float)
    p.add_argument("--b", type=float)
    p.add_argument("--stemmer", help="PyStemmer algorithm (porter, english, ...) or 'none'")
    p.add_argument("--stopwords", choices=["lucene-en", "none"])
    p.add_argument("--depth", type=int, help="documents per query (preset: 1000)")
    p.add_argument("--keep-query-ids", action="store_true", help="keep docs whose id is the qid")
    p.add_argument("--no-eval", action="store_true", help="do not evaluate against the qrels")
    p.add_argument("--dataset", help="dataset name in dataset_meta.yaml (default: folder name)")
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = make_parser().parse_args(argv)
    setup_logging(args.verbose)
    folder = Path(args.folder)
    out = Path(args.out) if args.out else Path("data") / folder.name / "bm25s.trec"
    try:
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
            argv=["python", "scripts/data/run_bm25s.py", *argv],
        )
    except PresdepError as e:
        log.error("%s", e)
        return 2
    figures = ", ".join(f"{k} {v:.4f}" for k, v in (res.metrics or {}).items()) or "not evaluated"
    print(f"{res.run_path}: {res.num_queries} queries; {figures}; {params.describe()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
