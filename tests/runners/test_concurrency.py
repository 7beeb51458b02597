"""Issue 16 (9): processes sharing a run folder lose no provenance and duplicate no work."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import yaml

from presentation_dependence.data.smoke import build_smoke_fixture
from presentation_dependence.runners.run_folder import RunFolder

from .test_experiment import PLUGIN, outputs


def _append(folder: str, who: int, n: int) -> None:
    for i in range(n):
        RunFolder(folder).append_provenance({"who": who, "i": i})


def test_concurrent_provenance_appends_lose_nothing(tmp_path):
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append, args=(str(tmp_path), w, 15)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert all(p.exitcode == 0 for p in procs)
    records = json.loads((tmp_path / "provenance.json").read_text())["invocations"]
    assert sorted((r["who"], r["i"]) for r in records) == [
        (w, i) for w in range(4) for i in range(15)
    ]


def test_two_processes_on_one_folder_rank_each_query_once(tmp_path):
    build_smoke_fixture(tmp_path / "data")
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "slow_plugin.py").write_text(PLUGIN, encoding="utf-8")
    log = tmp_path / "ranked.log"
    body = {
        "plugins": ["slow_plugin"],
        "reranker": {"reranker_class": "SlowLoggingReranker", "log_path": str(log), "delay_s": 0.5},
        "data": {"dataloader_class": "FixtureLoader", "path": str(tmp_path / "data/fixture.jsonl")},
        "eval": {"measures": ["ndcg@10"]},
    }
    cfg = tmp_path / "exp.yaml"
    cfg.write_text(yaml.safe_dump(body), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "plugins"), *sys.path])}
    cmd = [sys.executable, "-m", "presentation_dependence.cli", "run", str(cfg), "--run-dir"]
    procs = [
        subprocess.Popen([*cmd, str(tmp_path / "shared")], env=env, cwd=tmp_path) for _ in range(2)
    ]
    assert [p.wait(600) for p in procs] == [0, 0]
    ranked = Counter(line.split()[1] for line in log.read_text().splitlines())
    assert ranked == Counter({f"smoke-{i}": 1 for i in range(1, 7)})
    assert (tmp_path / "shared" / "run.trec").is_file()
    locks = [p.name for p in (tmp_path / "shared").glob(".locks/*")]
    assert locks == ["provenance.lock"]  # the per-query claims are tidied away

    log.write_text("", encoding="utf-8")
    single = subprocess.run([*cmd, str(tmp_path / "single")], env=env, cwd=tmp_path, check=False)
    assert single.returncode == 0
    drop = {"metrics.json", "qrels.txt"}
    a = {k: v for k, v in outputs_or_none(tmp_path / "shared").items() if k not in drop}
    b = {k: v for k, v in outputs_or_none(tmp_path / "single").items() if k not in drop}
    assert a == b


def outputs_or_none(run_dir: Path) -> dict[str, bytes]:
    (run_dir / "metrics.json").touch()
    return outputs(run_dir)
