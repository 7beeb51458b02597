"""Judge training configs: one YAML per trained verdict readout judge (``configs/judge/train/``).

A trained judge is the verdict readout judge (``judge_class: readout``,
``judge/judges/readout.py``) with a LoRA adapter, trained on the ``train`` split of a splits file
(:mod:`.judge_splits`) by the student trainer (:mod:`.judge_trainer`). Loaded by the one config
loader (family ``judge-training``: unknown keys are errors; environment
``PRESDEP_JUDGE_TRAINING__BLOCK__KEY``, then ``--override``).

=================  =======  ==============================================================
variant            views    loss
=================  =======  ==============================================================
placement_aug      >= 1     cross-entropy of P(verdict) on the correct response, every view
                            a fresh seeded placement (λ = 0)
oc_sft             >= 2     the same + λ · consistency between the views' verdict
                            distributions aligned by response (``squared``, ``sym_kl`` or
                            ``disagreement``)
=================  =======  ==============================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import build_dataclass, opt, opt_factory
from presentation_dependence.judge.judges.readout import ReadoutJudgeOptions
from presentation_dependence.judge.placement import PlacementMode
from presentation_dependence.training.config import LoraOptions, OptimOptions
from presentation_dependence.training.config_blocks import StoppingRule
from presentation_dependence.training.loss import CONSISTENCY_KINDS
from presentation_dependence.training.run_config import (
    RunFolderConfig,
    build_run_config,
    load_run_config,
)

__all__ = [
    "JUDGE_VARIANTS",
    "JudgeEarlyStoppingOptions",
    "JudgeTrainingConfig",
    "judge_training_config_from_raw",
    "load_judge_training_config",
]

JUDGE_VARIANTS: dict[str, str] = {
    "placement_aug": "cross-entropy on the correct response under fresh seeded placements, λ = 0",
    "oc_sft": "the same + λ · consistency of the verdict distributions realigned by response",
}


def _default_judge() -> dict[str, Any]:
    return {
        "judge_class": "readout",
        "model_name": "embedded:smollm2-135m-instruct",
        "template": "judge_nway_verdict_v1",
        "skeleton": "Verdict: [[",
        "dtype": "float32",
    }


@dataclass(frozen=True)
class JudgeEarlyStoppingOptions(StoppingRule):
    """A trained judge's ``early_stopping`` block: every checkpoint judges the held-out items
    (``training/judge_heldout.py``); training stops when the criterion stops improving and the
    best checkpoint's adapter is kept."""

    criterion: Literal["accuracy", "flip_share", "consistent_accuracy"] = opt(
        "accuracy",
        "accuracy: accuracy over the placements (higher is better); flip_share: the share of "
        "items whose verdict changes with the placement (lower); consistent_accuracy: the share "
        "judged correctly in every placement (higher: right and not flipping)",
    )
    max_items: int | None = opt(40, "held-out items of each trained set (the first ones)")
    placements: PlacementMode = opt(
        "full", "the placements each held-out item is judged in (full: every order)"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_items is not None and self.max_items < 1:
            raise ConfigError(f"early_stopping.max_items must be >= 1, got {self.max_items}")


@dataclass(frozen=True)
class JudgeTrainingConfig(RunFolderConfig):
    """One trained judge: variant, the judge block, the splits, views, λ, optimisation, LoRA."""

    runs_dir = "runs/judge-train"
    default_id = "judge"

    id: str = opt("", "the config file's stem (set automatically)")
    description: str = opt("", "one line")
    variant: Literal["placement_aug", "oc_sft"] = opt("oc_sft", "placement_aug | oc_sft")
    seed: int = opt(0, "seed of the placements (views), the LoRA init and the data order")
    output_dir: str = opt("", "checkpoint folder; empty = runs/judge-train/<id>")
    judge: dict[str, Any] = opt_factory(
        _default_judge,
        "the readout judge block the judge is trained as and served as (judge_class: readout, "
        "without adapter_path); its dtype is the training dtype",
    )
    splits: str = opt("configs/judge/train/splits.json", "the splits file (presdep judge-splits)")
    sets: list[str] = opt_factory(list, "the splits' sets to train on; [] = every trained set")
    max_items: int | None = opt(None, "first N training items of each set (smoke runs)")
    views: int = opt(2, "placements of each item per step (fresh seeded draws every epoch)")
    lambda_: float = opt(0.0, "λ: weight of the consistency term (oc_sft only, > 0)")
    consistency: Literal["squared", "sym_kl", "disagreement"] = opt(
        "squared",
        "squared: mean_d (P_A(d) − P_B(d))² (as OC-SFT); sym_kl: KL(P_A‖P_B) + KL(P_B‖P_A); "
        "disagreement: 1 − Σ_d P_A(d) P_B(d) (not 0 at the uniform distribution)",
    )
    train: OptimOptions = opt_factory(OptimOptions, "optimisation")
    lora: LoraOptions = opt_factory(LoraOptions, "LoRA")
    early_stopping: JudgeEarlyStoppingOptions = opt_factory(
        JudgeEarlyStoppingOptions, "stop on the held-out items (off unless patience is set)"
    )

    def __post_init__(self) -> None:
        if self.seed < 0:
            raise ConfigError(f"seed must be >= 0, got {self.seed}")
        if self.views < 1:
            raise ConfigError(f"views must be >= 1, got {self.views}")
        if self.max_items is not None and self.max_items < 1:
            raise ConfigError(f"max_items must be >= 1 or null, got {self.max_items}")
        if self.consistency not in CONSISTENCY_KINDS:
            raise ConfigError(f"consistency must be one of {CONSISTENCY_KINDS}")
        opts = self.judge_options  # validates the block
        if opts.adapter_path is not None:
            raise ConfigError("judge: the trained judge's block has no adapter_path", key="judge")
        problems = []
        if self.variant == "oc_sft" and (self.views < 2 or self.lambda_ <= 0):
            problems.append(f"views >= 2 and lambda_ > 0 (got {self.views}, {self.lambda_})")
        if self.variant == "placement_aug" and self.lambda_ != 0:
            problems.append(f"lambda_ 0 (got {self.lambda_})")
        if problems:
            raise ConfigError(
                f"variant {self.variant!r} ({JUDGE_VARIANTS[self.variant]}) needs "
                + "; ".join(problems)
            )
        if self.early_stopping.enabled and not self.train.keep_snapshots:
            raise ConfigError(
                "early_stopping.patience is set, but train.keep_snapshots is false, and each "
                "checkpoint's adapter is judged and the best one kept. Fix: set "
                "train.keep_snapshots: true",
                key="early_stopping",
            )

    @property
    def judge_options(self) -> ReadoutJudgeOptions:
        raw = dict(self.judge)
        if raw.pop("judge_class", "readout") != "readout":
            raise ConfigError("judge.judge_class must be readout (the verdict readout judge)")
        return build_dataclass(ReadoutJudgeOptions, raw, "judge")

    @property
    def finetune(self) -> str:
        return "lora"

    def judge_options_with(self, **fields: Any) -> ReadoutJudgeOptions:
        """The judge block's options with ``fields`` replaced (e.g. a snapshot's adapter)."""
        raw = {k: v for k, v in self.judge.items() if k != "judge_class"}
        return build_dataclass(ReadoutJudgeOptions, {**raw, **fields}, "judge")

    def serving_block(self, adapter: Path) -> dict[str, Any]:
        """The judge block that serves the trained judge."""
        return {"judge_class": "readout", **self.judge, "adapter_path": str(adapter)}


def judge_training_config_from_raw(raw: Mapping[str, Any], config_id: str) -> JudgeTrainingConfig:
    return build_run_config(JudgeTrainingConfig, raw, config_id)


def load_judge_training_config(
    path: str | Path, overrides: Sequence[str] = ()
) -> JudgeTrainingConfig:
    """Load ``path``, apply environment then ``--override`` assignments, validate."""
    return load_run_config(
        path,
        judge_training_config_from_raw,
        family="judge-training",
        overrides=overrides,
        hint=" (configs/judge/train/)",
    )
