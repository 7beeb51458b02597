"""Reward-model configs: the order-free reference arm of issue 37 (``configs/judge/train/``).

A reward model scores each response alone, so its verdict cannot depend on where a response
was shown: the reference the placement-trained readout judges are compared with. It is the
embedded base with a scalar head (``AutoModelForSequenceClassification``, ``num_labels=1``) and
a LoRA adapter, trained with trl's ``RewardTrainer`` (Bradley-Terry: −log σ(r_chosen −
r_rejected)) on the same ``train`` split as the readout arms (:mod:`.judge_splits`): a pair
item is one (chosen, rejected) pair, an N-way item with one correct response gives N − 1 pairs.
Loaded by the one config loader (family ``reward-model``: unknown keys are errors; environment
``PRESDEP_REWARD_MODEL__BLOCK__KEY``, then ``--override``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import opt, opt_factory
from presentation_dependence.readout.options import check_dtype
from presentation_dependence.training.config import LoraOptions, OptimOptions
from presentation_dependence.training.run_config import (
    RunFolderConfig,
    build_run_config,
    load_run_config,
)

__all__ = ["RewardModelConfig", "load_reward_model_config", "reward_model_config_from_raw"]


@dataclass(frozen=True)
class RewardModelConfig(RunFolderConfig):
    """One reward model: the base, the splits, the response cut, optimisation, LoRA."""

    runs_dir = "runs/judge-train"
    default_id = "reward-model"

    id: str = opt("", "the config file's stem (set automatically)")
    description: str = opt("", "one line")
    seed: int = opt(0, "seed of the head's and LoRA's init and of the data order")
    output_dir: str = opt("", "run folder; empty = runs/judge-train/<id>")
    model_name: str = opt("embedded:smollm2-135m-instruct", "the base model (as the judges')")
    revision: str | None = opt(None, "hub revision of model_name (pinned)")
    dtype: str = opt(
        "float32", "training and serving dtype (stage 1 trains every judge arm in bfloat16)"
    )
    trust_remote_code: bool = opt(False, "allow the model's own code (off unless asked)")
    splits: str = opt("configs/judge/train/splits.json", "the splits file (presdep judge-splits)")
    sets: list[str] = opt_factory(list, "the splits' sets to train on; [] = every trained set")
    max_items: int | None = opt(None, "first N training items of each set (smoke runs)")
    max_response_chars: int | None = opt(2000, "cut each response (as the judges do)")
    max_length: int = opt(1024, "tokens of prompt + response kept (the end is cut)")
    train: OptimOptions = opt_factory(OptimOptions, "optimisation")
    lora: LoraOptions = opt_factory(LoraOptions, "LoRA (the scalar head is trained in full)")

    def __post_init__(self) -> None:
        if self.seed < 0:
            raise ConfigError(f"seed must be >= 0, got {self.seed}")
        if self.max_items is not None and self.max_items < 1:
            raise ConfigError(f"max_items must be >= 1 or null, got {self.max_items}")
        if self.max_length < 16:
            raise ConfigError(f"max_length must be >= 16 tokens, got {self.max_length}")
        unused = [k for k in ("gradient_checkpointing", "keep_snapshots") if getattr(self.train, k)]
        if unused:
            raise ConfigError(
                f"train.{unused[0]}: the reward model does not use it; leave it unset"
            )
        check_dtype(self.dtype)
        if self.dtype == "auto":
            raise ConfigError("dtype: name one (float32, bfloat16, float16)", key="dtype")

    def serving_block(self, adapter: Path) -> dict[str, Any]:
        """The judge block that serves the trained reward model (``judge_class: reward_model``)."""
        return {
            "judge_class": "reward_model",
            "model_name": self.model_name,
            "revision": self.revision,
            "dtype": self.dtype,
            "max_response_chars": self.max_response_chars,
            "max_length": self.max_length,
            "adapter_path": str(adapter),
        }


def reward_model_config_from_raw(raw: Mapping[str, Any], config_id: str) -> RewardModelConfig:
    return build_run_config(RewardModelConfig, raw, config_id)


def load_reward_model_config(path: str | Path, overrides: Sequence[str] = ()) -> RewardModelConfig:
    """Load ``path``, apply environment then ``--override`` assignments, validate."""
    return load_run_config(
        path,
        reward_model_config_from_raw,
        family="reward-model",
        overrides=overrides,
        hint=" (configs/judge/train/)",
    )
