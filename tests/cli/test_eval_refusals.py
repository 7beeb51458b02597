"""Issue 38 (7, 10): ``presdep eval`` refuses what it cannot evaluate before writing anything:
judgements that share no query with the run, and a measure cutoff below 1."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from presentation_dependence.cli import main
from presentation_dependence.config import load_experiment_config
from presentation_dependence.data.smoke import build_smoke_fixture
from presentation_dependence.errors import ConfigError
from presentation_dependence.metrics.measures import parse_measure


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    fixture = build_smoke_fixture(tmp_path / "data")
    cfg = tmp_path / "identity.yaml"
    body = {
        "reranker": {"reranker_class": "IdentityReranker"},
        "data": {"dataloader_class": "FixtureLoader", "path": str(fixture), "top_k": 6},
        "eval": {"measures": ["ndcg@10"]},
    }
    cfg.write_text(yaml.safe_dump(body), encoding="utf-8")
    folder = tmp_path / "run"
    assert main(["run", str(cfg), "--run-dir", str(folder), "--eval"]) == 0
    return folder


def _foreign_qrels(path: Path) -> Path:
    path.write_text("other-1 0 d1 1\nother-2 0 d2 2\n", encoding="utf-8")
    return path


def test_eval_run_dir_with_foreign_qrels_keeps_metrics(
    run_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    before = (run_dir / "metrics.json").read_bytes()
    assert json.loads(before)["num_queries"] > 0
    qrels = _foreign_qrels(tmp_path / "foreign.txt")
    assert main(["eval", "--run-dir", str(run_dir), "--qrels", str(qrels)]) == 2
    assert (run_dir / "metrics.json").read_bytes() == before  # not overwritten
    msg = caplog.text
    assert str(run_dir / "run.trec") in msg and str(qrels) in msg
    assert "no query of" in msg and "'other-1'" in msg and "nothing was written" in msg


def test_eval_files_with_foreign_qrels_writes_no_json(run_dir: Path, tmp_path: Path) -> None:
    qrels = _foreign_qrels(tmp_path / "foreign.txt")
    out = tmp_path / "m.json"
    argv = ["eval", str(run_dir / "run.trec"), str(qrels), "--json", str(out)]
    assert main(argv) == 2
    assert not out.exists()


def test_metrics_json_is_strict_json(run_dir: Path) -> None:
    """A NaN could not be read back by a strict parser: the file must hold none."""

    def refuse(token: str) -> float:
        raise AssertionError(f"{token} in metrics.json")

    doc = json.loads((run_dir / "metrics.json").read_text(), parse_constant=refuse)
    assert all(math.isfinite(v) for v in doc["mean"].values())


@pytest.mark.parametrize(
    "name", ["ndcg@0", "P@0", "nDCG@0", "ndcg_cut_0", "P_0", "recall_0", "RR@0", "Judged@0"]
)
def test_a_cutoff_below_1_is_refused_where_measures_are_parsed(name: str) -> None:
    with pytest.raises(ConfigError, match=r"cutoff 0.*must be >= 1.*Fix: write e\.g\. \w+@10"):
        parse_measure(name)
    assert str(parse_measure(name.replace("0", "1"))).endswith("@1")


def test_eval_measure_cutoff_0_exits_2_not_abort(run_dir: Path) -> None:
    """pytrec_eval aborts the process on a cutoff of 0: run in a subprocess so that the test
    run survives the failure it checks for."""
    cmd = [sys.executable, "-m", "presentation_dependence.cli", "eval"]
    cmd += [str(run_dir / "run.trec"), str(run_dir / "qrels.txt"), "-m", "ndcg@0"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr[-500:]
    assert "'ndcg@0'" in done.stderr and ">= 1" in done.stderr


def test_a_config_with_a_cutoff_0_fails_at_load(tmp_path: Path) -> None:
    cfg = tmp_path / "exp.yaml"
    cfg.write_text(
        "reranker:\n  reranker_class: IdentityReranker\ndata:\n  path: x.jsonl\n"
        "eval:\n  measures: [ndcg@10, P@0]\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match=rf"^{cfg}:6: .*'P@0' has the cutoff 0"):
        load_experiment_config(cfg, environ={})
