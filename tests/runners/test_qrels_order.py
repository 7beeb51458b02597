"""Issue 38 (15): a resume compares judgements parsed, not as text: a data file whose queries
(and so its judgements) come in another order is the same data."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from presentation_dependence.config import load_experiment_config
from presentation_dependence.data.smoke import build_smoke_fixture
from presentation_dependence.errors import PresdepError
from presentation_dependence.io.fixture import read_fixture, write_fixture
from presentation_dependence.records import Qrels
from presentation_dependence.runners import ExperimentManager


def _config(root: Path, fixture: Path) -> Path:
    body = {
        "reranker": {"reranker_class": "IdentityReranker"},
        "data": {"dataloader_class": "FixtureLoader", "path": str(fixture)},
    }
    p = root / "exp.yaml"
    p.write_text(yaml.safe_dump(body), encoding="utf-8")
    return p


def test_queries_reordered_in_the_data_file_resume(tmp_path: Path) -> None:
    fixture = build_smoke_fixture(tmp_path / "data")
    cfg = load_experiment_config(_config(tmp_path, fixture))
    first = ExperimentManager(cfg, tmp_path / "run").run()
    assert first.complete and first.computed == 6
    qrels_before = (tmp_path / "run" / "qrels.txt").read_bytes()
    requests, qrels = read_fixture(fixture)
    backwards = Qrels({q: dict(qrels.judgements[q]) for q in reversed(list(qrels.judgements))})
    write_fixture(fixture, list(reversed(requests)), backwards)
    again = ExperimentManager(cfg, tmp_path / "run").run()
    assert again.complete and (again.computed, again.reused) == (0, 6)
    assert (tmp_path / "run" / "qrels.txt").read_bytes() == qrels_before


def test_a_changed_judgement_is_still_refused_and_counted(tmp_path: Path) -> None:
    fixture = build_smoke_fixture(tmp_path / "data")
    cfg = load_experiment_config(_config(tmp_path, fixture))
    ExperimentManager(cfg, tmp_path / "run").run()
    requests, qrels = read_fixture(fixture)
    judged = {q: dict(d) for q, d in qrels.judgements.items()}
    doc = next(iter(judged["smoke-2"]))
    judged["smoke-2"][doc] += 1
    write_fixture(fixture, list(reversed(requests)), Qrels(judged))
    with pytest.raises(PresdepError, match=r"for 1 queries \(e\.g\. 'smoke-2'\)"):
        ExperimentManager(cfg, tmp_path / "run").run()


def test_psi_resumes_when_the_queries_are_reordered(tmp_path: Path) -> None:
    from presentation_dependence.robustness.runner import PSIRunner

    fixture = build_smoke_fixture(tmp_path / "data")
    path = _config(tmp_path, fixture)
    raw = yaml.safe_load(path.read_text())
    raw["robustness"] = {"num_presentations": 2, "null_repeats": 2, "bootstrap_resamples": 100}
    path.write_text(yaml.safe_dump(raw))
    cfg = load_experiment_config(path)
    first = PSIRunner(cfg, tmp_path / "run").run()
    requests, qrels = read_fixture(fixture)
    write_fixture(fixture, list(reversed(requests)), qrels)
    again = PSIRunner(cfg, tmp_path / "run").run()
    assert first is not None and again is not None
    assert (
        again["variants"]["random_shuffle"]["per_query"]
        == (first["variants"]["random_shuffle"]["per_query"])
    )
