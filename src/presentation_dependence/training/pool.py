"""The training pool of the study: 900+ non-TREC-DL queries with candidates, split by query.

:func:`build_pool` reads collections of ``../shared/data`` in place and writes one fixture file
(``io/fixture.py`` JSONL: query, candidates with full text, qrels) per source and split, plus
``splits.json`` recording every query of every split, the seed and the rule:

=========  ==============================================  ===========  ==================
source     candidates                                      labels       licence
=========  ==============================================  ===========  ==================
hotpotqa   the 10 distractor-setting paragraphs, file      supporting   CC BY-SA 4.0
           order (``title: text``)                         = 1
scifact    bm25s top-k over title + abstract (the          BEIR qrels   CC BY-NC 2.0
           ``pyserini-flat`` preset, firststage/bm25.py)
vaswani    bm25s top-k, same preset                        qrels        freely distributed
noveleval  the 20 judged web passages (committed fixture)  0–2          Apache-2.0 repo
=========  ==============================================  ===========  ==================

Each source's queries are shuffled by ``named_rng(seed, "pool-split", source)`` and the first
``heldout`` go to the λ-selection split, the rest to training. No TREC DL query is in the pool
(DL19 is the study's test set; ``training/splits.py`` checks again when training).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from presentation_dependence.data.hotpotqa import read_hotpotqa
from presentation_dependence.errors import PresdepError
from presentation_dependence.firststage.bm25 import PRESETS, bm25_search
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.io.beir import read_beir_corpus, read_beir_qrels, read_beir_queries
from presentation_dependence.io.fixture import read_fixture, write_fixture
from presentation_dependence.metrics.stats import named_rng
from presentation_dependence.records import Candidate, Qrels, Query, RerankRequest

__all__ = ["DEFAULT_HELDOUT", "POOL_LICENCES", "PoolSource", "build_pool", "split_queries"]

log = logging.getLogger(__name__)

DEFAULT_HELDOUT: dict[str, int] = {"hotpotqa": 50, "scifact": 30, "vaswani": 10, "noveleval": 3}

# The licence of each source's texts and labels (the table above; ../shared/data/*/SOURCE.md).
POOL_LICENCES: dict[str, str] = {
    "hotpotqa": "HotpotQA, CC BY-SA 4.0",
    "scifact": "SciFact, CC BY-NC 2.0 (non-commercial)",
    "vaswani": "Vaswani (NPL), freely distributed research collection",
    "noveleval": "NovelEval, Apache-2.0 repository; web passages",
}


@dataclass(frozen=True)
class PoolSource:
    """One source's requests (candidates in first-stage order) and judgements."""

    name: str
    requests: tuple[RerankRequest, ...]
    qrels: Qrels


def split_queries(qids: Sequence[str], heldout: int, seed: int, source: str) -> tuple[list, list]:
    """``(train, heldout)`` qids: a seeded shuffle, the first ``heldout`` held out. Pure."""
    if not 0 <= heldout <= len(qids):
        raise PresdepError(f"{source}: {heldout} held-out queries asked, {len(qids)} exist")
    order = [qids[i] for i in named_rng(seed, "pool-split", source).permutation(len(qids))]
    return order[heldout:], order[:heldout]


def _bm25_source(name: str, folder: Path, top_k: int) -> PoolSource:
    corpus = read_beir_corpus(folder)
    topics = read_beir_queries(folder)
    qrels = read_beir_qrels(folder, "test")
    queries = {q: t for q, t in topics.queries.items() if q in qrels.judgements}
    docids = list(corpus)
    params = replace(PRESETS["pyserini-flat"], depth=top_k)
    run = bm25_search(docids, [corpus[d] for d in docids], queries, params)
    requests = []
    for q, text in queries.items():
        entries = run.entries.get(q, ())
        if entries:
            cands = tuple(Candidate(e.docid, corpus[e.docid], e.rank, e.score) for e in entries)
            requests.append(RerankRequest(Query(q, text), cands))
    judged = {r.query.qid: dict(qrels.judgements[r.query.qid]) for r in requests}
    return PoolSource(name, tuple(requests), Qrels(judged))


def load_sources(shared: Path, noveleval: Path, top_k: int) -> list[PoolSource]:
    """Every pool source read from ``shared`` (and the committed NovelEval fixture)."""
    hotpot = read_hotpotqa(
        shared / "hotpotqa-distractor-dev500" / "hotpotqa_dev_distractor_500.ircot_format.jsonl"
    )
    novel_requests, novel_qrels = read_fixture(noveleval)
    return [
        PoolSource("hotpotqa", hotpot.requests, hotpot.qrels),
        _bm25_source("scifact", shared / "beir-scifact", top_k),
        _bm25_source("vaswani", shared / "vaswani-npl" / "beir", top_k),
        PoolSource("noveleval", tuple(novel_requests), novel_qrels),
    ]


def build_pool(
    sources: Sequence[PoolSource],
    out: str | Path,
    *,
    seed: int = 0,
    heldout: Mapping[str, int] | None = None,
) -> dict[str, object]:
    """Split every source by query and write ``<out>/<source>-{train,heldout}.jsonl`` +
    ``splits.json``; returns the splits record."""
    out = Path(out)
    heldout = dict(DEFAULT_HELDOUT if heldout is None else heldout)
    record: dict[str, object] = {"seed": seed, "rule": "named_rng(seed, 'pool-split', source)"}
    parts: dict[str, dict[str, list[str]]] = {}
    for src in sources:
        by_id = {r.query.qid: r for r in src.requests}
        train, held = split_queries(list(by_id), heldout.get(src.name, 0), seed, src.name)
        parts[src.name] = {"train": train, "heldout": held}
        for part, chosen in (("train", train), ("heldout", held)):
            reqs = [by_id[q] for q in chosen]
            qrels = Qrels({q: dict(src.qrels.judgements.get(q, {})) for q in chosen})
            path = write_fixture(out / f"{src.name}-{part}.jsonl", reqs, qrels)
            log.info("wrote %s: %d queries", path, len(reqs))
    record["splits"] = parts
    record["counts"] = {name: {part: len(q) for part, q in p.items()} for name, p in parts.items()}
    atomic_write_text(out / "splits.json", json.dumps(record, indent=1) + "\n")
    return record
