"""Issue 38 (3): ``presdep psi --from-scores`` checks the stored candidates and judgements
against the data and qrels the config gives now, when that data is on this machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from presentation_dependence.cli import main
from presentation_dependence.io.fixture import read_fixture, write_fixture
from presentation_dependence.records import Candidate, Qrels, RerankRequest

from .test_runner import identity_psi_config, make_fixture


@pytest.fixture()
def scored(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(config, run folder with finished PSI scores, the fixture)."""
    fixture = make_fixture(tmp_path / "fixture.jsonl")
    cfg = identity_psi_config(tmp_path, fixture)
    run = tmp_path / "run"
    assert main(["psi", str(cfg), "--run-dir", str(run)]) == 0
    return cfg, run, fixture


def _ndcg(run: Path) -> float:
    doc = json.loads((run / "psi" / "psi_metrics.json").read_text())
    return float(doc["given_order"]["ndcg"]["mean"])


def _invert_grades(fixture: Path) -> None:
    requests, qrels = read_fixture(fixture)
    flipped = {q: {d: 2 - g for d, g in j.items()} for q, j in qrels.judgements.items()}
    write_fixture(fixture, requests, Qrels(flipped))


def test_fixed_judgements_are_refused_then_recomputed(scored, tmp_path, caplog) -> None:
    cfg, run, fixture = scored
    before = (run / "psi" / "psi_metrics.json").read_bytes()
    assert main(["psi", str(cfg), "--run-dir", str(run), "--from-scores"]) == 0
    assert "stored candidates and judgements match" in caplog.text
    assert (run / "psi" / "psi_metrics.json").read_bytes() == before
    _invert_grades(fixture)
    caplog.clear()
    assert main(["psi", str(cfg), "--run-dir", str(run), "--from-scores"]) == 2
    assert "other data or judgements" in caplog.text and "for 3 queries" in caplog.text
    assert "'q0': the judgements of its candidates differ" in caplog.text
    assert "--recompute-changed" in caplog.text
    assert (run / "psi" / "psi_metrics.json").read_bytes() == before  # untouched
    # The fix the message names: re-score the changed queries; equal to a fresh folder.
    assert main(["psi", str(cfg), "--run-dir", str(run), "--recompute-changed"]) == 0
    assert main(["psi", str(cfg), "--run-dir", str(tmp_path / "fresh")]) == 0
    assert (
        _ndcg(run) == _ndcg(tmp_path / "fresh") != json.loads(before)["given_order"]["ndcg"]["mean"]
    )
    assert main(["psi", str(cfg), "--run-dir", str(run), "--from-scores"]) == 0


def test_changed_candidates_and_queries_are_refused(scored, caplog) -> None:
    cfg, run, fixture = scored
    requests, qrels = read_fixture(fixture)
    first = requests[1].candidates[0]
    renamed = Candidate("q1-new", first.text, first.rank, first.score)
    edited = [
        RerankRequest(r.query, (renamed, *r.candidates[1:])) if r.query.qid == "q1" else r
        for r in requests
        if r.query.qid != "q2"
    ]
    write_fixture(fixture, edited, qrels)
    assert main(["psi", str(cfg), "--run-dir", str(run), "--from-scores"]) == 2
    assert "for 2 queries" in caplog.text
    assert "'q1': the candidate ids differ" in caplog.text
    assert "'q2': scored, but no longer in the data" in caplog.text


def test_an_archive_without_its_data_recomputes_from_its_stored_grades(scored, caplog) -> None:
    _, run, fixture = scored
    before = (run / "psi" / "psi_metrics.json").read_bytes()
    fixture.rename(fixture.with_suffix(".away"))  # the data is not on this machine
    assert main(["psi", "--run-dir", str(run), "--from-scores"]) == 0  # the folder's config
    assert "is not on this machine (data.path resolve to no file)" in caplog.text
    assert "unchecked" in caplog.text
    assert (run / "psi" / "psi_metrics.json").read_bytes() == before


def test_an_archive_with_its_data_here_is_checked(scored, caplog) -> None:
    _, run, fixture = scored
    _invert_grades(fixture)
    assert main(["psi", "--run-dir", str(run), "--from-scores"]) == 2
    assert "other data or judgements" in caplog.text
