"""Fixtures of the training tests: tiny-model reranker blocks and a small silver file."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
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
# LoRA on every linear layer of the tiny model (attention and MLP): the runs that must learn.
ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


OFFSETS = {"q1": -0.01, "q2": 0.0, "q3": 0.01}


def fake_run(
    folder: Path,
    ndcg: float,
    tau: float,
    spread: float,
    *,
    offsets: Mapping[str, float] = OFFSETS,
    tied: float = 0.0,
    tokens: float | None = None,
    presentations: int = 10,
) -> None:
    """A finished scorer run folder (metrics.json, psi/psi_metrics.json) with known figures:
    query q has nDCG@10 ``ndcg + d_q`` in the given order, ``ndcg − 0.05 + d_q`` over the
    shuffles, τ-PSI ``tau + d_q``, top-k Jaccard ``1 − tau − d_q``, score spread ``spread``
    and tied share ``tied`` (d_q = ``offsets[q]``); the summary holds the means given (the
    offsets should average 0) with CI mean ± 0.1; ``tokens``: prompt tokens per presentation."""
    (folder / "psi").mkdir(parents=True)
    metrics = {
        "num_queries": len(offsets),
        "mean": {"ndcg@10": ndcg},
        "per_query": {q: {"ndcg@10": ndcg + d} for q, d in offsets.items()},
    }
    (folder / "metrics.json").write_text(json.dumps(metrics))
    per_query = {
        q: {
            "ndcg_mean": ndcg - 0.05 + d,
            "tau_psi": tau + d,
            "jaccard_topk": 1 - tau - d,
            "score_spread": spread,
            "tied_share": tied,
        }
        for q, d in offsets.items()
    }
    summary = {
        m: {"mean": v, "ci_low": v - 0.1, "ci_high": v + 0.1, "n": len(offsets)}
        for m, v in (
            ("ndcg_mean", ndcg - 0.05),
            ("tau_psi", tau),
            ("jaccard_topk", 1 - tau),
            ("delta_ndcg", 0.2),
            ("changed_topk", 0.5),
            ("score_spread", spread),
            ("tied_share", tied),
        )
    }
    cost: dict[str, Any] = {"same_order": {"forward_passes_per_query": 2.0}}
    if tokens is not None:
        cost["random_shuffle"] = {"prompt_tokens_per_query": presentations * tokens}
    shuffled = {"num_presentations": presentations, "summary": summary, "per_query": per_query}
    psi = {
        "variants": {
            "random_shuffle": shuffled,
            "same_order": {"summary": {"tau_psi": {"mean": 0.0}}},
        },
        "cost": cost,
    }
    (folder / "psi" / "psi_metrics.json").write_text(json.dumps(psi))


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
