"""Build the training and held-out fixtures of the CPU-scale study (docs/studies/self-distillation.md).

Writes fixture JSONL files (query, candidates with text, qrels) to ``--out`` (data/study/):

* ``scifact-train.jsonl`` / ``scifact-heldout.jsonl``: BEIR SciFact test claims, BM25 top-20
  over title + abstract (k1 = 0.9, b = 0.4, lower-cased alphanumeric tokens, no stemming;
  on all 300 queries this BM25 gives nDCG@10 0.661 per the data's SOURCE.md); relevant
  abstracts grade 1. CC BY-NC 2.0: non-commercial research only.
* ``hotpotqa-train.jsonl`` / ``hotpotqa-heldout.jsonl``: HotpotQA distractor dev questions with
  their paragraphs (title: text) in file order; the 2 supporting paragraphs grade 2 (CC BY-SA 4.0).
* ``noveleval-train.jsonl`` / ``noveleval-heldout.jsonl``: the committed NovelEval fixture
  (21 questions x 20 passages, grades 0-2), split by query.

Queries are split by a seeded shuffle (``--seed``), so train and held-out never share a query.
None of these is a DL19 query (the study's test set); ``select_lambda.py`` checks it again.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy import sparse

from presentation_dependence.errors import PresdepError
from presentation_dependence.io.beir import read_beir_corpus, read_beir_qrels, read_beir_queries
from presentation_dependence.io.fixture import read_fixture, write_fixture
from presentation_dependence.records import Candidate, Qrels, Query, RerankRequest
from presentation_dependence.seeding import named_rng

SHARED = Path("../shared/data")
_TOKEN = re.compile(r"[a-z0-9]+")
log = logging.getLogger("prepare_study_data")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class BM25:
    """Okapi BM25 over an in-memory corpus (sparse matrix of per-term document weights)."""

    def __init__(self, docs: dict[str, str], k1: float = 0.9, b: float = 0.4) -> None:
        self.ids = list(docs)
        vocab: dict[str, int] = {}
        rows, cols, tfs = [], [], []
        lengths = np.zeros(len(self.ids))
        for i, d in enumerate(self.ids):
            counts = Counter(tokens(docs[d]))
            lengths[i] = sum(counts.values())
            for term, count in counts.items():
                rows.append(i)
                cols.append(vocab.setdefault(term, len(vocab)))
                tfs.append(count)
        tf = np.asarray(tfs, dtype=np.float64)
        norm = k1 * (1 - b + b * lengths[rows] / lengths.mean())
        weights = tf * (k1 + 1) / (tf + norm)
        self.matrix = sparse.csr_matrix((weights, (rows, cols)), shape=(len(self.ids), len(vocab)))
        df = np.bincount(np.asarray(cols), minlength=len(vocab))
        n = len(self.ids)
        self.idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
        self.vocab = vocab

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        q = np.zeros(len(self.vocab))
        for term in tokens(query):
            j = self.vocab.get(term)
            if j is not None:
                q[j] += self.idf[j]
        scores = self.matrix @ q
        top = np.argsort(-scores, kind="stable")[:k]
        return [(self.ids[i], float(scores[i])) for i in top]


def split(
    items: Sequence[str], n_train: int, n_heldout: int, seed: int, name: str
) -> tuple[list[str], list[str]]:
    order = [items[i] for i in named_rng(seed, "study-split", name).permutation(len(items))]
    if n_train + n_heldout > len(order):
        raise PresdepError(f"{name}: {n_train}+{n_heldout} queries asked, {len(order)} exist")
    return order[:n_train], order[n_train : n_train + n_heldout]


def scifact(
    folder: Path, n_train: int, n_heldout: int, seed: int, k: int
) -> dict[str, tuple[list[RerankRequest], Qrels]]:
    corpus = read_beir_corpus(folder)
    topics = read_beir_queries(folder)
    qrels = read_beir_qrels(folder, "test")
    qids = [q for q in topics.queries if q in qrels.judgements]
    train, heldout = split(qids, n_train, n_heldout, seed, "scifact")
    bm25 = BM25(corpus)
    out = {}
    for part, chosen in (("train", train), ("heldout", heldout)):
        reqs = [
            RerankRequest(
                Query(q, topics[q]),
                tuple(
                    Candidate(d, corpus[d], r, s)
                    for r, (d, s) in enumerate(bm25.search(topics[q], k), 1)
                ),
            )
            for q in chosen
        ]
        out[part] = (reqs, Qrels({q: dict(qrels.judgements[q]) for q in chosen}))
    return out


def hotpotqa(
    path: Path, n_train: int, n_heldout: int, seed: int
) -> dict[str, tuple[list[RerankRequest], Qrels]]:
    records = [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    by_id = {r["question_id"]: r for r in records}
    train, heldout = split(list(by_id), n_train, n_heldout, seed, "hotpotqa")
    out = {}
    for part, chosen in (("train", train), ("heldout", heldout)):
        reqs, judged = [], {}
        for q in chosen:
            r = by_id[q]
            cands = [
                Candidate(f"{q}-{c['id']}", f"{c['title']}: {c['paragraph_text']}", pos)
                for pos, c in enumerate(r["contexts"], 1)
            ]
            reqs.append(RerankRequest(Query(q, r["question_text"]), tuple(cands)))
            judged[q] = {f"{q}-{c['id']}": 2 if c["is_supporting"] else 0 for c in r["contexts"]}
        out[part] = (reqs, Qrels(judged))
    return out


def noveleval(
    path: Path, n_train: int, n_heldout: int, seed: int
) -> dict[str, tuple[list[RerankRequest], Qrels]]:
    requests, qrels = read_fixture(path)
    by_id = {r.query.qid: r for r in requests}
    train, heldout = split(list(by_id), n_train, n_heldout, seed, "noveleval")
    return {
        part: (
            [by_id[q] for q in chosen],
            Qrels({q: dict(qrels.judgements.get(q, {})) for q in chosen}),
        )
        for part, chosen in (("train", train), ("heldout", heldout))
    }


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", default="data/study")
    p.add_argument("--shared", default=str(SHARED), help="the shared data folder")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--top-k", type=int, default=20, help="SciFact BM25 depth")
    p.add_argument("--scifact", type=int, nargs=2, default=(16, 6), metavar=("TRAIN", "HELDOUT"))
    p.add_argument("--hotpotqa", type=int, nargs=2, default=(8, 3), metavar=("TRAIN", "HELDOUT"))
    p.add_argument("--noveleval", type=int, nargs=2, default=(8, 3), metavar=("TRAIN", "HELDOUT"))
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    shared = Path(args.shared)
    try:
        sets = {
            "scifact": scifact(
                shared / "beir-scifact", args.scifact[0], args.scifact[1], args.seed, args.top_k
            ),
            "hotpotqa": hotpotqa(
                shared
                / "hotpotqa-distractor-dev500"
                / "hotpotqa_dev_distractor_500.ircot_format.jsonl",
                args.hotpotqa[0],
                args.hotpotqa[1],
                args.seed,
            ),
            "noveleval": noveleval(
                Path("fixtures/noveleval/noveleval.jsonl"),
                args.noveleval[0],
                args.noveleval[1],
                args.seed,
            ),
        }
    except (PresdepError, OSError) as e:
        log.error("%s", e)
        return 2
    for name, parts in sets.items():
        for part, (reqs, qrels) in parts.items():
            path = write_fixture(Path(args.out) / f"{name}-{part}.jsonl", reqs, qrels)
            log.info(
                "wrote %s: %d queries, %d candidates",
                path,
                len(reqs),
                sum(len(r.candidates) for r in reqs),
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
