"""Experiment configs: one flat YAML per experiment, ``configs/experiments/<ID>.yaml``.

Precedence: the tracked YAML < environment (``PRESDEP__BLOCK__KEY=value``) < the command line
(``--override block.key=value``). Values of overrides are parsed as YAML. The resolved config is
frozen into the run folder as ``resolved_config.yaml``.

Adding a block is a local change: write its dataclass in its own module under ``config/`` and
add one field to :class:`ExperimentConfig`; the schema doc (``config/schema_doc.py``) follows.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from presentation_dependence.config.eval_config import EvalConfig
from presentation_dependence.config.loader import load_config
from presentation_dependence.config.qa_config import QAConfig
from presentation_dependence.config.robustness_config import RobustnessConfig
from presentation_dependence.data import check_loader
from presentation_dependence.data.config import DataConfig
from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import build_dataclass, opt, to_plain
from presentation_dependence.rerankers import RerankerConfig

__all__ = ["ExperimentConfig", "config_from_raw", "load_experiment_config"]


@dataclass(frozen=True)
class ExperimentConfig:
    """A whole experiment. The ID is the config file's stem and the run folder's key."""

    id: str = field(metadata={"help": "The config file's stem (set automatically; may be omitted)"})
    description: str = opt("", "One line shown by 'presdep configs'")
    seed: int = opt(0, "Master seed; every random draw derives from it")
    output_root: str = opt("runs", "Run folders go to <output_root>/<id>/<timestamp>/")
    plugins: list[str] = field(
        default_factory=list,
        metadata={
            "help": "Python modules imported before the reranker is built (custom rerankers)"
        },
    )
    reranker: RerankerConfig = field(
        default_factory=RerankerConfig,
        metadata={"help": "`reranker_class` (a registered reranker) and that reranker's options"},
    )
    data: DataConfig = field(
        default_factory=DataConfig, metadata={"help": "Where the queries and candidates come from"}
    )
    eval: EvalConfig = field(
        default_factory=EvalConfig, metadata={"help": "How runs are evaluated"}
    )
    robustness: RobustnessConfig = field(
        default_factory=RobustnessConfig,
        metadata={"help": "Presentation robustness: M presentations per query ('presdep psi')"},
    )
    qa: QAConfig = field(
        default_factory=QAConfig,
        metadata={"help": "QA with a frozen reader ('presdep qa'; keys in docs/QA.md)"},
    )

    def __post_init__(self) -> None:
        if not self.id or "/" in self.id or self.id.startswith("."):
            raise ConfigError(f"invalid experiment id {self.id!r}: use a plain file-name stem")
        if self.seed < 0:
            raise ConfigError(f"seed must be >= 0, got {self.seed}")

    def to_plain(self) -> dict[str, Any]:
        d = to_plain(self)
        d["reranker"] = self.reranker.to_plain()
        return d

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_plain(), sort_keys=False, allow_unicode=True)


def import_plugins(modules: Sequence[str]) -> None:
    for mod in modules:
        try:
            importlib.import_module(mod)
        except ImportError as e:
            raise ConfigError(f"plugins: cannot import {mod!r}: {e}") from None


def config_from_raw(raw: Mapping[str, Any], config_id: str) -> ExperimentConfig:
    """Validate a raw dict into an :class:`ExperimentConfig`."""
    raw = dict(raw)
    if "id" in raw and raw["id"] != config_id:
        raise ConfigError(
            f"the config's id {raw['id']!r} differs from its file name {config_id!r}; "
            "remove 'id' or rename the file"
        )
    raw["id"] = config_id
    import_plugins(raw.get("plugins") or [])
    reranker = RerankerConfig.from_raw(raw.pop("reranker", {}) or {})
    cfg = build_dataclass(ExperimentConfig, raw)
    check_loader(cfg.data)
    return ExperimentConfig(**{**cfg.__dict__, "reranker": reranker})


def load_experiment_config(
    path: str | Path,
    overrides: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
) -> ExperimentConfig:
    """Load ``path`` (safe YAML), apply environment then CLI overrides, validate strictly."""
    return load_config(
        path,
        config_from_raw,
        family="experiment",
        overrides=overrides,
        environ=environ,
        hint=" (list the configs with 'presdep configs')",
    )


def list_experiment_configs(root: str | Path = "configs/experiments") -> list[tuple[str, str]]:
    """``[(id, description)]`` for every config under ``root`` (files starting with '_' included)."""
    out = []
    for p in sorted(Path(root).glob("*.yaml")):
        try:
            raw = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
            desc = str(raw.get("description", "")) if isinstance(raw, dict) else ""
        except yaml.YAMLError:
            desc = "(invalid YAML)"
        out.append((p.stem, desc))
    return out
