"""Judge task configs: one flat YAML per task at ``configs/judge/<ID>.yaml``, validated strictly.

Blocks: ``data`` (:class:`~presentation_dependence.judge.items.loaders.ResponseDataConfig`), ``judge``
(``judge_class`` + that judge's options, like the experiment configs' ``reranker`` block),
``placement``, ``noise``, ``gate``, and for ``task: rank`` the ``ranking`` and ``reranker``
blocks. The environment (``PRESDEP_JUDGE__BLOCK__KEY=value``) then ``--override block.key=value``
(values parsed as YAML) apply on top (:mod:`presentation_dependence.config.loader`). Unknown keys
are errors with a did-you-mean.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from presentation_dependence.config.loader import load_config
from presentation_dependence.errors import ConfigError, shown
from presentation_dependence.fields import build_dataclass, opt, to_plain
from presentation_dependence.judge.gate import GateConfig
from presentation_dependence.judge.items.loaders import ResponseDataConfig
from presentation_dependence.judge.judges.base import JUDGES, JudgeOptions
from presentation_dependence.judge.placement import PLACEMENT_MODES
from presentation_dependence.judge.scoring.settings import ScoringSettings
from presentation_dependence.rerankers import RerankerConfig

__all__ = [
    "JudgeBlock",
    "JudgeTaskConfig",
    "NoiseConfig",
    "PlacementConfig",
    "RankingConfig",
    "load_judge_config",
]


@dataclass(frozen=True)
class PlacementConfig:
    mode: str = opt("cyclic", "seeded | cyclic | full")
    seed: int | None = opt(None, "null = the task's seed")

    def __post_init__(self) -> None:
        if self.mode not in PLACEMENT_MODES:
            raise ConfigError(f"placement.mode must be one of {PLACEMENT_MODES}, got {self.mode!r}")


@dataclass(frozen=True)
class NoiseConfig:
    repeats: int = opt(2, "runs per condition")
    batch_sizes: list[int] = field(default_factory=lambda: [1, 4], metadata={"help": "conditions"})
    one_at_a_time: bool = opt(False, "add a one-at-a-time condition")


@dataclass(frozen=True)
class RankingConfig:
    num_presentations: int = opt(4, "M seeded shuffles per item")
    ndcg_k: int = opt(1, "nDCG cutoff")

    def __post_init__(self) -> None:
        if self.num_presentations < 2:
            raise ConfigError("ranking.num_presentations must be >= 2 (tau-PSI needs two)")


@dataclass(frozen=True)
class JudgeBlock:
    judge_class: str = "transformers"
    options: JudgeOptions = field(default_factory=JudgeOptions)

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> JudgeBlock:
        if not isinstance(raw, Mapping):
            raise ConfigError(f"judge: expected a mapping, got {shown(raw)}")
        raw = dict(raw)
        name = raw.pop("judge_class", "transformers")
        name = name if isinstance(name, str) else shown(name)  # unknown: named, bounded
        jcls = JUDGES.get(name, key="judge.judge_class")
        return cls(name, build_dataclass(jcls.config_cls, raw, "judge"))

    def to_plain(self) -> dict[str, Any]:
        return {"judge_class": self.judge_class, **to_plain(self.options)}


@dataclass(frozen=True)
class JudgeTaskConfig:
    id: str
    description: str = ""
    task: Literal["judge", "rank"] = "judge"
    seed: int = 0
    output_root: str = "runs/judge"
    bootstrap_resamples: int = 2000
    confidence: float = 0.95
    data: ResponseDataConfig = field(default_factory=ResponseDataConfig)
    judge: JudgeBlock = field(default_factory=JudgeBlock)
    placement: PlacementConfig = field(default_factory=PlacementConfig)
    noise: NoiseConfig = field(default_factory=NoiseConfig)
    gate: GateConfig = field(default_factory=GateConfig)
    ranking: RankingConfig = field(default_factory=RankingConfig)
    reranker: RerankerConfig = field(default_factory=RerankerConfig)

    @property
    def placement_seed(self) -> int:
        return self.seed if self.placement.seed is None else self.placement.seed

    @property
    def scoring(self) -> ScoringSettings:
        """What the score stage takes from this config: seed, resamples, confidence."""
        return ScoringSettings(self.seed, self.bootstrap_resamples, self.confidence)

    def to_plain(self) -> dict[str, Any]:
        d = to_plain(self)
        d["judge"] = self.judge.to_plain()
        d["reranker"] = self.reranker.to_plain()
        return d

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_plain(), sort_keys=False, allow_unicode=True)


_DEFAULT_RERANKER = {"reranker_class": "GradeReranker", "chunk_size": 4}


def config_from_raw(raw: Mapping[str, Any], config_id: str) -> JudgeTaskConfig:
    raw = dict(raw)
    raw.setdefault("id", config_id)
    judge = JudgeBlock.from_raw(raw.pop("judge", {}) or {})
    reranker = RerankerConfig.from_raw(raw.pop("reranker", None) or dict(_DEFAULT_RERANKER))
    cfg = build_dataclass(JudgeTaskConfig, raw)  # checks task: judge or rank
    return JudgeTaskConfig(**{**cfg.__dict__, "judge": judge, "reranker": reranker})


def load_judge_config(path: str | Path, overrides: Sequence[str] = ()) -> JudgeTaskConfig:
    """Load ``path`` (safe YAML), apply environment then ``--override`` assignments, validate."""
    return load_config(path, config_from_raw, family="judge", overrides=overrides)
