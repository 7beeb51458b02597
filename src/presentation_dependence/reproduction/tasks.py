"""Task pipelines (``configs/reproduction/tasks/<task>.yaml``) and the per-job configs they generate.

A task crosses a population's collections with a list of rerankers; each (collection, reranker)
pair is a *job* with one generated experiment config and one run folder::

    task: passage-reranking
    description: ...
    population: reranking-primary-18
    collections: []                   # optional subset (ids or aliases); empty = all
    output_root: runs/study           # configs: <output_root>/<task>/configs/<job>.yaml
    seed: 0                           # run folders: <output_root>/<task>/<collection>/<reranker>/
    data_source: fixture              # or local: read each collection's local copy in place
    data: {top_k: 20, max_queries: 50, query_sample_seed: 0, judged_only: true}
    eval: {measures: [ndcg@10, map, mrr]}
    robustness: {num_presentations: 10}
    rerankers:
      - {id: given-order, reranker: {reranker_class: IdentityReranker}}
    stages:
      - {id: rerank, per_job: true, command: "presdep run {config} --run-dir {run_dir} --eval"}

With ``data_source: fixture`` (the default) a generated config reads
``data/<data_dir>/fixture.jsonl`` with the FixtureLoader (what ``setup_reproduction_data.py run``
materialises). With ``data_source: local`` it reads the collection's first ``local`` copy where
it lies: a ``beir`` folder with the BeirLoader (``data.run`` = its ``files.run``), a
``rankllm_json`` file with the RankLLMJsonLoader (``data.qrels`` = its ``files.qrels``), a
``fixture`` with the FixtureLoader; nothing is copied or retrieved again. Either way the data
block keeps the collection's first-stage depth as ``data.top_k``, then takes the task's ``data``
keys (the query selection and depth: any ``data`` key but those naming the source). ``eval``
gets the collection's ``relevance_level``, and so does ``robustness.relevant_grade`` unless the
task sets it. Each config is validated like any experiment config before it is written.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

import yaml

from presentation_dependence.config.experiment import config_from_raw
from presentation_dependence.config.loader import list_named, load_config, named_config_path
from presentation_dependence.data.config import DataConfig
from presentation_dependence.errors import ConfigError, RegistryError
from presentation_dependence.fields import build_dataclass
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.registry import did_you_mean
from presentation_dependence.reproduction.plan import FIXTURE
from presentation_dependence.reproduction.populations import (
    Collection,
    LocalCopy,
    Population,
    load_population,
)

__all__ = [
    "TASKS_DIR",
    "Job",
    "RerankerSpec",
    "StageSpec",
    "Task",
    "expand_jobs",
    "generate_configs",
    "in_place_copy",
    "job_config",
    "list_tasks",
    "load_task",
]

TASKS_DIR = Path("configs/reproduction/tasks")
# data keys that name the source: the generator sets them, a task's ``data`` may not
SOURCE_KEYS = ("dataloader_class", "path", "run", "corpus", "topics", "qrels")
TASK_DATA_KEYS = tuple(f.name for f in fields(DataConfig) if f.name not in SOURCE_KEYS)


@dataclass(frozen=True)
class RerankerSpec:
    """A named reranker block (``reranker_class`` and its options)."""

    id: str
    reranker: dict[str, Any]
    description: str = ""

    def __post_init__(self) -> None:
        if not self.id or "--" in self.id or "/" in self.id:
            raise ConfigError(f"reranker id {self.id!r}: use a plain token without '--' or '/'")
        if "reranker_class" not in self.reranker:
            raise ConfigError(f"reranker {self.id!r}: the block needs a reranker_class")


@dataclass(frozen=True)
class StageSpec:
    """One stage: a command template, run once (``per_job: false``) or once per job.

    Placeholders: ``{task}``, ``{output_root}`` and, per job, ``{job}``, ``{config}``,
    ``{run_dir}``, ``{collection}``, ``{reranker}``; once-only stages may use ``{run_dirs}``
    (the run folders of every job evaluated so far, i.e. holding ``metrics.json``).
    """

    id: str
    command: str
    per_job: bool = True
    help: str = ""


@dataclass(frozen=True)
class Task:
    task: str
    population: str
    rerankers: list[RerankerSpec]
    stages: list[StageSpec]
    description: str = ""
    collections: list[str] = field(default_factory=list)
    output_root: str = "runs/study"
    seed: int = 0
    eval: dict[str, Any] = field(default_factory=dict)
    robustness: dict[str, Any] = field(default_factory=dict)
    data_source: Literal["fixture", "local"] = "fixture"
    data: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key in self.data:
            if key not in TASK_DATA_KEYS:
                raise ConfigError(
                    f"task {self.task!r}: data.{key} cannot be set by a task (the source keys "
                    f"come from the population).{did_you_mean(str(key), list(TASK_DATA_KEYS))} "
                    f"Task data keys: {', '.join(TASK_DATA_KEYS)}",
                    key=f"data.{key}",
                )
        build_dataclass(DataConfig, self.data, prefix="data")  # DataConfig checks the values
        for kind, ids in (
            ("reranker", [r.id for r in self.rerankers]),
            ("stage", [s.id for s in self.stages]),
        ):
            if len(set(ids)) != len(ids):
                raise ConfigError(f"task {self.task!r}: duplicate {kind} ids in {ids}")
        if not self.rerankers:
            raise ConfigError(f"task {self.task!r}: needs at least one reranker")

    def stage(self, stage_id: str) -> StageSpec:
        for s in self.stages:
            if s.id == stage_id:
                return s
        ids = [s.id for s in self.stages]
        raise ConfigError(
            f"task {self.task!r} has no stage {stage_id!r}.{did_you_mean(stage_id, ids)} "
            f"Stages: {', '.join(ids)}"
        )

    @property
    def folder(self) -> Path:
        return Path(self.output_root) / self.task


@dataclass(frozen=True)
class Job:
    """One (collection, reranker) pair of a task."""

    task: Task
    collection: Collection
    reranker: RerankerSpec

    @property
    def id(self) -> str:
        return f"{self.collection.id}--{self.reranker.id}"

    @property
    def config_path(self) -> Path:
        return self.task.folder / "configs" / f"{self.id}.yaml"

    @property
    def run_dir(self) -> Path:
        """``<output_root>/<task>/<collection>/<reranker>/``: the layout ``presdep study
        collections`` reads (one folder per collection, one run folder per scorer)."""
        return self.task.folder / self.collection.id / self.reranker.id

    def fixture(self, data_root: Path) -> Path:
        return data_root / self.collection.data_dir / FIXTURE


def list_tasks(root: str | Path = ".") -> list[str]:
    return list_named(TASKS_DIR, root)


def load_task(name_or_path: str | Path, root: str | Path = ".") -> Task:
    """Load ``configs/reproduction/tasks/<name>.yaml`` (or a path) strictly."""
    path = named_config_path("task", TASKS_DIR, name_or_path, root)

    def build(raw: dict[str, Any], stem: str) -> Task:
        task = build_dataclass(Task, raw)
        if task.task != stem:
            raise ConfigError(f"'task' is {task.task!r}; it must equal the file stem", key="task")
        return task

    return load_config(path, build, family="task")


def expand_jobs(
    task: Task, population: Population | None = None, root: str | Path = "."
) -> list[Job]:
    """Every (collection, reranker) job, collections in population order."""
    pop = population or load_population(task.population, root)
    return [Job(task, c, r) for c in pop.select(task.collections or None) for r in task.rerankers]


def in_place_copy(c: Collection) -> LocalCopy:
    """The local copy a ``data_source: local`` task reads: the collection's first."""
    if not c.local:
        raise ConfigError(f"collection {c.id!r} has no local copy to read in place")
    return c.local[0]


def _source_block(job: Job, data_root: str) -> dict[str, Any]:
    """The data keys naming where a job's queries and candidates come from."""
    c = job.collection
    if job.task.data_source == "fixture":
        return {"dataloader_class": "FixtureLoader", "path": f"{data_root}/{c.data_dir}/{FIXTURE}"}
    local = in_place_copy(c)
    # the path and the (portable, posix) relative files joined; '..' in a file folded away
    wanted = {"beir": ("run",), "rankllm_json": ("candidates", "qrels"), "fixture": ("fixture",)}
    missing = [k for k in wanted[local.layout] if k not in local.files]
    if missing:
        raise ConfigError(
            f"collection {c.id!r}: its local {local.layout} copy at {local.path} must list "
            f"files.{' and files.'.join(missing)} to be read in place"
        )
    f = {k: posixpath.normpath(posixpath.join(local.path, v)) for k, v in local.files.items()}
    if local.layout == "beir":
        return {"dataloader_class": "BeirLoader", "path": local.path, "run": f["run"]}
    if local.layout == "rankllm_json":
        return {
            "dataloader_class": "RankLLMJsonLoader",
            "path": f["candidates"],
            "qrels": f["qrels"],
        }
    return {"dataloader_class": "FixtureLoader", "path": f["fixture"]}


def job_config(job: Job, data_root: str = "data") -> dict[str, Any]:
    """The experiment config (plain YAML mapping) of one job."""
    c = job.collection
    data = {**_source_block(job, data_root), "top_k": c.first_stage.depth, **job.task.data}
    raw: dict[str, Any] = {
        "description": f"{job.task.task}: {c.name} x {job.reranker.id}",
        "seed": job.task.seed,
        "output_root": str(job.task.folder),
        "reranker": dict(job.reranker.reranker),
        "data": data,
        "eval": {**job.task.eval, "relevance_level": c.relevance_level},
    }
    if job.task.robustness:
        raw["robustness"] = {**job.task.robustness}
        raw["robustness"].setdefault("relevant_grade", c.relevance_level)
    return raw


def generate_configs(
    jobs: list[Job], data_root: str = "data", root: str | Path = "."
) -> list[Path]:
    """Validate and write every job's config (atomically); returns the paths written."""
    written = []
    for job in jobs:
        raw = job_config(job, data_root)
        try:
            config_from_raw(raw, job.id)
        except (ConfigError, RegistryError) as e:
            raise ConfigError(f"task {job.task.task!r}, job {job.id}: {e}") from None
        head = (
            f"# Generated by 'python scripts/study.py task generate --task {job.task.task}'; "
            "do not edit (edit the task or population YAML instead).\n"
        )
        path = Path(root) / job.config_path
        atomic_write_text(path, head + yaml.safe_dump(raw, sort_keys=False, allow_unicode=True))
        written.append(path)
    return written
