"""The training pool: seeded query splits and the files they are written to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from presentation_dependence.errors import PresdepError
from presentation_dependence.io.fixture import read_fixture
from presentation_dependence.records import Candidate, Qrels, Query, RerankRequest
from presentation_dependence.training.pool import PoolSource, build_pool, split_queries

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def _source(name: str, n: int) -> PoolSource:
    reqs = tuple(
        RerankRequest(Query(f"{name}{i}", f"query {i}"), (Candidate(f"d{i}", f"text {i}", 1),))
        for i in range(n)
    )
    return PoolSource(name, reqs, Qrels({f"{name}{i}": {f"d{i}": 1} for i in range(n)}))


def test_split_is_seeded_disjoint_and_complete() -> None:
    qids = [f"q{i}" for i in range(20)]
    train, held = split_queries(qids, 5, 0, "src")
    assert len(held) == 5 and len(train) == 15
    assert set(train) | set(held) == set(qids) and not set(train) & set(held)
    assert split_queries(qids, 5, 0, "src") == (train, held)
    assert split_queries(qids, 5, 1, "src") != (train, held)
    assert split_queries(qids, 5, 0, "other") != (train, held)  # each source its own stream
    with pytest.raises(PresdepError, match="21 held-out"):
        split_queries(qids, 21, 0, "src")


def test_build_pool_writes_every_split_and_records_it(tmp_path: Path) -> None:
    record = build_pool([_source("a", 6), _source("b", 4)], tmp_path, seed=3, heldout={"a": 2})
    splits = json.loads((tmp_path / "splits.json").read_text())
    assert splits == json.loads(json.dumps(record))
    assert splits["counts"] == {"a": {"train": 4, "heldout": 2}, "b": {"train": 4, "heldout": 0}}
    reqs, qrels = read_fixture(tmp_path / "a-heldout.jsonl")
    assert [r.query.qid for r in reqs] == splits["splits"]["a"]["heldout"]
    assert all(qrels.grade(r.query.qid, r.candidates[0].docid) == 1 for r in reqs)


@pytest.mark.integration
def test_real_pool_has_600_training_queries_and_no_trec_dl(tmp_path: Path) -> None:
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} not found (set up ../shared/data)")
    pytest.importorskip("bm25s")
    from presentation_dependence.training.pool import load_sources

    noveleval = Path(__file__).resolve().parents[2] / "fixtures" / "noveleval" / "noveleval.jsonl"
    record = build_pool(load_sources(SHARED, noveleval, 20), tmp_path, seed=0)
    counts = record["counts"]
    assert isinstance(counts, dict)
    assert sum(c["train"] for c in counts.values()) >= 600
    dl19 = {
        line.split("\t")[1].strip().lower()
        for line in (SHARED / "trec-dl19-passage" / "topics.dl19-passage.txt")
        .read_text()
        .splitlines()
    }
    for path in tmp_path.glob("*.jsonl"):
        reqs, _ = read_fixture(path)
        assert not {r.query.text.strip().lower() for r in reqs} & dl19
