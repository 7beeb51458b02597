"""The documents every benchmark scores: DL19's BM25 top-20 where the shared data is, else the
committed NovelEval fixture (a fresh clone, CI)."""

from __future__ import annotations

from pathlib import Path

from presentation_dependence.config import DataConfig
from presentation_dependence.data import load_dataset
from presentation_dependence.records import RerankRequest

__all__ = ["DL19", "NOVELEVAL", "bench_requests"]

DL19 = "../shared/data/trec-dl19-passage/bm25_top100_dl19.json"
NOVELEVAL = "fixtures/noveleval/noveleval.jsonl"


def bench_requests(queries: int) -> tuple[list[RerankRequest], str]:
    """The first ``queries`` requests (20 candidates each) and what they are, for the report."""
    if Path(DL19).exists():
        cfg = DataConfig(
            dataloader_class="RankLLMJsonLoader", path=DL19, top_k=20, max_queries=queries
        )
        label = "TREC DL19 passage, BM25 top-20"
    else:
        cfg = DataConfig(
            dataloader_class="FixtureLoader", path=NOVELEVAL, top_k=20, max_queries=queries
        )
        label = "NovelEval (committed fixture)"
    return list(load_dataset(cfg).requests), label
