"""Which queries a loader keeps: judged_only, then max_queries (first N, or N drawn with a seed).

The rule lives in ``Loader._select``; these tests go through the fixture loader and the two
run-based loaders (BEIR, TREC run), whose own truncation was folded into that rule.
"""

from __future__ import annotations

import json
import zlib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from presentation_dependence.data import load_dataset
from presentation_dependence.data.config import DataConfig
from presentation_dependence.data.loaders import pick_queries
from presentation_dependence.errors import ConfigError
from presentation_dependence.io import write_fixture, write_qrels
from presentation_dependence.records import Candidate, Qrels, Query, RerankRequest

QIDS = [f"q{i}" for i in range(1, 21)]  # file order q1..q20
JUDGED = ["q2", "q3", "q5", "q8", "q13", "q19"]  # what _fixture's own qrels judge


def _fixture(tmp_path: Path, qids: list[str] = QIDS, judged: list[str] = JUDGED) -> Path:
    reqs = [
        RerankRequest(
            Query(q, f"query {q}"),
            tuple(Candidate(f"{q}-d{r}", f"text {r}", r, 10.0 - r) for r in (1, 2, 3)),
        )
        for q in qids
    ]
    qrels = Qrels({q: {f"{q}-d2": 1} for q in judged}) if judged else None
    return write_fixture(tmp_path / "fx.jsonl", reqs, qrels)


def _load(path: Path, **kw: object) -> list[str]:
    return load_dataset(DataConfig(path=str(path), **kw)).qids()  # type: ignore[arg-type]


def _is_subsequence(part: list[str], whole: list[str]) -> bool:
    it = iter(whole)
    return all(q in it for q in part)


# --- the draw ------------------------------------------------------------------------------------


def test_sample_is_deterministic_a_subset_in_file_order_and_seed_dependent(tmp_path: Path) -> None:
    path = _fixture(tmp_path)
    draws = {seed: _load(path, max_queries=5, query_sample_seed=seed) for seed in range(4)}
    for seed, qids in draws.items():
        assert len(qids) == 5 and len(set(qids)) == 5
        assert _is_subsequence(qids, QIDS)  # drawn, then kept in file order
        assert _load(path, max_queries=5, query_sample_seed=seed) == qids  # same seed, same set
    assert len({tuple(q) for q in draws.values()}) == 4  # four seeds, four different sets
    assert draws[0] != QIDS[:5]  # a draw, not the first five


def test_sample_follows_the_documented_stream() -> None:
    """``rng_from(seed, "query-sample")`` is ``default_rng([seed, crc32("query-sample")])``:
    recorded seeds must keep naming the same queries."""
    rng = np.random.default_rng([7, zlib.crc32(b"query-sample")])
    expected = sorted(int(i) for i in rng.choice(len(QIDS), size=6, replace=False))
    assert pick_queries(QIDS, 6, 7) == [QIDS[i] for i in expected]


def test_sample_is_uniform_over_queries() -> None:
    """Over 600 seeds drawing 3 of 12, each query is drawn about 150 times (sd 10.6)."""
    qids = QIDS[:12]
    counts = Counter(q for seed in range(600) for q in pick_queries(qids, 3, seed))
    assert set(counts) == set(qids)
    assert all(100 <= counts[q] <= 200 for q in qids), counts
    # and the first position is no more likely than the last (a sort bug would show here)
    assert abs(counts["q1"] - counts["q12"]) < 60


def test_no_more_queries_than_max_keeps_all(tmp_path: Path) -> None:
    path = _fixture(tmp_path)
    assert _load(path, max_queries=20, query_sample_seed=3) == QIDS
    assert _load(path, max_queries=50, query_sample_seed=3) == QIDS
    assert pick_queries(["b", "a"], None, None) == ["b", "a"]


def test_without_a_seed_the_first_n_in_file_order(tmp_path: Path) -> None:
    path = _fixture(tmp_path)
    assert _load(path, max_queries=4) == ["q1", "q2", "q3", "q4"]
    assert _load(path) == QIDS


# --- judged_only -------------------------------------------------------------------------------


def test_judged_only_drops_unjudged_queries_before_the_limit(tmp_path: Path) -> None:
    path = _fixture(tmp_path)
    assert _load(path, judged_only=True) == JUDGED
    assert _load(path, judged_only=True, max_queries=3) == ["q2", "q3", "q5"]
    sampled = _load(path, judged_only=True, max_queries=4, query_sample_seed=1)
    assert len(sampled) == 4 and set(sampled) <= set(JUDGED) and _is_subsequence(sampled, JUDGED)
    # the same draw as over the judged queries alone
    assert sampled == pick_queries(JUDGED, 4, 1)
    ds = load_dataset(DataConfig(path=str(path), judged_only=True, max_queries=3))
    assert ds.qrels is not None and ds.qrels.qids() == ["q2", "q3", "q5"]


def test_judged_only_uses_the_override_qrels(tmp_path: Path) -> None:
    """data.qrels replaces the fixture's own judgements before queries are selected."""
    path = _fixture(tmp_path)
    override = write_qrels(Qrels({"q4": {"q4-d1": 0}, "q20": {"q20-d3": 2}}), tmp_path / "q.txt")
    ds = load_dataset(DataConfig(path=str(path), qrels=str(override), judged_only=True))
    assert ds.qids() == ["q4", "q20"]  # a grade-0 judgement still makes a judged query
    assert ds.qrels is not None and ds.qrels.to_dict() == {"q4": {"q4-d1": 0}, "q20": {"q20-d3": 2}}


def test_judged_only_without_judgements_is_a_config_error(tmp_path: Path) -> None:
    path = _fixture(tmp_path, judged=[])
    assert len(_load(path)) == 20  # fine without judged_only
    with pytest.raises(ConfigError, match=r"data\.judged_only.*FixtureLoader.*data\.qrels"):
        _load(path, judged_only=True)


# --- the run-based loaders and the log ---------------------------------------------------------


def _beir(tmp_path: Path) -> Path:
    """A BEIR folder of 8 queries (q1 and q5 unjudged) and a run listing them q8..q1."""
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    docs = [{"_id": f"d{i}", "title": "", "text": f"doc {i}"} for i in range(1, 4)]
    queries = [{"_id": f"q{i}", "text": f"query {i}"} for i in range(1, 9)]
    for name, rows in (("corpus.jsonl", docs), ("queries.jsonl", queries)):
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    judged = [f"q{i}" for i in (2, 3, 4, 6, 7, 8)]
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\td1\t1\n" for q in judged)
    )
    lines = [f"q{i} Q0 d{d} {d} {4.0 - d} bm25\n" for i in range(8, 0, -1) for d in (1, 2, 3)]
    (folder / "run.trec").write_text("".join(lines))
    return folder


def test_run_loaders_select_by_the_same_rule(tmp_path: Path) -> None:
    folder = _beir(tmp_path)
    run_order = [f"q{i}" for i in range(8, 0, -1)]
    judged_in_run_order = [q for q in run_order if q not in ("q1", "q5")]
    beir = {"dataloader_class": "BeirLoader", "path": str(folder), "run": str(folder / "run.trec")}
    trec = {
        "dataloader_class": "TrecRunLoader",
        "run": str(folder / "run.trec"),
        "corpus": str(folder / "corpus.jsonl"),
        "topics": str(folder / "topics.tsv"),
        "qrels": str(folder / "qrels.trec"),
    }
    (folder / "topics.tsv").write_text("".join(f"q{i}\tquery {i}\n" for i in range(1, 9)))
    (folder / "qrels.trec").write_text("".join(f"{q} 0 d1 1\n" for q in judged_in_run_order))
    for block in (beir, trec):
        ds = load_dataset(DataConfig(**block, max_queries=3, top_k=2))  # type: ignore[arg-type]
        assert ds.qids() == ["q8", "q7", "q6"]  # unchanged: the first 3 in run order
        assert all(len(r.candidates) == 2 for r in ds.requests)
        sampled = load_dataset(
            DataConfig(**block, max_queries=3, query_sample_seed=5, judged_only=True)  # type: ignore[arg-type]
        ).qids()
        assert sampled == pick_queries(judged_in_run_order, 3, 5)


def test_the_selection_is_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = _fixture(tmp_path)
    with caplog.at_level("INFO", logger="presentation_dependence"):
        _load(path, judged_only=True, max_queries=4, query_sample_seed=2)
    msg = " ".join(r.getMessage() for r in caplog.records)
    assert "kept 4 of 20 queries (6 judged, 4 drawn with query_sample_seed 2)" in msg


# --- config errors -----------------------------------------------------------------------------


def test_seed_without_max_queries_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"data\.query_sample_seed.*data\.max_queries"):
        DataConfig(path="x", query_sample_seed=0)
    with pytest.raises(ConfigError, match=r"data\.query_sample_seed must be >= 0"):
        DataConfig(path="x", max_queries=3, query_sample_seed=-1)


def test_keys_load_from_an_experiment_config() -> None:
    from presentation_dependence.config.experiment import config_from_raw

    raw = {
        "reranker": {"reranker_class": "IdentityReranker"},
        "data": {"path": "x.jsonl", "max_queries": 5, "query_sample_seed": 0, "judged_only": True},
    }
    cfg = config_from_raw(raw, "t")
    assert (cfg.data.max_queries, cfg.data.query_sample_seed, cfg.data.judged_only) == (5, 0, True)
    raw["data"] = {"path": "x.jsonl", "query_sample_seed": 0}
    with pytest.raises(ConfigError, match="query_sample_seed"):
        config_from_raw(raw, "t")
    raw["data"] = {"path": "x.jsonl", "judged_only": "yes"}
    with pytest.raises(ConfigError, match="judged_only"):
        config_from_raw(raw, "t")
