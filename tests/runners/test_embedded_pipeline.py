"""Integration: the shipped DL19 config end to end with the embedded model (real model, real data)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from presentation_dependence.config import load_experiment_config
from presentation_dependence.runners import EvalManager, ExperimentManager

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.integration
@pytest.mark.slow
def test_dl19_config_with_embedded_model(shared_data, tmp_path, monkeypatch):
    dl19 = shared_data / "trec-dl19-passage"
    if not dl19.is_dir():
        pytest.skip(f"{dl19} not found")
    monkeypatch.chdir(REPO)  # the config's relative data paths
    overrides = [
        "data.max_queries=2",
        "data.top_k=8",
        f"data.path={dl19 / 'bm25_top100_dl19.json'}",
        f"data.qrels={dl19 / 'qrels.dl19-passage.txt'}",
        "reranker.dtype=float32",
    ]
    cfg = load_experiment_config(REPO / "configs/experiments/example-dl19-smollm2.yaml", overrides)
    outs = []
    for name in ("a", "b"):
        ExperimentManager(cfg, tmp_path / name).run()
        metrics = EvalManager(tmp_path / name).evaluate()
        assert metrics["num_queries"] == 2
        files = sorted((tmp_path / name / "per_query_results").glob("*.json"))
        assert len(files) == 2
        for f in files:
            res = json.loads(f.read_text())
            assert res["details"]["forward_passes"] == 1  # 8 candidates in one B=20 prompt
            for it in res["items"]:
                p = np.array(it["details"]["grade_probs"])
                assert p.shape == (4,) and abs(p.sum() - 1) < 1e-6
                assert it["score"] == pytest.approx(float(p @ np.arange(4)), abs=1e-12)
        outs.append({f.name: f.read_bytes() for f in files})
    assert outs[0] == outs[1], "two runs of the same config must give identical scores on CPU"
    prov = json.loads((tmp_path / "a" / "provenance.json").read_text())
    rer = prov["invocations"][0]["reranker"]
    assert rer["revision"].startswith("gguf-sha256:") and rer["dtype"] == "float32"
