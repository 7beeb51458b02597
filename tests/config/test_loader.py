"""The one config loader: file + line errors, did-you-mean, registry names at load, precedence."""

from __future__ import annotations

from pathlib import Path

import pytest

from presentation_dependence.config import load_experiment_config
from presentation_dependence.config.loader import (
    env_prefix,
    key_line,
    list_named,
    load_config,
    named_config_path,
)
from presentation_dependence.errors import ConfigError
from presentation_dependence.judge.config import load_judge_config
from presentation_dependence.studies.plan import load_plan
from presentation_dependence.training.config import load_training_config

ROOT = Path(__file__).resolve().parents[2]

EXPERIMENT = """\
description: demo
reranker:
  reranker_class: GradeReranker
  chunk_size: 4
data:
  path: x.jsonl
  top_k: 50
robustness:
  perturbations: [random_shuffle, reverse]
eval:
  measures: [ndcg@10, map]
"""


def _write(tmp_path: Path, text: str, name: str = "exp-a") -> Path:
    p = tmp_path / f"{name}.yaml"
    p.write_text(text, encoding="utf-8")
    return p


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize(
    ("old", "new", "line_needle", "suggestion"),
    [
        ("  top_k: 50", "  top_kk: 50", "top_kk", "Did you mean 'top_k'"),
        ("  chunk_size: 4", "  chunk_sise: 4", "chunk_sise", "Did you mean 'chunk_size'"),
        ("  top_k: 50", "  top_k: fifty", "top_k", "expected an integer"),
        ("GradeReranker", "GradeRerankr", "reranker_class", "Did you mean 'GradeReranker'"),
        ("random_shuffle, reverse", "random_shuffle, revers", "perturbations", "'reverse'"),
        ("[ndcg@10, map]", "[ndcg@10, mapp]", "measures", "Did you mean"),
    ],
)
def test_errors_name_the_file_line_and_fix(
    tmp_path: Path, old: str, new: str, line_needle: str, suggestion: str
) -> None:
    text = EXPERIMENT.replace(old, new)
    p = _write(tmp_path, text)
    with pytest.raises(ConfigError) as e:
        load_experiment_config(p, environ={})
    assert str(e.value).startswith(f"{p}:{_line_of(text, line_needle)}: ")
    assert suggestion in str(e.value)


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    p = _write(tmp_path, "description: demo\ndata:\n  top_k: [1, 2\n")
    with pytest.raises(ConfigError, match=rf"^{p}:\d+: not valid YAML"):
        load_experiment_config(p, environ={})


def test_override_errors_name_no_line(tmp_path: Path) -> None:
    """A key that only an override sets has no line in the file: the file alone is named."""
    p = _write(tmp_path, EXPERIMENT)
    with pytest.raises(ConfigError, match=rf"^{p}: unknown config key 'data.topk'"):
        load_experiment_config(p, ["data.topk=3"], environ={})


def test_key_line_walks_blocks_and_lists() -> None:
    text = "a:\n  b: 1\nsteps:\n- name: x\n- name: y\n  argv: []\n"
    assert key_line(text, "a.b") == 2
    assert key_line(text, "steps[1].argv") == 6
    assert key_line(text, "a.c") is None
    assert key_line(text, None) is None


def test_every_family_reads_its_own_environment(tmp_path: Path, monkeypatch) -> None:
    """YAML < environment < --override for the training and judge families too, and one
    family's variables never reach another's configs."""
    assert env_prefix("experiment") == "PRESDEP__"
    assert env_prefix("training") == "PRESDEP_TRAINING__"
    train = ROOT / "configs" / "self-distill" / "oc-sft.yaml"
    judge = ROOT / "configs" / "judge" / "_scripted-gate.yaml"
    base_t, base_j = load_training_config(train), load_judge_config(judge)
    monkeypatch.setenv("PRESDEP_TRAINING__SEED", str(base_t.seed + 5))
    monkeypatch.setenv("PRESDEP_JUDGE__SEED", str(base_j.seed + 6))
    monkeypatch.setenv("PRESDEP__SEED", "999")  # the experiments' prefix: read by neither
    assert load_training_config(train).seed == base_t.seed + 5
    assert load_judge_config(judge).seed == base_j.seed + 6
    assert load_training_config(train, [f"seed={base_t.seed + 9}"]).seed == base_t.seed + 9
    assert load_judge_config(judge, [f"seed={base_j.seed + 9}"]).seed == base_j.seed + 9


def test_family_errors_carry_the_family(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="training config not found"):
        load_training_config(tmp_path / "nope.yaml")
    p = _write(tmp_path, "# a plan\nsteps: 3\n", "plan")
    with pytest.raises(ConfigError, match=rf"^{p}:2: steps: expected a list"):
        load_plan(p)
    with pytest.raises(ConfigError, match="x config not found"):
        load_config(tmp_path / "nope.yaml", lambda raw, stem: raw, family="x")


@pytest.mark.parametrize(
    ("old", "new", "needle", "suggestion"),
    [
        ("dataset: jsonl", "dataset: jsnol", "dataset", "Did you mean 'jsonl'"),
        ("judge_class: scripted", "judge_class: scriptd", "judge_class", "'scripted'"),
    ],
)
def test_judge_registry_names_fail_at_load(
    tmp_path: Path, old: str, new: str, needle: str, suggestion: str
) -> None:
    text = "task: judge\ndata:\n  dataset: jsonl\n  path: items.jsonl\njudge:\n  judge_class: scripted\n"
    text = text.replace(old, new)
    p = _write(tmp_path, text, "judge-a")
    with pytest.raises(ConfigError) as e:
        load_judge_config(p)
    assert str(e.value).startswith(f"{p}:{_line_of(text, needle)}: ")
    assert suggestion in str(e.value)


def test_named_config_path_lists_the_known_names_on_a_typo(tmp_path: Path) -> None:
    folder = tmp_path / "configs" / "tasks"
    folder.mkdir(parents=True)
    for name in ("dl19-psi", "scifact-psi"):
        (folder / f"{name}.yaml").write_text("task: x\n", encoding="utf-8")
    assert list_named("configs/tasks", tmp_path) == ["dl19-psi", "scifact-psi"]
    found = named_config_path("task", "configs/tasks", "dl19-psi", tmp_path)
    assert found == folder / "dl19-psi.yaml"
    given = tmp_path / "other.yaml"
    given.write_text("task: y\n", encoding="utf-8")
    assert named_config_path("task", "configs/tasks", given, tmp_path) == given  # a path as is
    with pytest.raises(ConfigError) as err:
        named_config_path("task", "configs/tasks", "dl91-psi", tmp_path)
    message = str(err.value)
    assert "no task 'dl91-psi'" in message and "Did you mean 'dl19-psi'?" in message
    assert "Known tasks: dl19-psi, scifact-psi" in message
