"""Every config under configs/ loads through its family's loader (the one YAML loader)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from presentation_dependence.config import load_experiment_config
from presentation_dependence.config.experiment import config_from_raw
from presentation_dependence.judge.config import config_from_raw as judge_from_raw
from presentation_dependence.judge.config import load_judge_config
from presentation_dependence.qa.reader import load_reader_config
from presentation_dependence.reproduction.appendix import load_appendix
from presentation_dependence.reproduction.populations import load_population
from presentation_dependence.reproduction.tasks import load_task
from presentation_dependence.studies.plan import load_plan
from presentation_dependence.studies.recipe import load_search
from presentation_dependence.training.config import load_training_config, training_config_from_raw
from presentation_dependence.training.fit_probe import load_ladder
from presentation_dependence.training.judge_config import (
    judge_training_config_from_raw,
    load_judge_training_config,
)
from presentation_dependence.training.judge_splits import load_splits_spec
from presentation_dependence.training.reward_config import (
    load_reward_model_config,
    reward_model_config_from_raw,
)

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "configs").rglob("*.yaml"))

# (path prefix under configs/, loader); the first that matches a file is its family.
FAMILIES: list[tuple[str, Callable[[Path], Any]]] = [
    ("experiments/", lambda p: load_experiment_config(p, environ={})),
    ("judge/train/splits.yaml", load_splits_spec),
    ("judge/train/reward-", load_reward_model_config),
    ("judge/train/", load_judge_training_config),
    ("judge/", load_judge_config),
    ("study/content-study.yaml", load_plan),
    ("study/content-study-rest.yaml", load_plan),
    ("study/judge-study.yaml", load_plan),
    ("study/judge-train.yaml", load_plan),
    ("study/students.yaml", load_plan),
    ("study/recipe-search-plan.yaml", load_plan),
    ("study/recipe-search.yaml", load_search),
    ("study/zero-shot-oc-sft.yaml", load_plan),
    ("study/zero-shot-oc-sft-gold.yaml", load_plan),
    ("self-distill/", load_training_config),
    ("study/", load_training_config),
    ("reader/", lambda p: load_reader_config(str(p))),
    ("probes/", load_ladder),
    ("reproduction/appendix.yaml", load_appendix),
    ("reproduction/populations/", lambda p: load_population(p, ROOT)),
    ("reproduction/tasks/", lambda p: load_task(p, ROOT)),
]
# Families whose resolved config is frozen into run folders and read back: it must round-trip.
ROUND_TRIP = {
    "experiments/": config_from_raw,
    "judge/": judge_from_raw,
    "judge/train/": judge_training_config_from_raw,
    "judge/train/reward-": reward_model_config_from_raw,
    "self-distill/": training_config_from_raw,
}


def _family(path: Path) -> str:
    rel = path.relative_to(ROOT / "configs").as_posix()
    for prefix, _ in FAMILIES:
        if rel.startswith(prefix):
            return prefix
    raise AssertionError(f"configs/{rel} belongs to no config family: add its loader to FAMILIES")


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_config_loads_with_its_familys_loader(path: Path, monkeypatch) -> None:
    for name in [n for n in os.environ if n.startswith("PRESDEP_") and "__" in n]:
        monkeypatch.delenv(name)  # the tracked values, not this shell's overrides
    family = _family(path)
    loaded = dict(FAMILIES)[family](path)
    assert loaded
    if family in ROUND_TRIP:
        again = ROUND_TRIP[family](loaded.to_plain(), path.stem)
        assert again.to_plain() == loaded.to_plain()


def test_every_family_has_a_config() -> None:
    assert {_family(p) for p in CONFIGS} == {prefix for prefix, _ in FAMILIES}
