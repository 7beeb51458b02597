"""Training configs: the four committed variants load; variant/shape mismatches are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from presentation_dependence.errors import ConfigError
from presentation_dependence.training.config import (
    VARIANTS,
    load_training_config,
    training_config_from_raw,
)

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "self-distill"
STEMS = {
    "single-order": "single_order",
    "order-averaged": "order_averaged",
    "perm-aug": "perm_aug",
    "oc-sft": "oc_sft",
    "debias-first": "debias_first",
}


@pytest.mark.parametrize("stem", sorted(STEMS))
def test_committed_configs_load(stem):
    cfg = load_training_config(CONFIGS / f"{stem}.yaml")
    assert cfg.id == stem and cfg.variant == STEMS[stem]
    assert cfg.resolved_output_dir == Path(f"runs/self-distill/{stem}")
    assert cfg.student["reranker_class"] == "GradeReranker"
    assert cfg.student["adapter_path"] is None
    assert cfg.silver.num_orders == 10 and cfg.splits.test and cfg.splits.heldout


def test_the_four_configs_share_silver_student_and_optimisation():
    cfgs = [load_training_config(CONFIGS / f"{s}.yaml") for s in sorted(STEMS)]
    for c in cfgs[1:]:
        assert c.silver == cfgs[0].silver
        assert c.student == cfgs[0].student
        assert c.train == cfgs[0].train and c.lora == cfgs[0].lora


def test_every_variant_is_documented():
    assert set(VARIANTS) == set(STEMS.values())


def test_overrides_and_unknown_keys():
    cfg = load_training_config(CONFIGS / "oc-sft.yaml", ["lambda_=0.5", "train.max_steps=3"])
    assert cfg.lambda_ == 0.5 and cfg.train.max_steps == 3
    with pytest.raises(ConfigError, match="lambda_"):
        load_training_config(CONFIGS / "oc-sft.yaml", ["lamda_=0.5"])
    with pytest.raises(ConfigError, match=r"unknown config key 'train\.lr'"):
        load_training_config(CONFIGS / "oc-sft.yaml", ["train.lr=0.1"])


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ({"variant": "oc_sft", "views": 2, "lambda_": 0.0}, "lambda_ must be > 0"),
        ({"variant": "oc_sft", "views": 1, "lambda_": 1.0}, "views must be >= 2"),
        ({"variant": "perm_aug", "views": 2, "lambda_": 1.0}, "lambda_ must be 0"),
        ({"variant": "single_order", "teacher_orders": 3}, "teacher_orders must be 1"),
        ({"variant": "order_averaged", "teacher_orders": 1}, "teacher_orders must be >= 2"),
        ({"variant": "single_order", "views": 2}, "views must be 1"),
        ({"variant": "order_averaged", "teacher_orders": 11}, "silver.num_orders"),
        (
            {"variant": "single_order", "student": {"reranker_class": "IdentityReranker"}},
            "GradeReranker",
        ),
        (
            {
                "variant": "single_order",
                "student": {"reranker_class": "GradeReranker", "adapter_path": "x"},
            },
            "adapter_path",
        ),
        (
            {"variant": "single_order", "silver": {"teacher": {"reranker_class": "Nope"}}},
            "silver.teacher",
        ),
        (
            {"variant": "oc_sft", "views": 2, "lambda_": 1.0, "selection": {"lambdas": [0.0]}},
            "λ > 0",
        ),
    ],
)
def test_mismatches_are_refused(raw, needle):
    with pytest.raises(ConfigError, match=needle):
        training_config_from_raw(raw, "x")


def test_yaml_round_trip(tmp_path):
    cfg = load_training_config(CONFIGS / "perm-aug.yaml")
    path = tmp_path / "perm-aug.yaml"
    path.write_text(cfg.to_yaml(), encoding="utf-8")
    assert load_training_config(path) == cfg


def test_unknown_loader_in_a_split_is_refused_at_load_with_its_line():
    override = "splits.heldout=[{dataloader_class: BeirLodaer, path: x}]"
    with pytest.raises(ConfigError) as e:
        load_training_config(CONFIGS / "oc-sft.yaml", [override])
    msg = str(e.value)
    assert "unknown dataloader_class 'BeirLodaer'" in msg
    assert "Did you mean 'BeirLoader'" in msg and "oc-sft.yaml" in msg
