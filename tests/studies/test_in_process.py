"""A pass of several jobs in one process (``presdep study stage pass``): the run folders of the
commands, each reranker block built once, the deadline and the timing record."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from presentation_dependence.cli import main
from presentation_dependence.config import ExperimentConfig, load_experiment_config
from presentation_dependence.errors import PresdepError
from presentation_dependence.rerankers import Reranker, build_reranker
from presentation_dependence.robustness.runner import PSIRunner
from presentation_dependence.runners import EvalManager, ExperimentManager
from presentation_dependence.studies.in_process import PassJob, parse_pass_job, run_in_process

from ..robustness.test_runner import identity_psi_config, make_fixture

OUTPUTS = ("run.trec", "metrics.json", "psi/psi_metrics.json")


def _commands(config: Path, run_dir: Path) -> None:
    """What ``presdep run --eval`` then ``presdep psi`` write, one command after the other."""
    cfg = load_experiment_config(config)
    ExperimentManager(cfg, run_dir).run()
    EvalManager(run_dir).evaluate()
    PSIRunner(cfg, run_dir).run()


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return identity_psi_config(tmp_path, make_fixture(tmp_path / "fixture.jsonl"))


def test_pass_writes_the_commands_folders_building_each_reranker_once(tmp_path, config):
    built: list[str] = []

    def build(cfg: ExperimentConfig) -> Reranker:
        built.append(cfg.reranker.reranker_class)
        return build_reranker(cfg.reranker.reranker_class, cfg.reranker.options)

    jobs = [PassJob(n, config, tmp_path / n) for n in ("a", "b")]
    timings = tmp_path / "steps.jsonl"
    done = run_in_process(jobs, build=build, timings=timings).stages
    assert built == ["IdentityReranker"]  # two jobs, one reranker block
    assert [(t.job, t.stage) for t in done] == [
        (j, s) for j in ("a", "b") for s in ("run", "eval", "psi")
    ]
    assert done[0].computed == 3 and done[1].computed is None  # 3 queries ranked; eval: none
    lines = [json.loads(x) for x in timings.read_text().splitlines()]
    assert [x["step"] for x in lines] == [f"{t.job} {t.stage}" for t in done]
    _commands(config, tmp_path / "by-commands")
    for name in OUTPUTS:
        expected = (tmp_path / "by-commands" / name).read_text()
        assert (tmp_path / "a" / name).read_text() == expected, name
        assert (tmp_path / "b" / name).read_text() == expected, name


def test_pass_resumes_a_finished_folder_without_recomputing(tmp_path, config):
    job = PassJob("a", config, tmp_path / "a")
    run_in_process([job])
    again = run_in_process([job]).stages
    assert again[0].computed == 0  # every query reused


def test_no_job_starts_after_the_deadline(tmp_path, config):
    done = run_in_process([PassJob("a", config, tmp_path / "a")], deadline=time.monotonic() - 1)
    assert done.stages == [] and done.failed == [] and not (tmp_path / "a").exists()


def test_a_failing_job_stops_the_pass_unless_keep_going(tmp_path, config):
    jobs = [
        PassJob("gone", tmp_path / "missing.yaml", tmp_path / "x"),
        PassJob("a", config, tmp_path / "a"),
    ]
    with pytest.raises(PresdepError, match=r"missing\.yaml"):
        run_in_process(jobs)
    assert not (tmp_path / "a").exists()
    out = run_in_process(jobs, keep_going=True)
    assert [name for name, _ in out.failed] == ["gone"] and "missing.yaml" in out.failed[0][1]
    assert {t.job for t in out.stages} == {"a"} and (tmp_path / "a" / "psi").is_dir()


def test_pass_job_text_and_its_refusal():
    job = parse_pass_job("oc-sft=configs/x.yaml@runs/students/dl19/oc-sft")
    assert job == PassJob("oc-sft", Path("configs/x.yaml"), Path("runs/students/dl19/oc-sft"))
    for bad in ("configs/x.yaml@runs/a", "a=configs/x.yaml", "=x@y"):
        with pytest.raises(PresdepError, match="NAME=CONFIG@RUN_DIR"):
            parse_pass_job(bad)


def test_cli_pass_runs_the_extra_jobs_with_overrides(tmp_path, config):
    rc = main(
        [
            "study", "stage", "pass", "--task", "zero-shot-students", "--jobs", "no-such-job",
            "--run", f"x={config}@{tmp_path / 'x'}",
            "--override", "robustness.num_presentations=2",
            "--timings", str(tmp_path / "steps.jsonl"),
        ]
    )  # fmt: skip
    assert rc == 0
    frozen = yaml.safe_load((tmp_path / "x" / "resolved_config.yaml").read_text())
    assert frozen["robustness"]["num_presentations"] == 2
    assert len((tmp_path / "steps.jsonl").read_text().splitlines()) == 3
