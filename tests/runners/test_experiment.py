"""End-to-end runner tests on the synthetic smoke fixture: resume, shards, refusal, secrets."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from presentation_dependence.cli import main as cli_main
from presentation_dependence.config import load_experiment_config
from presentation_dependence.data.smoke import build_smoke_fixture
from presentation_dependence.errors import ConfigError
from presentation_dependence.io.rankllm_json import read_rankllm_json
from presentation_dependence.io.trec import read_run
from presentation_dependence.runners import EvalManager, ExperimentManager, parse_shard

PLUGIN = '''
"""A slow reranker that logs every query it ranks (for the kill/resume test)."""
import os, time, zlib
from dataclasses import dataclass
from presentation_dependence.records import RankResult
from presentation_dependence.rerankers.base import RERANKERS, Paradigm, RerankerOptions

@dataclass(frozen=True)
class SlowOptions(RerankerOptions):
    delay_s: float = 0.0
    log_path: str = ""

@RERANKERS.register()
class SlowLoggingReranker:
    paradigm = Paradigm.POINTWISE
    config_cls = SlowOptions
    def __init__(self, options=None):
        self.options = options or SlowOptions()
    def rank(self, query, candidates):
        with open(self.options.log_path, "a") as f:
            f.write(f"{os.getpid()} {query.qid}\\n")
        time.sleep(self.options.delay_s)
        scores = [(zlib.crc32(c.docid.encode()) % 1000) / 1000 for c in candidates]
        return RankResult.from_scores(query, candidates, scores)
    def describe(self):
        return {"reranker_class": "SlowLoggingReranker"}
'''


@pytest.fixture()
def workdir(tmp_path, monkeypatch):
    """A tmp project: the smoke fixture, a plugin on sys.path, a config writer."""
    build_smoke_fixture(tmp_path / "data")
    plugdir = tmp_path / "plugins"
    plugdir.mkdir()
    (plugdir / "slow_plugin.py").write_text(PLUGIN, encoding="utf-8")
    monkeypatch.syspath_prepend(str(plugdir))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_config(root: Path, reranker: dict, name: str = "exp") -> Path:
    body = {
        "description": "test",
        "plugins": ["slow_plugin"]
        if reranker.get("reranker_class") == "SlowLoggingReranker"
        else [],
        "reranker": reranker,
        "data": {"dataloader_class": "FixtureLoader", "path": str(root / "data" / "fixture.jsonl")},
        "eval": {"measures": ["ndcg@10", "map", "mrr"]},
    }
    p = root / f"{name}.yaml"
    p.write_text(yaml.safe_dump(body), encoding="utf-8")
    return p


def outputs(run_dir: Path) -> dict[str, bytes]:
    """Every result file of a run folder (not provenance or logs, which record invocations)."""
    files = sorted((run_dir / "per_query_results").glob("*.json"))
    files += [run_dir / "run.trec", run_dir / "metrics.json", run_dir / "resolved_config.yaml"]
    files.append(run_dir / "qrels.txt")
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in files}


def test_identity_run_and_eval(workdir):
    cfg = load_experiment_config(write_config(workdir, {"reranker_class": "IdentityReranker"}))
    summary = ExperimentManager(cfg, workdir / "run").run()
    assert summary.complete and summary.computed == 6 and summary.reused == 0
    metrics = EvalManager(workdir / "run").evaluate()
    assert metrics["num_queries"] == 6
    assert set(metrics["mean"]) == {"ndcg@10", "map", "mrr", "Judged@10"}
    prov = yaml.safe_load((workdir / "run" / "provenance.json").read_text())
    assert [i["phase"] for i in prov["invocations"]] == ["run", "eval"]
    assert prov["invocations"][0]["seeds"] == {"seed": 0}
    # rank_llm's Result form beside run.trec: the same lists in the same order.
    reranked = read_rankllm_json(workdir / "run" / "rerank_results.json")
    run = read_run(workdir / "run" / "run.trec")
    assert {r.query.qid: [c.docid for c in r.candidates] for r in reranked} == {
        q: [e.docid for e in rows] for q, rows in run.entries.items()
    }
    assert all(c.text for r in reranked for c in r.candidates)


def test_rerun_reuses_everything(workdir):
    cfg = load_experiment_config(write_config(workdir, {"reranker_class": "IdentityReranker"}))
    ExperimentManager(cfg, workdir / "run").run()
    before = outputs_run_only(workdir / "run")
    again = ExperimentManager(cfg, workdir / "run").run()
    assert (again.computed, again.reused) == (0, 6)
    assert outputs_run_only(workdir / "run") == before


def outputs_run_only(run_dir: Path) -> dict[str, bytes]:
    return {k: v for k, v in outputs_if_exist(run_dir).items() if k != "metrics.json"}


def outputs_if_exist(run_dir: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(run_dir)): p.read_bytes()
        for p in sorted(run_dir.rglob("*"))
        if p.is_file() and p.name not in ("provenance.json", "run.log", "unit_costs.jsonl")
    }


def test_changed_config_is_refused(workdir):
    path = write_config(workdir, {"reranker_class": "IdentityReranker"})
    ExperimentManager(load_experiment_config(path), workdir / "run").run()
    changed = load_experiment_config(path, ["data.top_k=5"])
    with pytest.raises(ConfigError, match="different config"):
        ExperimentManager(changed, workdir / "run").run()


def test_shards_fill_one_folder_like_a_single_run(workdir):
    log = workdir / "ranked.log"
    rer = {"reranker_class": "SlowLoggingReranker", "log_path": str(log)}
    cfg = load_experiment_config(write_config(workdir, rer))
    ExperimentManager(cfg, workdir / "single").run()
    first = ExperimentManager(cfg, workdir / "sharded", shard=(0, 2)).run()
    assert not first.complete and first.computed == 3
    second = ExperimentManager(cfg, workdir / "sharded", shard=(1, 2)).run()
    assert second.complete and second.computed == 3
    assert outputs_if_exist(workdir / "single") == outputs_if_exist(workdir / "sharded")


def test_parse_shard():
    assert parse_shard("1/4") == (1, 4)
    assert parse_shard(None) is None
    for bad in ("4/4", "a/b", "1", "-1/2"):
        with pytest.raises(Exception, match="shard"):
            parse_shard(bad)


def test_killed_run_resumes_to_identical_outputs(workdir):
    """SIGKILL a run after some queries; the rerun finishes only the rest, byte-identically."""
    log = workdir / "ranked.log"
    rer = {"reranker_class": "SlowLoggingReranker", "log_path": str(log), "delay_s": 0.4}
    cfg_path = write_config(workdir, rer)

    # Reference: one uninterrupted run.
    assert cli_main(["run", str(cfg_path), "--run-dir", str(workdir / "ref"), "--eval"]) == 0

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(workdir / "plugins"), *sys.path])}
    cmd = [
        sys.executable,
        "-m",
        "presentation_dependence.cli",
        "run",
        str(cfg_path),
        "--run-dir",
        str(workdir / "killed"),
    ]
    proc = subprocess.Popen(cmd, env=env, cwd=workdir, stderr=subprocess.DEVNULL)
    per_query = workdir / "killed" / "per_query_results"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(per_query.glob("*.json"))) < 3:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = {p.stem for p in per_query.glob("*.json")}
    assert 3 <= len(done_before) < 6, "the kill should land part-way"
    assert not (workdir / "killed" / "run.trec").exists()

    log.write_text("", encoding="utf-8")
    assert cli_main(["run", str(cfg_path), "--run-dir", str(workdir / "killed"), "--eval"]) == 0
    recomputed = {line.split()[1] for line in log.read_text().splitlines()}
    assert recomputed.isdisjoint(done_before), "finished queries must not be recomputed"
    assert recomputed | done_before == {f"smoke-{i}" for i in range(1, 7)}
    assert outputs(workdir / "killed") == outputs(workdir / "ref")


def test_secrets_never_reach_the_run_folder(workdir, monkeypatch):
    hf, oa = "hf_SENTINEL_0123456789", "sk-SENTINEL-abcdefghij"
    monkeypatch.setenv("HF_TOKEN", hf)
    monkeypatch.setenv("OPENAI_API_KEY", oa)
    cfg_path = write_config(workdir, {"reranker_class": "IdentityReranker"})
    # The user even pastes them into the command line: they must still not be written.
    rc = cli_main(
        [
            "run",
            str(cfg_path),
            "--run-dir",
            str(workdir / "run"),
            "--eval",
            "--override",
            f"description=leak {hf} {oa}",
        ]
    )
    assert rc == 0
    files = [p for p in (workdir / "run").rglob("*") if p.is_file()]
    assert len(files) >= 6
    for p in files:
        data = p.read_bytes()
        assert hf.encode() not in data and oa.encode() not in data, p
    assert b"<redacted:HF_TOKEN>" in (workdir / "run" / "resolved_config.yaml").read_bytes()


def test_unfinished_run_cannot_be_evaluated(workdir):
    from presentation_dependence.errors import PresdepError

    cfg = load_experiment_config(write_config(workdir, {"reranker_class": "IdentityReranker"}))
    ExperimentManager(cfg, workdir / "run", shard=(0, 3)).run()
    with pytest.raises(PresdepError, match="unfinished"):
        EvalManager(workdir / "run").evaluate()


def test_folder_from_before_an_option_existed_is_still_reused(workdir):
    """A frozen config lacking a (since added) option at its default still matches."""
    path = write_config(workdir, {"reranker_class": "IdentityReranker"})
    cfg = load_experiment_config(path)
    ExperimentManager(cfg, workdir / "run").run()
    frozen = workdir / "run" / "resolved_config.yaml"
    raw = yaml.safe_load(frozen.read_text())
    del raw["robustness"]["confidence"]  # as if written before the option existed
    frozen.write_text(yaml.safe_dump(raw, sort_keys=False))
    again = ExperimentManager(cfg, workdir / "run").run()
    assert again.reused == 6
    raw["robustness"]["confidence"] = 0.9  # a real difference is still refused
    frozen.write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(ConfigError, match="different config"):
        ExperimentManager(cfg, workdir / "run").run()
