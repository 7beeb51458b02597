"""Issue 38 (6): on the embedded model on CPU (``dtype: auto``: bfloat16 where the processor has
it natively, else float32; the default thread count), two fresh
processes and a PSI run killed part-way and resumed store byte-identical scores, the first
query's first presentation (the first pass of each process) included."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def _config(tmp: Path) -> Path:
    body = {
        "reranker": {
            "reranker_class": "GradeReranker",
            "model_name": "embedded:smollm2-135m-instruct",
            "chunk_size": 6,
            "max_passage_chars": 300,
        },
        "data": {
            "dataloader_class": "FixtureLoader",
            "path": str(REPO / "fixtures" / "noveleval" / "noveleval.jsonl"),
            "top_k": 6,
            "max_queries": 3,
        },
        "robustness": {
            "perturbations": ["random_shuffle"],
            "num_presentations": 3,
            "null_repeats": 2,
            "bootstrap_resamples": 100,
        },
    }
    path = tmp / "psi-embedded.yaml"
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return path


def _psi(cfg: Path, run_dir: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    cmd = [sys.executable, "-m", "presentation_dependence.cli", "psi", str(cfg)]
    return subprocess.Popen([*cmd, "--run-dir", str(run_dir)], env=env, cwd=REPO)


def _finished(cfg: Path, run_dir: Path) -> bytes:
    assert _psi(cfg, run_dir).wait(timeout=1800) == 0
    return (run_dir / "psi" / "grade_distributions.npz").read_bytes()


@pytest.mark.integration
@pytest.mark.slow
def test_fresh_and_resumed_processes_store_identical_scores(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    first = _finished(cfg, tmp_path / "a")
    assert _finished(cfg, tmp_path / "b") == first
    killed = tmp_path / "killed"
    proc = _psi(cfg, killed)
    end = time.monotonic() + 1200
    while not any((killed / "psi" / "per_query").glob("*.npz")) and time.monotonic() < end:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    kept = len(list((killed / "psi" / "per_query").glob("*.npz")))
    assert 1 <= kept < 3, kept
    assert _finished(cfg, killed) == first
