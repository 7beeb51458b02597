"""Exploratory probe behind docs/SCORING.md §1.4: how the skeleton's filler label moves the scores.

For each filler, scores the first N DL19 queries (BM25 top-20, passages cut to 300 characters)
with the embedded model in one B=20 prompt and prints a Markdown table: mean E[g], Spearman of
score against slot, Spearman of score against the qrels grade, and nDCG@10. Not part of the
package: the template's filler is fixed (``pathc_grade_v1`` writes grade 1); this overrides it
on the prompt builder only (grade labels only: the slot check refuses other fillers). Usage: python scripts/probes/filler_probe.py [--queries 6]
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from collections.abc import Sequence

import numpy as np
from scipy.stats import spearmanr

from presentation_dependence.config import DataConfig
from presentation_dependence.data import load_dataset
from presentation_dependence.metrics.ranking import ndcg_at_k
from presentation_dependence.rerankers.grade import GradeReranker, GradeRerankerOptions

DL19 = "../shared/data/trec-dl19-passage/"


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--queries", type=int, default=6)
    p.add_argument("--fillers", nargs="+", type=int, default=[0, 1, 2, 3], help="grade indices")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    ds = load_dataset(
        DataConfig(
            dataloader_class="RankLLMJsonLoader",
            path=DL19 + "bm25_top100_dl19.json",
            qrels=DL19 + "qrels.dl19-passage.txt",
            top_k=20,
            max_queries=args.queries,
        )
    )
    assert ds.qrels is not None
    reranker = GradeReranker(GradeRerankerOptions(max_passage_chars=300, num_threads=1))
    _, builder = reranker._ensure_loaded()
    print("| filler | mean E[g] | Spearman(E[g], slot) | Spearman(E[g], qrel) | nDCG@10 |")
    print("|---|---|---|---|---|")
    bm25 = []
    for filler in args.fillers:
        builder.template = dataclasses.replace(builder.template, filler_index=filler)
        builder.filler = builder.grade_labels[filler]
        scores, slots, grades, ndcgs = [], [], [], []
        for req in ds.requests:
            res = reranker.rank(req.query, req.candidates)
            s = np.array([it.score for it in res.items])
            g = np.array([ds.qrels.grade(req.query.qid, c.docid) for c in req.candidates])
            ideal = list(ds.qrels.judgements[req.query.qid].values())
            scores += list(s)
            slots += list(range(1, len(s) + 1))
            grades += list(g)
            ndcgs.append(ndcg_at_k(s, g, k=10, ideal_gains=ideal))
            if filler == args.fillers[0]:
                bm25.append(ndcg_at_k(-np.arange(len(s)), g, k=10, ideal_gains=ideal))
        print(
            f"| `{filler}` | {np.mean(scores):.2f} | {spearmanr(scores, slots)[0]:+.2f} "
            f"| {spearmanr(scores, grades)[0]:+.2f} | {np.mean(ndcgs):.3f} |"
        )
    print(f"\nBM25 order on the same candidates: nDCG@10 {np.mean(bm25):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
