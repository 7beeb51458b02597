"""``presdep compare A B QRELS``: two TREC runs paired per measure, against hand-computed values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from presentation_dependence.cli import main
from presentation_dependence.config import EvalConfig
from presentation_dependence.errors import PresdepError
from presentation_dependence.io.trec import read_qrels, read_run
from presentation_dependence.metrics.stats import paired_bootstrap
from presentation_dependence.runners.compare import compare_files, compare_runs
from presentation_dependence.seeding import rng_from

# q1..q3 in both runs and judged; q4 in both, not judged; q5 judged, only in A.
RUN_A = """q1 Q0 a 1 2 A
q1 Q0 b 2 1 A
q2 Q0 a 1 2 A
q2 Q0 b 2 1 A
q3 Q0 c 1 2 A
q3 Q0 x 2 1 A
q4 Q0 a 1 1 A
q5 Q0 e 1 1 A
"""
RUN_B = """q1 Q0 b 1 2 B
q1 Q0 a 2 1 B
q2 Q0 b 1 2 B
q2 Q0 a 2 1 B
q3 Q0 x 1 2 B
q3 Q0 c 2 1 B
q4 Q0 a 1 1 B
"""
QRELS = "q1 0 a 1\nq2 0 b 1\nq3 0 c 1\nq5 0 e 1\n"


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    paths = (tmp_path / "a.trec", tmp_path / "b.trec", tmp_path / "qrels.txt")
    for path, text in zip(paths, (RUN_A, RUN_B, QRELS), strict=True):
        path.write_text(text)
    return paths


def test_hand_computed_rr_and_p_at_1(files) -> None:
    a, b, qrels = files
    result = compare_files(a, b, qrels, EvalConfig(measures=["RR", "P@1"], judged_k=None))
    assert result["num_queries"] == 3 and list(result["per_query"]) == ["q1", "q2", "q3"]
    assert result["only_in_a"] == ["q5"] and result["only_in_b"] == []
    # RR per query: A = (1, 1/2, 1), B = (1/2, 1, 1/2); B − A = (−1/2, +1/2, −1/2).
    assert result["per_query"]["q2"]["RR"] == [0.5, 1.0]
    rr = result["comparison"]["RR"]
    assert rr["mean_a"] == pytest.approx(5 / 6) and rr["mean_b"] == pytest.approx(2 / 3)
    assert rr["mean_diff"] == pytest.approx(-1 / 6)
    assert (rr["b_better"], rr["b_worse"]) == (1, 2)
    # Permutation, exact over the 2^3 sign patterns: D* = ±1/2 (2 patterns), ±1/6 (6 patterns);
    # P(D* <= −1/6) = 4/8, P(D* >= −1/6) = 7/8, so p = min(1, 2 * 4/8) = 1.
    assert rr["permutation_p"] == pytest.approx(1.0)
    # Bootstrap: a resample has k ~ Bin(3, 1/3) of the +1/2 differences, mean (k − 3/2)/3:
    # −1/2 (8/27), −1/6 (12/27), +1/6 (6/27), +1/2 (1/27 > 2.5%): the 95% CI is (−1/2, +1/2);
    # |D* − D| >= 1/6 unless k = 1, so p ≈ 15/27.
    assert (rr["ci_low"], rr["ci_high"]) == pytest.approx((-0.5, 0.5))
    assert rr["bootstrap_p"] == pytest.approx(15 / 27, abs=0.03)
    # P@1 is the same per query here (the relevant document first or not): A = (1, 0, 1).
    p1 = result["comparison"]["P@1"]
    assert (p1["mean_a"], p1["mean_b"], p1["mean_diff"]) == pytest.approx((2 / 3, 1 / 3, -1 / 3))


def test_seeded_named_streams_and_symmetry(files) -> None:
    a, b, qrels = files
    cfg = EvalConfig(measures=["RR"], judged_k=None)
    result = compare_runs(read_run(a), read_run(b), read_qrels(qrels), cfg, seed=7)
    want = paired_bootstrap([0.5, 1.0, 0.5], [1.0, 0.5, 1.0], rng=rng_from(7, "compare", "RR"))
    rr = result["comparison"]["RR"]
    assert (rr["ci_low"], rr["ci_high"], rr["bootstrap_p"]) == (
        want["ci_low"],
        want["ci_high"],
        want["p_value"],
    )
    # Adding a measure leaves RR's figures alone (each measure has its own streams).
    both = compare_runs(
        read_run(a),
        read_run(b),
        read_qrels(qrels),
        EvalConfig(measures=["nDCG@10", "RR"], judged_k=None),
        seed=7,
    )
    assert both["comparison"]["RR"] == rr
    swapped = compare_files(b, a, qrels, cfg, seed=7)["comparison"]["RR"]
    assert swapped["mean_diff"] == pytest.approx(-rr["mean_diff"])
    assert swapped["permutation_p"] == pytest.approx(rr["permutation_p"])


def test_cli_prints_the_table_and_writes_json(files, tmp_path: Path, capsys, caplog) -> None:
    a, b, qrels = files
    out = tmp_path / "cmp.json"
    argv = ["compare", str(a), str(b), str(qrels), "-m", "RR", "-m", "P@1", "--json", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert f"A (baseline): {a}" in text and "3 queries in both runs and judged" in text
    assert "| measure | A | B | B − A [95% CI] | bootstrap p | permutation p |" in text
    assert "| RR | 0.8333 | 0.6667 | -0.1667 [-0.5000, +0.5000] |" in text
    assert "| 1.0000 | 1 | 2 |" in text
    assert "only in run A" in caplog.text and "q5" in caplog.text
    saved = json.loads(out.read_text())
    assert saved["comparison"]["RR"]["mean_diff"] == pytest.approx(-1 / 6)
    assert saved["measures"] == {"RR": "RR", "P@1": "P@1"}


def test_no_common_judged_query_and_missing_files(files, tmp_path: Path, caplog) -> None:
    a, _, qrels = files
    other = tmp_path / "other.trec"
    other.write_text("q9 Q0 a 1 1 O\n")
    with pytest.raises(PresdepError, match="no query is in both runs"):
        compare_files(a, other, qrels)
    assert main(["compare", str(a), str(tmp_path / "none.trec"), str(qrels)]) == 2
    assert "is not a file" in caplog.text
    assert main(["compare", str(a), str(qrels), str(a)]) == 2  # B is qrels, QRELS is a run
    assert "swapped?" in caplog.text


def test_dl19_bm25_against_its_reverse_pairs_eval_per_query_values(
    shared_data: Path, tmp_path: Path
) -> None:
    """On DL19's BM25 run: A's per-query values are ``presdep eval``'s; a run against itself
    differs by 0 (p = 1); the reversed run is worse, and significantly so."""
    from presentation_dependence.records import Run, RunEntry
    from presentation_dependence.runners import evaluate_run

    folder = shared_data / "trec-dl19-passage"
    run_path, qrels_path = folder / "bm25_top100_dl19.trec", folder / "qrels.dl19-passage.txt"
    run, qrels = read_run(run_path), read_qrels(qrels_path)
    reverse = Run(
        {
            q: tuple(RunEntry(q, e.docid, e.rank, -e.score, "rev") for e in rows)
            for q, rows in run.entries.items()
        }
    )
    cfg = EvalConfig(measures=["nDCG@10", "AP"], relevance_level=2, judged_k=None)
    result = compare_runs(run, reverse, qrels, cfg)
    evaluated = evaluate_run(run, qrels, cfg)
    assert result["num_queries"] == evaluated["num_queries"] == 43
    for q, values in result["per_query"].items():
        assert {n: v[0] for n, v in values.items()} == evaluated["per_query"][q]
    ndcg = result["comparison"]["nDCG@10"]
    assert ndcg["mean_a"] == pytest.approx(evaluated["mean"]["nDCG@10"])
    assert ndcg["mean_diff"] < 0 and ndcg["ci_high"] < 0 and ndcg["permutation_p"] < 0.01
    same = compare_files(run_path, run_path, qrels_path, cfg)["comparison"]["AP"]
    assert same["mean_diff"] == 0.0 and same["bootstrap_p"] == 1.0 and same["permutation_p"] == 1.0
