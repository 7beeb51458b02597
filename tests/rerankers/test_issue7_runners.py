"""The issue-7 rerankers run through run_experiment (ExperimentManager) and run_psi (PSIRunner)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from presdep_tools.testing.chat_server import ChatServer
from presentation_dependence.config import load_experiment_config
from presentation_dependence.io.fixture import write_fixture
from presentation_dependence.records import Candidate, Qrels, Query, RerankRequest
from presentation_dependence.robustness.runner import PSIRunner
from presentation_dependence.runners import ExperimentManager

pytestmark = pytest.mark.timeout(300)
WORDS = ["flea", "egg", "host", "cat", "blood", "jump", "week", "larva", "skin", "bite"]


def make_fixture(path: Path, n_queries: int = 2, n: int = 4) -> Path:
    rng = np.random.default_rng(0)
    reqs, qrels = [], {}
    for q in range(n_queries):
        qid = f"q{q}"
        cands = tuple(
            Candidate(f"{qid}-d{i}", " ".join(rng.choice(WORDS, size=6)), i + 1, float(n - i))
            for i in range(n)
        )
        reqs.append(RerankRequest(Query(qid, f"question {q} about fleas"), cands))
        qrels[qid] = {c.docid: int(rng.integers(0, 3)) for c in cands}
    return write_fixture(path, reqs, Qrels(qrels))


def scripted(messages: Sequence[Mapping[str, Any]], body: Mapping[str, Any]) -> str:
    user = str(messages[-1]["content"])
    n = int(re.search(r"Grade each of the (\d+) passages", user).group(1))  # type: ignore[union-attr]
    return "\n".join(f"[{i}] grade:{i % 4}" for i in range(1, n + 1))


def run_both(tmp: Path, reranker: dict[str, Any]) -> None:
    make_fixture(tmp / "fixture.jsonl")
    body = {
        "reranker": reranker,
        "data": {"dataloader_class": "FixtureLoader", "path": str(tmp / "fixture.jsonl")},
        "robustness": {
            "perturbations": ["random_shuffle"],
            "num_presentations": 2,
            "null_repeats": 2,
            "bootstrap_resamples": 100,
            "retain_top_k": 2,
        },
    }
    p = tmp / "exp.yaml"
    p.write_text(yaml.safe_dump(body), encoding="utf-8")
    cfg = load_experiment_config(p)
    ExperimentManager(cfg, tmp / "run").run()
    assert len(list((tmp / "run" / "per_query_results").glob("*.json"))) == 2
    metrics = PSIRunner(cfg, tmp / "run").run()
    assert metrics is not None and "random_shuffle" in metrics["variants"]


@pytest.mark.parametrize(
    "reranker",
    [
        {"reranker_class": "GenerativeListwiseReranker", "window_size": 3, "stride": 2},
        {"reranker_class": "MxbaiPointwise"},
        {"reranker_class": "PineReranker", "chunk_size": 2},
    ],
)
def test_local_model_rerankers(tmp_path: Path, tiny_model: str, reranker: dict[str, Any]) -> None:
    import torch

    torch.set_num_threads(1)
    run_both(tmp_path, {**reranker, "model_name": tiny_model, "device": "cpu", "dtype": "float32"})


def test_api_teacher(tmp_path: Path) -> None:
    with ChatServer(scripted, faults=["500"]) as srv:
        run_both(
            tmp_path,
            {
                "reranker_class": "ClosedModelGenBscReranker",
                "model": "loopback",
                "base_url": srv.url,
                "num_orders": 2,
                "backoff_base_s": 0.01,
                "cache_dir": str(tmp_path / "cache"),
            },
        )
