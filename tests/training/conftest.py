"""Fixtures of the training tests: tiny-model reranker blocks and a small silver file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from presentation_dependence.data.config import DataConfig
from presentation_dependence.training.config import (
    SilverConfig,
    TrainingConfig,
    training_config_from_raw,
)
from presentation_dependence.training.silver import SilverSet, generate_silver, read_silver

NOVELEVAL = "fixtures/noveleval/noveleval.jsonl"
PASSAGE_CHARS = 120


def grade_block(model: str, **extra: Any) -> dict[str, Any]:
    """A GradeReranker block on ``model`` in float32 on CPU, with short passages."""
    return {
        "reranker_class": "GradeReranker",
        "model_name": model,
        "device": "cpu",
        "dtype": "float32",
        "chunk_size": 8,
        "max_passage_chars": PASSAGE_CHARS,
        **extra,
    }


def noveleval_block(max_queries: int = 3, top_k: int = 5) -> DataConfig:
    return DataConfig(path=NOVELEVAL, top_k=top_k, max_queries=max_queries)


@pytest.fixture(scope="package", autouse=True)
def one_torch_thread() -> Iterator[None]:
    """The tiny model's ops are far too small for two threads: on a busy machine OpenMP's
    spinning makes a 450-token forward 50x slower. Restored afterwards."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def silver_file(tiny_model: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3 NovelEval queries with their top 5 candidates, T = 3 orders, the tiny teacher."""
    path = tmp_path_factory.mktemp("silver") / "silver.jsonl"
    cfg = SilverConfig(
        path=str(path),
        teacher=grade_block(tiny_model),
        num_orders=3,
        seed=0,
        data=[noveleval_block(3, 5)],
    )
    return generate_silver(cfg)


@pytest.fixture(scope="session")
def silver(silver_file: Path) -> SilverSet:
    return read_silver(silver_file)


def student_raw(tiny_model: str, silver_file: Path, out: Path, **raw: Any) -> dict[str, Any]:
    """A raw OC-SFT training config on the tiny model and the small silver file; ``raw`` keys
    replace the defaults, dict values are merged into the default block of the same name."""
    base: dict[str, Any] = {
        "variant": "oc_sft",
        "views": 2,
        "lambda_": 1.0,
        "output_dir": str(out),
        "student": grade_block(tiny_model),
        "silver": {"path": str(silver_file), "num_orders": 3, "teacher": grade_block(tiny_model)},
        "train": {"max_steps": 2, "learning_rate": 1e-2},
        "lora": {"r": 4, "alpha": 8},
    }
    for key, value in raw.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            base[key] = {**base[key], **value}
        else:
            base[key] = value
    return base


def student_cfg(tiny_model: str, silver_file: Path, out: Path, **raw: Any) -> TrainingConfig:
    return training_config_from_raw(
        student_raw(tiny_model, silver_file, out, **raw), "test-student"
    )
