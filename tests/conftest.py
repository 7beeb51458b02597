"""Shared test fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from presdep_tools.testing.tiny_model import make_tiny_model

__all__ = ["make_tiny_model"]  # tests import it from here


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder of real evaluation data (``<clone parent>/shared/data``).

    The repository is cloned at ``X/main`` with the data at ``X/shared/data``; elsewhere set
    ``PRESDEP_SHARED_DATA`` to the data folder. Tests that need it are skipped without it.
    """
    candidate = Path(__file__).resolve().parents[2] / "shared" / "data"
    if candidate.is_dir():
        return candidate
    env = os.environ.get("PRESDEP_SHARED_DATA")
    if env and Path(env).is_dir():
        return Path(env)
    pytest.skip(
        f"../shared/data not found: looked at {candidate} and PRESDEP_SHARED_DATA="
        f"{env or '(unset)'}; set PRESDEP_SHARED_DATA to the shared data folder to run this test"
    )


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Path of the tiny random model (built once per test session)."""
    return str(make_tiny_model(tmp_path_factory.mktemp("tiny-llama")))


@pytest.fixture(scope="session")
def tiny_study_runs(tiny_model: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``dl19/off-the-shelf/`` and ``dl19/oc-sft/``: finished run folders (``presdep run
    --eval``, then ``presdep psi``) of the tiny model's listwise readout (chunks of 6 and of 3,
    so the two score differently) on 3 queries of 6 candidates, as a study lays out its scorers.
    Read only: copy a folder before changing it."""
    import yaml

    from presentation_dependence.cli import main
    from tests.robustness.test_runner import make_fixture

    root = tmp_path_factory.mktemp("tiny-study")
    fixture = make_fixture(root / "fixture.jsonl")
    runs = root / "dl19"
    for scorer, chunk in (("off-the-shelf", 6), ("oc-sft", 3)):
        cfg = root / f"{scorer}.yaml"
        body = {
            "reranker": {
                "reranker_class": "GradeReranker",
                "model_name": tiny_model,
                "device": "cpu",
                "dtype": "float32",
                "chunk_size": chunk,
            },
            "data": {"dataloader_class": "FixtureLoader", "path": str(fixture)},
            "eval": {"measures": ["ndcg@10", "map"], "relevance_level": 1},
            "robustness": {"num_presentations": 4, "null_repeats": 2, "bootstrap_resamples": 200},
        }
        cfg.write_text(yaml.safe_dump(body), encoding="utf-8")
        assert main(["run", str(cfg), "--run-dir", str(runs / scorer), "--eval"]) == 0
        assert main(["psi", str(cfg), "--run-dir", str(runs / scorer)]) == 0
    return runs
