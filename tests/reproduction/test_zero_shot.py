"""The zero-shot-students task (issue 35): its generated configs read ../shared/data in place.

Each collection's data is loaded once, through the config the generator wrote (all rerankers of
a collection share one data block, checked first). The expected query count is the population's
own figure (from each folder's SOURCE.md), capped at the task's 50; where every judged query is
kept, the given order's nDCG@10 must reproduce the BM25 figure ../shared/data/README.md measured
on the full run (nDCG@10 needs only the top 10, so the top-20 cut does not change it). Skipped
per collection when its files are absent.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from presentation_dependence.config import EvalConfig, load_experiment_config
from presentation_dependence.config.experiment import ExperimentConfig
from presentation_dependence.data import load_dataset
from presentation_dependence.data.config import DataConfig
from presentation_dependence.records import Run, RunEntry
from presentation_dependence.reproduction.populations import load_population
from presentation_dependence.reproduction.tasks import (
    expand_jobs,
    generate_configs,
    in_place_copy,
    load_task,
)
from presentation_dependence.runners import evaluate_run

REPO = Path(__file__).resolve().parents[2]
TASK = "zero-shot-students"
POPULATION = load_population("zero-shot-shared", REPO)
PREFIX = "../shared/data/"


@pytest.fixture(scope="module")
def configs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[ExperimentConfig]]:
    """Every job's generated config (validated on writing), by collection id."""
    task = load_task(TASK, REPO)
    jobs = expand_jobs(task, root=REPO)
    root = tmp_path_factory.mktemp("zero-shot")
    out: dict[str, list[ExperimentConfig]] = {}
    for job, path in zip(jobs, generate_configs(jobs, root=root), strict=True):
        out.setdefault(job.collection.id, []).append(load_experiment_config(path))
    return out


def test_task_crosses_the_population_with_the_scorers(configs) -> None:
    task = load_task(TASK, REPO)
    assert task.data_source == "local" and task.population == "zero-shot-shared"
    assert task.data == {
        "top_k": 20,
        "max_queries": 50,
        "query_sample_seed": 0,
        "judged_only": True,
    }
    ids = [r.id for r in task.rerankers]
    assert ids[:4] == ["bm25", "e5-teacher", "e5-teacher-300", "off-the-shelf"]
    shipped = {p.parent.name for p in (REPO / "students").glob("*/student.json")}
    students = task.rerankers[4:]  # one row per shipped student: off-the-shelf + its adapter
    assert students and {r.reranker["adapter"] for r in students} <= shipped
    base = task.rerankers[3].reranker
    # the teacher reading what the students read: the same cut, otherwise the E5 row
    cut = task.rerankers[2].reranker
    assert cut == {**task.rerankers[1].reranker, "max_passage_chars": base["max_passage_chars"]}
    # dtype may differ: the arithmetic a row ran in, recorded per run (provenance) and stated on
    # the study page (the OC-SFT rows are float32 on a CPU that emulates bfloat16)
    same = {k: v for k, v in base.items() if k != "dtype"}
    for r in students:
        assert {k: v for k, v in r.reranker.items() if k not in ("adapter", "dtype")} == same, r.id
        assert r.reranker.get("dtype", "auto") in ("auto", "float32", base["dtype"]), r.id
    assert list(configs) == POPULATION.ids()
    assert all(len(v) == len(task.rerankers) for v in configs.values())
    assert "data" not in [s.id for s in task.stages]  # nothing is materialised


def _rebase(data: DataConfig, shared: Path) -> DataConfig:
    """The config's ../shared/data paths pointed at ``shared`` (PRESDEP_SHARED_DATA may differ)."""
    moved = {}
    for key in ("path", "run", "qrels"):
        value = getattr(data, key)
        if value is not None:
            assert isinstance(value, str) and value.startswith(PREFIX), (key, value)
            moved[key] = str(shared / value.removeprefix(PREFIX))
    return dataclasses.replace(data, **moved)


@pytest.mark.parametrize("cid", POPULATION.ids())
def test_each_collection_loads_in_place(cid: str, configs, shared_data: Path) -> None:
    c = POPULATION.get(cid)
    jobs = configs[cid]
    data = jobs[0].data
    assert all(j.data == data for j in jobs)  # one data block per collection: loaded once below
    assert all(j.eval.relevance_level == c.relevance_level for j in jobs)
    assert all(j.robustness.relevant_grade == c.relevance_level for j in jobs if j.robustness)
    local = in_place_copy(c)
    folder = shared_data / local.path.removeprefix(PREFIX)
    if not all((folder / f).is_file() for f in local.files.values()):
        pytest.skip(f"{folder} (files {sorted(local.files.values())}) not found in ../shared/data")
    expected_class = {"beir": "BeirLoader", "rankllm_json": "RankLLMJsonLoader"}[local.layout]
    assert data.dataloader_class == expected_class
    ds = load_dataset(_rebase(data, shared_data))
    assert c.queries is not None and len(ds.requests) == min(50, c.queries)
    assert all(len(r.candidates) == 20 for r in ds.requests)
    assert ds.qrels is not None and set(ds.qrels.qids()) == set(ds.qids())  # judged only
    if c.queries <= 50:  # every judged query kept: the README's full-run figure applies
        run = Run(
            {
                r.query.qid: tuple(
                    RunEntry(r.query.qid, x.docid, x.rank, float(-x.rank)) for x in r.candidates
                )
                for r in ds.requests
            }
        )
        cfg = EvalConfig(measures=["ndcg@10"], relevance_level=c.relevance_level)
        ndcg = evaluate_run(run, ds.qrels, cfg)["mean"]["ndcg@10"]
        assert round(ndcg, 4) == pytest.approx(c.first_stage.reference["ndcg@10"], abs=1e-9)
