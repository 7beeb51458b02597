"""EvalManager / evaluate_run: pytrec_eval on real DL19 and on hand-made cases."""

from __future__ import annotations

import math

import pytest

from presentation_dependence.config import EvalConfig
from presentation_dependence.io.trec import read_qrels, read_run
from presentation_dependence.records import Qrels, Run, RunEntry
from presentation_dependence.runners import evaluate_run


def test_dl19_bm25_matches_pyserini(shared_data):
    """Pyserini's published BM25 (k1=0.9, b=0.4) figure on DL19 passage: nDCG@10 = 0.5058."""
    folder = shared_data / "trec-dl19-passage"
    if not folder.is_dir():
        pytest.skip(f"{folder} not found: the DL19 check needs ../shared/data/trec-dl19-passage")
    run = read_run(folder / "bm25_top100_dl19.trec")
    qrels = read_qrels(folder / "qrels.dl19-passage.txt")
    m = evaluate_run(run, qrels, EvalConfig(measures=["ndcg@10"], relevance_level=2))
    assert m["num_queries"] == 43
    assert round(m["mean"]["ndcg@10"], 4) == 0.5058


def _run(rows: dict[str, list[tuple[str, float]]]) -> Run:
    return Run(
        {
            q: tuple(RunEntry(q, d, i + 1, s) for i, (d, s) in enumerate(docs))
            for q, docs in rows.items()
        }
    )


def test_hand_computed_ndcg_map_mrr():
    # q1: grades in rank order 0, 2, 1 ; judged grades {a:2, b:1, c:0}
    run = _run({"q1": [("c", 3.0), ("a", 2.0), ("b", 1.0)]})
    qrels = Qrels({"q1": {"a": 2, "b": 1, "c": 0}})
    m = evaluate_run(run, qrels, EvalConfig(measures=["ndcg@10", "map", "mrr"]))
    dcg = 2 / math.log2(3) + 1 / math.log2(4)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert m["per_query"]["q1"]["ndcg@10"] == pytest.approx(dcg / idcg, abs=1e-12)
    assert m["per_query"]["q1"]["mrr"] == pytest.approx(0.5)
    assert m["per_query"]["q1"]["map"] == pytest.approx((1 / 2 + 2 / 3) / 2)


def test_unjudged_queries_are_listed_not_averaged():
    run = _run({"q1": [("a", 1.0)], "q2": [("x", 1.0)]})
    qrels = Qrels({"q1": {"a": 1}})
    m = evaluate_run(run, qrels, EvalConfig(measures=["ndcg@10"]))
    assert m["num_queries"] == 1
    assert m["unjudged_queries"] == ["q2"]
    assert m["mean"]["ndcg@10"] == pytest.approx(1.0)


def test_evaluate_does_not_mutate_inputs():
    run = _run({"q1": [("a", 1.0), ("b", 1.0)]})
    qrels = Qrels({"q1": {"a": 1}})
    before = (run.to_dict(), qrels.to_dict())
    evaluate_run(run, qrels, EvalConfig())
    assert (run.to_dict(), qrels.to_dict()) == before


def test_judged_queries_missing_from_the_run_are_warned_and_counted(caplog):
    """Issue 16 (2): trec_eval skips judged queries the run lacks; say so with counts."""
    run = _run({"q1": [("a", 1.0)]})
    qrels = Qrels({"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 0}})
    with caplog.at_level("WARNING", logger="presentation_dependence"):
        m = evaluate_run(run, qrels, EvalConfig(measures=["ndcg@10"]))
    assert m["judged_queries_not_in_run"] == 2
    assert any("2 of 3 judged queries" in r.getMessage() for r in caplog.records)
