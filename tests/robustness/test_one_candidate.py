"""Issue 38 (11): a query of one candidate has no order; PSI leaves it out of the order metrics
(recorded under ``excluded_queries``) instead of crashing after scoring everything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from presentation_dependence.cli import main
from presentation_dependence.io.fixture import read_fixture, write_fixture
from presentation_dependence.records import RerankRequest

from .test_runner import identity_psi_config, make_fixture


def _config(tmp: Path, fixture: Path, name: str = "psi") -> Path:
    return identity_psi_config(tmp, fixture, name, retain_top_k=3)


def _fixtures(tmp: Path, keep: int = 1) -> tuple[Path, Path]:
    """``one.jsonl``: q1 cut to ``keep`` candidates; ``without.jsonl``: q1 left out."""
    make_fixture(tmp / "full.jsonl")
    reqs, qrels = read_fixture(tmp / "full.jsonl")
    cut = [RerankRequest(r.query, r.candidates[:keep]) if r.query.qid == "q1" else r for r in reqs]
    one = write_fixture(tmp / "one.jsonl", cut, qrels)
    without = write_fixture(tmp / "without.jsonl", [r for r in reqs if r.query.qid != "q1"], qrels)
    return one, without


def test_a_one_candidate_query_is_excluded_and_recorded(tmp_path: Path, caplog) -> None:
    one, without = _fixtures(tmp_path)
    cfg = _config(tmp_path, one)
    run = tmp_path / "run"
    assert main(["psi", str(cfg), "--run-dir", str(run)]) == 0
    assert "1 of 3 queries have one candidate" in caplog.text
    metrics = json.loads((run / "psi" / "psi_metrics.json").read_text())
    assert metrics["excluded_queries"] == {"q1": "one candidate: no order to perturb"}
    assert metrics["num_queries"] == 2
    assert set(metrics["given_order"]["per_query"]) == {"q0", "q2"}
    for block in metrics["variants"].values():
        assert set(block["per_query"]) == {"q0", "q2"}
    # The other queries' figures are those of the data without q1.
    ref = tmp_path / "ref"
    assert main(["psi", str(_config(tmp_path, without, "ref")), "--run-dir", str(ref)]) == 0
    want = json.loads((ref / "psi" / "psi_metrics.json").read_text())
    assert "excluded_queries" not in want
    assert {k: v for k, v in metrics.items() if k != "excluded_queries"} == want
    # --from-scores reaches the same file from the scores alone.
    stored = (run / "psi" / "psi_metrics.json").read_bytes()
    assert main(["psi", str(cfg), "--run-dir", str(run), "--from-scores"]) == 0
    assert (run / "psi" / "psi_metrics.json").read_bytes() == stored


def test_only_one_candidate_queries_is_refused(tmp_path: Path, caplog) -> None:
    make_fixture(tmp_path / "full.jsonl", n_queries=2)
    reqs, qrels = read_fixture(tmp_path / "full.jsonl")
    fixture = write_fixture(
        tmp_path / "ones.jsonl", [RerankRequest(r.query, r.candidates[:1]) for r in reqs], qrels
    )
    run = tmp_path / "run"
    assert main(["psi", str(_config(tmp_path, fixture)), "--run-dir", str(run)]) == 2
    assert "none of the 2 queries has two candidates or more" in caplog.text
    assert not (run / "psi").exists()  # refused before any scoring


@pytest.mark.parametrize("keep", [2])
def test_two_candidates_are_an_order(tmp_path: Path, keep: int) -> None:
    one, _ = _fixtures(tmp_path, keep=keep)
    run = tmp_path / "run"
    assert main(["psi", str(_config(tmp_path, one)), "--run-dir", str(run)]) == 0
    metrics = json.loads((run / "psi" / "psi_metrics.json").read_text())
    assert "excluded_queries" not in metrics and metrics["num_queries"] == 3
