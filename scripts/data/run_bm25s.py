"""Java-free BM25 first stage (bm25s) over a BEIR-layout folder: a TREC run + dataset_meta.yaml.

    python scripts/data/run_bm25s.py ../shared/data/beir-scifact --out data/beir-scifact/bm25s.trec

A shim of ``presdep bm25`` (the same flags: ``presdep bm25 -h``). The default preset,
``pyserini-flat``, emulates Pyserini's BEIR BM25 flat (Lucene BM25 k1=0.9 b=0.4, Porter
stemmer, Lucene's English stopwords, title+text); docs/DATA-SETUP.md has the measured nDCG@10.
"""

from __future__ import annotations

import sys

from presentation_dependence.cli import run_script

main = run_script("bm25")

if __name__ == "__main__":
    sys.exit(main())
