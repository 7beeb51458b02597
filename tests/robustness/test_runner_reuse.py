"""Issue 16 (1): PSI reuses a stored query only for the input it was computed from."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from presentation_dependence.config import load_experiment_config
from presentation_dependence.errors import PresdepError
from presentation_dependence.io.fixture import read_fixture, write_fixture
from presentation_dependence.records import Candidate, RerankRequest
from presentation_dependence.robustness.runner import PSIRunner

from .test_runner import make_fixture


def _config(tmp: Path) -> Path:
    body = {
        "reranker": {"reranker_class": "IdentityReranker"},
        "data": {"dataloader_class": "FixtureLoader", "path": str(tmp / "fixture.jsonl")},
        "robustness": {
            "perturbations": ["random_shuffle"],
            "num_presentations": 3,
            "null_repeats": 2,
            "bootstrap_resamples": 100,
        },
    }
    p = tmp / "psi.yaml"
    p.write_text(yaml.safe_dump(body), encoding="utf-8")
    return p


def _change_passage(path: Path) -> None:
    requests, qrels = read_fixture(path)
    r = requests[1]
    c = r.candidates[2]
    new = Candidate(c.docid, "new text", c.rank, c.score)
    edited = RerankRequest(r.query, (*r.candidates[:2], new, *r.candidates[3:]))
    write_fixture(path, [requests[0], edited, *requests[2:]], qrels)


def test_changed_passage_is_refused_or_recomputed(tmp_path):
    make_fixture(tmp_path / "fixture.jsonl")
    cfg = load_experiment_config(_config(tmp_path))
    assert PSIRunner(cfg, tmp_path / "run").run() is not None
    _change_passage(tmp_path / "fixture.jsonl")
    with pytest.raises(PresdepError, match=r"'q1'.*passage"):
        PSIRunner(cfg, tmp_path / "run").run()
    again = PSIRunner(cfg, tmp_path / "run", recompute_changed=True).run()
    fresh = PSIRunner(cfg, tmp_path / "fresh").run()
    assert again == fresh
