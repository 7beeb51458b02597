"""Measure names in the ir_measures convention: parsing, did-you-mean, tie order, and agreement
with ir_measures and with independent formulas on the real DL19 BM25 run."""

from __future__ import annotations

from pathlib import Path

import pytest

from presentation_dependence.config import EvalConfig
from presentation_dependence.errors import ConfigError
from presentation_dependence.io.trec import read_qrels, read_run
from presentation_dependence.metrics.measures import evaluate_measures, parse_measure
from presentation_dependence.records import Qrels, Run, RunEntry
from presentation_dependence.runners import evaluate_run


@pytest.mark.parametrize(
    ("name", "level", "canonical"),
    [
        ("RR@10", 1, "RR@10"),
        ("mrr@10", 1, "RR@10"),
        ("MRR@10", 2, "RR(rel=2)@10"),
        ("AP", 2, "AP(rel=2)"),
        ("map", 1, "AP"),
        ("nDCG@10", 2, "nDCG@10"),  # graded: no relevance level
        ("ndcg@10", 1, "nDCG@10"),
        ("ndcg_cut_10", 1, "nDCG@10"),
        ("recip_rank", 2, "RR(rel=2)"),
        ("Judged@10", 2, "Judged@10"),
        ("judged@5", 1, "Judged@5"),
        ("P(rel=3)@10", 2, "P(rel=3)@10"),  # a level the name states wins
        ("recall@100", 1, "R@100"),
        ("recall_100", 1, "R@100"),
    ],
)
def test_names(name: str, level: int, canonical: str) -> None:
    assert str(parse_measure(name, level)) == canonical


@pytest.mark.parametrize(
    ("name", "suggested"),
    [("ndgc@10", "'nDCG@10'"), ("Judgd@10", "'Judged@10'"), ("ndcg_cutt_10", "'ndcg_cut_10'")],
)
def test_did_you_mean(name: str, suggested: str) -> None:
    with pytest.raises(ConfigError, match="Did you mean") as e:
        parse_measure(name)
    assert suggested in str(e.value) and name in str(e.value)


def test_missing_cutoff_and_bad_params_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="P@10"):
        parse_measure("P")
    with pytest.raises(ConfigError, match="cutoff, dcg"):
        parse_measure("nDCG(depth=3)@10")


def _run(rows: dict[str, list[tuple[str, float]]]) -> Run:
    return Run(
        {
            q: tuple(RunEntry(q, d, i + 1, s) for i, (d, s) in enumerate(docs))
            for q, docs in rows.items()
        }
    )


def test_ties_follow_trec_eval_and_queries_without_relevant_count_zero() -> None:
    # Tied scores: trec_eval ranks docid "b" before "a" (docid descending). "a" is relevant and
    # judged, "b" is unjudged; q2 has judgements but nothing relevant.
    run = _run({"q1": [("a", 1.0), ("b", 1.0)], "q2": [("x", 1.0)]})
    qrels = Qrels({"q1": {"a": 1}, "q2": {"x": 0}})
    names = ("RR@10", "recip_rank", "Judged@1", "Judged@10")
    got = evaluate_measures(run, qrels, {n: parse_measure(n) for n in names})
    assert got["q1"] == {"RR@10": 0.5, "recip_rank": 0.5, "Judged@1": 0.0, "Judged@10": 0.5}
    assert got["q2"] == {"RR@10": 0.0, "recip_rank": 0.0, "Judged@1": 1.0, "Judged@10": 1.0}


def test_judged_at_10_reported_by_default_once() -> None:
    run = _run({"q1": [("a", 2.0), ("b", 1.0)]})
    qrels = Qrels({"q1": {"a": 1}})
    m = evaluate_run(run, qrels, EvalConfig(measures=["ndcg@10"]))
    assert m["measures"] == {"ndcg@10": "nDCG@10", "Judged@10": "Judged@10"}
    assert m["mean"]["Judged@10"] == 0.5
    m = evaluate_run(run, qrels, EvalConfig(measures=["judged@10"]))
    assert list(m["measures"]) == ["judged@10"]
    m = evaluate_run(run, qrels, EvalConfig(measures=["AP"], judged_k=None))
    assert list(m["measures"]) == ["AP"]


# -- the real DL19 BM25 run ------------------------------------------------------------------


def _trec_order(run: Run) -> dict[str, list[str]]:
    return {
        q: [e.docid for e in sorted(rows, key=lambda e: (e.score, e.docid), reverse=True)]
        for q, rows in run.entries.items()
    }


def _independent(run: Run, qrels: Qrels, rel: int) -> dict[str, float]:
    """RR@10 (MS MARCO), AP (trec_eval's map) and Judged@10, from their definitions."""
    rr, ap, judged = [], [], []
    for q, docs in _trec_order(run).items():
        grades = qrels.judgements.get(q)
        if not grades:
            continue
        relevant = {d for d, g in grades.items() if g >= rel}
        first = next((i for i, d in enumerate(docs[:10], 1) if d in relevant), None)
        rr.append(1 / first if first else 0.0)
        hits, precisions = 0, []
        for i, d in enumerate(docs, 1):
            if d in relevant:
                hits += 1
                precisions.append(hits / i)
        ap.append(sum(precisions) / len(relevant) if relevant else 0.0)
        top = docs[:10]
        judged.append(sum(d in grades for d in top) / len(top))
    return {n: sum(v) / len(v) for n, v in (("RR@10", rr), ("AP", ap), ("Judged@10", judged))}


@pytest.mark.parametrize("rel", [1, 2])
def test_dl19_bm25_agrees_with_ir_measures_and_definitions(shared_data: Path, rel: int) -> None:
    ir_measures = pytest.importorskip("ir_measures")
    folder = shared_data / "trec-dl19-passage"
    run_path, qrels_path = folder / "bm25_top100_dl19.trec", folder / "qrels.dl19-passage.txt"
    run, qrels = read_run(run_path), read_qrels(qrels_path)
    ours = evaluate_run(
        run, qrels, EvalConfig(measures=["RR@10", "AP", "Judged@10"], relevance_level=rel)
    )
    assert ours["num_queries"] == 43
    # ir_measures on its own readers and its default provider pipeline.
    wanted = [ir_measures.RR(rel=rel) @ 10, ir_measures.AP(rel=rel), ir_measures.Judged @ 10]
    theirs = ir_measures.calc_aggregate(
        wanted,
        ir_measures.read_trec_qrels(str(qrels_path)),
        ir_measures.read_trec_run(str(run_path)),
    )
    for name, measure in zip(("RR@10", "AP", "Judged@10"), wanted, strict=True):
        assert ours["mean"][name] == pytest.approx(theirs[measure], abs=1e-12), name
    for name, value in _independent(run, qrels, rel).items():
        assert ours["mean"][name] == pytest.approx(value, abs=1e-12), name
