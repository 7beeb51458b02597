"""Tasks, generated configs, stages and the study CLI, end to end on a tiny tree."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from presentation_dependence.config import load_experiment_config
from presentation_dependence.data import load_dataset
from presentation_dependence.errors import ConfigError
from presentation_dependence.reproduction.materialise import materialise
from presentation_dependence.reproduction.plan import Environment, make_plan
from presentation_dependence.reproduction.populations import load_population
from presentation_dependence.reproduction.results_index import load_index
from presentation_dependence.reproduction.tasks import (
    expand_jobs,
    generate_configs,
    job_config,
    list_tasks,
    load_task,
)
from presentation_dependence.studies.plan import Step
from presentation_dependence.studies.sequencer import run_steps
from presentation_dependence.studies.stages import (
    select_jobs,
    stage_commands,
)

REPO = Path(__file__).resolve().parents[2]


def _script(rel: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(Path(rel).stem, REPO / rel)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_shipped_tasks_expand_and_generate_valid_configs(tmp_path: Path) -> None:
    assert {"passage-reranking", "smoke-reranking"} <= set(list_tasks(REPO))
    task = load_task("passage-reranking", REPO)
    jobs = expand_jobs(task, root=REPO)
    assert len(jobs) == 18 * len(task.rerankers)
    assert [s.id for s in task.stages][:3] == ["data", "configs", "rerank"]
    written = generate_configs(jobs, root=tmp_path)
    assert len(written) == len(jobs)
    cfg = load_experiment_config(
        tmp_path / "runs/study/passage-reranking/configs/dl19--smollm2-grade.yaml"
    )
    assert cfg.data.dataloader_class == "FixtureLoader" and cfg.data.top_k == 100
    assert cfg.data.path == "data/trec-dl19-passage/fixture.jsonl" and cfg.eval.relevance_level == 2
    assert cfg.reranker.reranker_class == "GradeReranker"
    sci = job_config(next(j for j in jobs if j.id == "scifact--given-order"))
    assert sci["eval"]["relevance_level"] == 1
    smoke = load_task("smoke-reranking", REPO)
    assert len(expand_jobs(smoke, root=REPO)) == 4 * len(smoke.rerankers)


def test_bad_tasks(study_root: Path) -> None:
    path = study_root / "configs/reproduction/tasks/tiny-task.yaml"
    raw = yaml.safe_load(path.read_text())
    raw["rerankers"].append({"id": "bad", "reranker": {"reranker_class": "IdentityRerankr"}})
    path.write_text(yaml.safe_dump(raw))
    task = load_task("tiny-task", study_root)
    with pytest.raises(ConfigError, match=r"job local-beir--bad.*IdentityReranker"):
        generate_configs(expand_jobs(task, root=study_root), root=study_root)
    raw["stags"] = []
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match="Did you mean 'stages'"):
        load_task("tiny-task", study_root)
    with pytest.raises(ConfigError, match="Did you mean 'tiny-task'"):
        load_task("tiny-tsk", study_root)
    with pytest.raises(ConfigError, match=r"has no stage 'rerak'.*Did you mean 'rerank'"):
        load_task("passage-reranking", REPO).stage("rerak")


def test_stage_commands_block_jobs_without_data(study_root: Path) -> None:
    task = load_task("tiny-task", study_root)
    jobs = expand_jobs(task, root=study_root)
    assert [j.id for j in select_jobs(jobs, ["local-*"])] == [
        "local-beir--given",
        "local-rl--given",
    ]
    assert [j.id for j in select_jobs(jobs, ["given"])] == [j.id for j in jobs]
    cmds = stage_commands(task, task.stage("rerank"), jobs, root=study_root)
    assert all(c.blocked and "data missing" in c.blocked for c in cmds)
    assert "runs/study/tiny-task/configs/remote--given.yaml" in cmds[2].argv
    once = stage_commands(task, task.stage("echo"), jobs, root=study_root)
    assert len(once) == 1 and once[0].blocked == "no job is evaluated yet"


def test_stage_run_end_to_end(study_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Materialise, generate, rerank (IdentityReranker), evaluate and record, as the CLI does."""
    pytest.importorskip("bm25s")
    monkeypatch.chdir(study_root)
    env = Environment(probe_network=False)
    for row in make_plan(load_population("tiny"), env=env):
        materialise(row)
    task = load_task("tiny-task")
    jobs = select_jobs(expand_jobs(task), ["local-*"])
    generate_configs(jobs)
    rerank = stage_commands(task, task.stage("rerank"), jobs)
    assert (
        run_steps(rerank, dry_run=True) == 0
        and not (study_root / "runs").joinpath("study", "tiny-task", "local-rl--given").exists()
    )
    assert run_steps(rerank) == 0
    for j in jobs:
        assert (study_root / j.run_dir / "metrics.json").is_file()
    assert run_steps(stage_commands(task, task.stage("record"), jobs)) == 0
    entries = load_index(study_root / "idx.yaml")
    assert sorted(e["config_id"] for e in entries) == ["local-beir--given", "local-rl--given"]
    beir = next(e for e in entries if e["config_id"] == "local-beir--given")
    assert beir["first_stage"]["retriever"] == "bm25s" and beir["num_queries"] == 2
    echo = stage_commands(task, task.stage("echo"), jobs)
    assert echo[0].blocked is None and str(jobs[0].run_dir) in echo[0].argv
    marker = study_root / "ran.txt"
    failing = [
        Step("a", [sys.executable, "-c", "raise SystemExit(3)"], lane="rerank"),
        Step("b", [sys.executable, "-c", f"open({str(marker)!r}, 'w')"], lane="rerank"),
    ]
    assert run_steps(failing) == 3 and not marker.exists()
    assert run_steps(failing, keep_going=True) == 3 and marker.exists()


def test_study_script(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.chdir(REPO)
    study = _script("scripts/study.py")
    assert study.main(["task", "list"]) == 0
    assert "passage-reranking" in capsys.readouterr().out
    assert (
        study.main(
            [
                "--data-root",
                str(tmp_path),
                "task",
                "show",
                "--task",
                "passage-reranking",
                "--jobs",
                "dl19--*",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "dl19--given-order" in out and "missing" in out and "dl20" not in out
    assert study.main(["stage", "list", "--task", "passage-reranking"]) == 0
    assert (
        study.main(
            [
                "--data-root",
                str(tmp_path),
                "stage",
                "commands",
                "--task",
                "passage-reranking",
                "--stage",
                "rerank",
                "--jobs",
                "dl19--given-order",
            ]
        )
        == 0
    )
    assert "# blocked: data missing" in capsys.readouterr().out
    assert study.main(["stage", "run", "--task", "passage-reranking", "--stage", "nope"]) == 2
    assert study.main(["appendix", "list"]) == 0
    assert "tab-reranking-main" in capsys.readouterr().out
    assert study.main(["appendix", "show", "tab-training"]) == 0
    assert "supcon" in capsys.readouterr().out


def _edit_task(root: Path, **changes: object) -> None:
    path = root / "configs/reproduction/tasks/tiny-task.yaml"
    raw = yaml.safe_load(path.read_text())
    raw.update(changes)
    path.write_text(yaml.safe_dump(raw))


def test_local_data_source_reads_the_copy_in_place(
    study_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """data_source: local points each config at the population's local copy; the task's data
    keys are merged in; robustness.relevant_grade follows the collection's relevance_level."""
    monkeypatch.chdir(study_root)
    data = {"top_k": 2, "max_queries": 1, "query_sample_seed": 3, "judged_only": True}
    _edit_task(
        study_root,
        data_source="local",
        data=data,
        collections=["local-rl"],
        robustness={"num_presentations": 2},
    )
    task = load_task("tiny-task")
    (job,) = expand_jobs(task)
    raw = job_config(job)
    assert raw["data"] == {
        "dataloader_class": "RankLLMJsonLoader",
        "path": "corpora/rl/cands.json",
        "qrels": "corpora/rl/qrels.txt",
        **data,
    }
    assert raw["eval"]["relevance_level"] == 2 and raw["robustness"]["relevant_grade"] == 2
    (written,) = generate_configs([job])
    ds = load_dataset(load_experiment_config(written).data)
    assert ds.qids() == ["7"] and [c.docid for c in ds.requests[0].candidates] == ["p1", "p2"]
    (cmd,) = stage_commands(task, task.stage("rerank"), [job])
    assert cmd.blocked is None  # no fixture under data/: the copy itself is the input
    (study_root / "corpora/rl/cands.json").unlink()
    (cmd,) = stage_commands(task, task.stage("rerank"), [job])
    assert cmd.blocked and "cands.json" in cmd.blocked and "read in place" in cmd.blocked
    _edit_task(study_root, robustness={"num_presentations": 2, "relevant_grade": 3})
    assert job_config(expand_jobs(load_task("tiny-task"))[0])["robustness"]["relevant_grade"] == 3


def test_local_data_source_needs_a_readable_copy(study_root: Path) -> None:
    _edit_task(study_root, data_source="local", collections=["local-beir", "remote"])
    beir, remote = expand_jobs(load_task("tiny-task", study_root), root=study_root)
    with pytest.raises(ConfigError, match=r"local-beir.*must list files\.run"):
        job_config(beir)
    with pytest.raises(ConfigError, match="'remote' has no local copy"):
        job_config(remote)


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"data": {"path": "x.jsonl"}}, r"data\.path cannot be set by a task"),
        ({"data": {"max_querys": 3}}, "Did you mean 'max_queries'"),
        ({"data": {"query_sample_seed": 1}}, r"query_sample_seed.*max_queries"),
        ({"data": {"top_k": 0}}, r"data\.top_k must be >= 1"),
        ({"data": {"judged_only": "yes"}}, "judged_only"),
        ({"data_source": "remote"}, "data_source"),
    ],
)
def test_bad_task_data(study_root: Path, changes: dict, match: str) -> None:
    _edit_task(study_root, **changes)
    with pytest.raises(ConfigError, match=match):
        load_task("tiny-task", study_root)
