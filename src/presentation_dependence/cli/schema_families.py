"""Every config family ``presdep schema`` documents: its file's dataclass, where its configs
live and where its generated schema page is written.

The pages are generated from the dataclasses (:mod:`presentation_dependence.config.schema_doc`)
and ``tests/config/test_schema_doc.py`` fails when a committed page differs from them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from presentation_dependence.config.experiment import ExperimentConfig
from presentation_dependence.config.schema_doc import (
    dataclass_schema,
    overrides_note,
    schema_markdown,
)
from presentation_dependence.judge.config import JudgeTaskConfig
from presentation_dependence.qa.reader import ReaderConfig
from presentation_dependence.reproduction.appendix import Appendix
from presentation_dependence.reproduction.populations import Population
from presentation_dependence.reproduction.tasks import Task
from presentation_dependence.robustness.verify import ArchiveChecks
from presentation_dependence.studies.plan import Plan
from presentation_dependence.training.config import TrainingConfig
from presentation_dependence.training.fit_probe import ProbeConfig

__all__ = ["FAMILIES", "Family", "family_markdown"]

_RERANKER = (
    "A `reranker` (or training `student`) block is a reranker block as in experiment configs: "
    "`reranker_class` and that reranker's options ([experiment schema]"
    "(../../configs/experiments/_schema.md), section `reranker`)."
)


@dataclass(frozen=True)
class Family:
    """One kind of config file: ``cls`` is what a file of it loads into; ``items`` names the
    key whose elements are ``cls`` when the file is a list or mapping of them."""

    name: str
    cls: type
    configs: str
    page: str
    about: str
    items: str = ""


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("experiment", ExperimentConfig, "configs/experiments/<ID>.yaml",
               "configs/experiments/_schema.md", "one reranking experiment (run, PSI, eval)"),
        Family("training", TrainingConfig, "configs/self-distill/, configs/study/<student>.yaml",
               "docs/schema/training.md", "one student: silver labels, recipe, LoRA, splits"),
        Family("judge", JudgeTaskConfig, "configs/judge/<ID>.yaml", "docs/schema/judge.md",
               "one judge task: responses, judge, placements, noise, gate"),
        Family("population", Population, "configs/reproduction/populations/<NAME>.yaml",
               "docs/schema/population.md", "the collections a study task runs on"),
        Family("task", Task, "configs/reproduction/tasks/<NAME>.yaml", "docs/schema/task.md",
               "a study task: population x rerankers, its stages"),
        Family("plan", Plan, "configs/study/<plan>.yaml (students.yaml, content-study.yaml)",
               "docs/schema/plan.md", "a study plan: resumable steps in lanes"),
        Family("appendix", Appendix, "configs/reproduction/appendix.yaml",
               "docs/schema/appendix.md", "the appendix map and its readiness audit"),
        Family("checks", ArchiveChecks, "students/checks.yaml", "docs/schema/checks.md",
               "re-score checks of shipped students against archived runs"),
        Family("reader", ReaderConfig, "configs/reader/<NAME>.yaml", "docs/schema/reader.md",
               "the QA reader (qa.reader names one)"),
        Family("probes", ProbeConfig, "configs/probes/<NAME>.yaml", "docs/schema/probes.md",
               "fit probes: `defaults` (a probe block every probe starts from) and `probes` "
               "(name -> probe block)", "probes.NAME"),
    )
}  # fmt: skip


def family_markdown(name: str) -> str:
    """The generated schema page of the family ``name`` (a key of :data:`FAMILIES`)."""
    fam = FAMILIES[name]
    if name == "experiment":
        return schema_markdown()
    intro = (
        f"A {name} config ({fam.about}) lives at `{fam.configs}`. Loading is strict: unknown "
        "keys are errors with a did-you-mean and the line. " + overrides_note(name)
    )
    if fam.items:
        intro += f" Each element of `{fam.items.split('.')[0]}` has the keys below."
    title = f"{name.capitalize()} config schema"
    command = f"presdep schema {name} --write {fam.page}"
    if fam.items:
        return dataclass_schema(fam.cls, title=title, command=command, intro=intro, at=fam.items)
    text = dataclass_schema(fam.cls, title=title, command=command, intro=intro)
    if {"reranker", "student"} & {f.name for f in fields(fam.cls)}:
        text += "\n" + _RERANKER + "\n"
    return text
