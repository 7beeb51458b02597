"""The PSI runner on the tiny model: determinism, --from-scores, pointwise null, resume."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from presentation_dependence.cli import main as cli_main
from presentation_dependence.config import load_experiment_config
from presentation_dependence.io.fixture import write_fixture
from presentation_dependence.records import Candidate, Qrels, Query, RerankRequest
from presentation_dependence.robustness.runner import PSIRunner
from presentation_dependence.robustness.store import load_columnar

WORDS = ["flea", "egg", "host", "cat", "blood", "jump", "week", "larva", "skin", "bite"]


def make_fixture(path: Path, n_queries: int = 3, n: int = 6) -> Path:
    rng = np.random.default_rng(0)
    reqs, qrels = [], {}
    for q in range(n_queries):
        qid = f"q{q}"
        cands = tuple(
            Candidate(f"{qid}-d{i}", " ".join(rng.choice(WORDS, size=8)), i + 1, float(n - i))
            for i in range(n)
        )
        reqs.append(RerankRequest(Query(qid, f"question {q} about fleas"), cands))
        qrels[qid] = {c.docid: int(rng.integers(0, 3)) for c in cands}
    return write_fixture(path, reqs, Qrels(qrels))


def write_config(tmp: Path, tiny_model: str, reranker_class: str, **rer: object) -> Path:
    body = {
        "reranker": {
            "reranker_class": reranker_class,
            "model_name": tiny_model,
            "device": "cpu",
            "dtype": "float32",
            **rer,
        },
        "data": {"dataloader_class": "FixtureLoader", "path": str(tmp / "fixture.jsonl")},
        "robustness": {
            "perturbations": ["random_shuffle", "cyclic_shift"],
            "num_presentations": 4,
            "null_repeats": 2,
            "bootstrap_resamples": 200,
            "retain_top_k": 3,
        },
    }
    p = tmp / f"psi-{reranker_class}.yaml"
    p.write_text(yaml.safe_dump(body), encoding="utf-8")
    return p


def identity_psi_config(tmp: Path, fixture: Path, name: str = "psi", **robustness: object) -> Path:
    """A PSI config of the IdentityReranker on ``fixture``: 3 shuffles and the null twice."""
    body = {
        "reranker": {"reranker_class": "IdentityReranker"},
        "data": {"dataloader_class": "FixtureLoader", "path": str(fixture)},
        "robustness": {
            "perturbations": ["random_shuffle"],
            "num_presentations": 3,
            "null_repeats": 2,
            "bootstrap_resamples": 100,
            **robustness,
        },
    }
    p = tmp / f"{name}.yaml"
    p.write_text(yaml.safe_dump(body), encoding="utf-8")
    return p


@pytest.fixture()
def listwise_cfg(tmp_path, tiny_model):
    make_fixture(tmp_path / "fixture.jsonl")
    return write_config(tmp_path, tiny_model, "GradeReranker", chunk_size=6)


def test_psi_metrics_rerun_and_from_scores_identical(listwise_cfg, tmp_path):
    run = tmp_path / "run"
    assert cli_main(["psi", str(listwise_cfg), "--run-dir", str(run)]) == 0
    first = (run / "psi" / "psi_metrics.json").read_bytes()
    metrics = json.loads(first)
    assert set(metrics["variants"]) == {"random_shuffle", "cyclic_shift", "same_order"}
    shuffle = metrics["variants"]["random_shuffle"]["summary"]
    assert 0.0 < shuffle["tau_psi"]["mean"] <= 1.0  # the random model is order-dependent
    assert metrics["variants"]["same_order"]["summary"]["tau_psi"]["mean"] == pytest.approx(
        0, abs=1e-12
    )
    assert metrics["cost"]["random_shuffle"]["forward_passes_per_query"] == 4.0
    presentations = json.loads((run / "psi" / "presentations.json").read_text())
    assert len(presentations["presentations"]["q0"]["random_shuffle"]) == 4

    # A fresh folder, the same config: the same presentations and metrics, byte for byte.
    assert cli_main(["psi", str(listwise_cfg), "--run-dir", str(tmp_path / "again")]) == 0
    assert (tmp_path / "again" / "psi" / "psi_metrics.json").read_bytes() == first
    # No model: recomputed from the columnar file only.
    assert cli_main(["psi", str(listwise_cfg), "--run-dir", str(run), "--from-scores"]) == 0
    assert (run / "psi" / "psi_metrics.json").read_bytes() == first


def test_columnar_file_holds_distributions(listwise_cfg, tmp_path):
    run = tmp_path / "run"
    PSIRunner(load_experiment_config(listwise_cfg), run).run()
    with np.load(run / "psi" / "grade_distributions.npz") as z:
        probs, variant = z["probs"], z["variant"]
        assert probs.shape[1] == 4
        np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-5)
        assert len(variant) == 3 * (4 + 4 + 2) * 6  # queries x presentations x candidates
        np.testing.assert_allclose(z["score"], probs @ np.arange(4), atol=1e-5)
    table = load_columnar(run / "psi" / "grade_distributions.npz")
    assert table["q0"]["random_shuffle"].shape == (4, 6)


def test_pointwise_scorer_has_zero_tau_psi(tmp_path, tiny_model):
    make_fixture(tmp_path / "fixture.jsonl")
    cfg = load_experiment_config(write_config(tmp_path, tiny_model, "PointwiseGradeReranker"))
    metrics = PSIRunner(cfg, tmp_path / "run").run()
    assert metrics is not None
    for var in ("random_shuffle", "cyclic_shift"):
        s = metrics["variants"][var]["summary"]
        assert s["tau_psi"]["mean"] == pytest.approx(0, abs=1e-12)
        assert s["delta_ndcg"]["mean"] == pytest.approx(0, abs=1e-12)
        assert s["jaccard_topk"]["mean"] == 1.0


def test_shards_then_merge(listwise_cfg, tmp_path):
    cfg = load_experiment_config(listwise_cfg)
    assert PSIRunner(cfg, tmp_path / "s", shard=(0, 2)).run() is None  # incomplete
    merged = PSIRunner(cfg, tmp_path / "s", shard=(1, 2)).run()
    single = PSIRunner(cfg, tmp_path / "one").run()
    assert merged is not None and single is not None
    assert (tmp_path / "s/psi/psi_metrics.json").read_bytes() == (
        tmp_path / "one/psi/psi_metrics.json"
    ).read_bytes()


def test_from_scores_without_scores_is_an_error(listwise_cfg, tmp_path):
    assert (
        cli_main(["psi", str(listwise_cfg), "--run-dir", str(tmp_path / "x"), "--from-scores"]) == 2
    )
