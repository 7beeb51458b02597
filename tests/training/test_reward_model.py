"""The order-free reference judge of issue 37: a reward model trained with trl's RewardTrainer.

On the tiny random model: an N-way item gives N − 1 (chosen, rejected) pairs; a reward model
trained on a synthetic set whose correct response is always the same content learns it, is
served by the ``reward_model`` judge from its ``judge.yaml``, and gives the same verdict under
every placement; a rerun of a finished folder trains nothing; a run stopped after a checkpoint
resumes from it to the uninterrupted run's adapter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

pytest.importorskip("peft")
pytest.importorskip("trl")

from safetensors.torch import load_file
from transformers import TrainerCallback

from presentation_dependence.errors import ConfigError
from presentation_dependence.judge.judges.base import build_judge
from presentation_dependence.judge.judges.reward import RewardModelOptions
from presentation_dependence.judge.placement import make_requests
from presentation_dependence.training.reward_config import reward_model_config_from_raw
from presentation_dependence.training.reward_trainer import preference_pairs, train_reward_model
from tests.training.test_judge_training import GOOD, synthetic_items


def raw_cfg(tiny: str, out: Path, **train: Any) -> dict[str, Any]:
    return {
        "output_dir": str(out),
        "model_name": tiny,
        "max_length": 64,
        "train": {"learning_rate": 1e-2, "logging_steps": 1, "save_steps": 2, **train},
        "lora": {"r": 4, "alpha": 8},
    }


def served_judge(out: Path) -> Any:
    block = yaml.safe_load((out / "judge.yaml").read_text(encoding="utf-8"))
    assert block.pop("judge_class") == "reward_model"
    return build_judge("reward_model", RewardModelOptions(device="cpu", **block))


def test_pairs_one_per_incorrect_response() -> None:
    items = synthetic_items(2)  # a four-way item, then a pair
    pairs = preference_pairs(items)
    assert [p[0] for p in pairs] == ["syn00#0", "syn00#1", "syn00#2", "syn01#1"]
    assert all(chosen == GOOD and rejected != GOOD for _, _, chosen, rejected in pairs)


@pytest.mark.slow
def test_a_reward_model_learns_content_and_ignores_placement(tiny_model: str, tmp_path: Path):
    items = synthetic_items(8)
    out = tmp_path / "rm"
    cfg = reward_model_config_from_raw(raw_cfg(tiny_model, out, max_steps=30), "rm")
    outcome = train_reward_model(cfg, items=items)
    assert outcome.global_step == 30 and not outcome.skipped and (out / "adapter").is_dir()
    assert not (out / "checkpoints").exists()
    judge = served_judge(out)
    records = judge.judge(make_requests(items, "full", 0))  # every placement of every item
    accuracy = float(np.mean([r.correct for r in records]))
    assert accuracy >= 0.9, accuracy
    by_item: dict[str, set[int]] = {}
    for r in records:  # the verdict, as a response index, is one per item: no placement moves it
        by_item.setdefault(r.item_id, set()).add(r.placement[r.verdict_slot])
    assert all(len(v) == 1 for v in by_item.values())
    assert "+lora:" in judge.identity().model_snapshot

    again = train_reward_model(cfg, items=items)
    assert again.skipped and again.global_step == 30
    other = reward_model_config_from_raw(raw_cfg(tiny_model, out, max_steps=31), "rm")
    with pytest.raises(ConfigError, match="max_steps"):
        train_reward_model(other, items=items)


class StopAt(TrainerCallback):
    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.global_step == self.step:
            raise KeyboardInterrupt  # as a kill would, after the step-2 checkpoint


@pytest.mark.slow
def test_a_stopped_reward_model_resumes_to_the_uninterrupted_adapter(
    tiny_model: str, tmp_path: Path
) -> None:
    items = synthetic_items(3)
    ref = train_reward_model(
        reward_model_config_from_raw(raw_cfg(tiny_model, tmp_path / "ref", max_steps=5), "r"),
        items=items,
    )
    cfg = reward_model_config_from_raw(raw_cfg(tiny_model, tmp_path / "cut", max_steps=5), "r")
    with pytest.raises(KeyboardInterrupt):
        train_reward_model(cfg, items=items, callbacks=[StopAt(3)])
    assert not (tmp_path / "cut" / "adapter").exists()
    resumed = train_reward_model(cfg, items=items)
    assert resumed.resumed_from_step == 2 and resumed.global_step == 5
    a = load_file(str(ref.adapter_dir / "adapter_model.safetensors"))
    b = load_file(str(resumed.adapter_dir / "adapter_model.safetensors"))
    assert a.keys() == b.keys() and any("score" in k for k in a)
    assert all(np.allclose(a[k].numpy(), b[k].numpy(), atol=1e-6) for k in a)
