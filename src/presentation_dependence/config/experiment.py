"""Experiment configs: one flat YAML per experiment, ``configs/experiments/<ID>.yaml``.

Precedence: the tracked YAML < environment (``PRESDEP__BLOCK__KEY=value``) < the command line
(``--override block.key=value``). Values of overrides are parsed as YAML. The resolved config is
frozen into the run folder as ``resolved_config.yaml``.

Adding a block (``robustness``, ``training``, ...) is a local change: write its dataclass in its
own module and add one field to :class:`ExperimentConfig`.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from presentation_dependence.config.build import build_dataclass, to_plain
from presentation_dependence.config.data_config import DataConfig
from presentation_dependence.config.eval_config import EvalConfig
from presentation_dependence.errors import ConfigError, RegistryError
from presentation_dependence.qa.config import QAConfig
from presentation_dependence.rerankers import RERANKERS, RerankerOptions
from presentation_dependence.robustness.config import RobustnessConfig

__all__ = [
    "ENV_PREFIX",
    "ExperimentConfig",
    "RerankerConfig",
    "apply_overrides",
    "env_overrides",
    "load_experiment_config",
]

ENV_PREFIX = "PRESDEP__"


@dataclass(frozen=True)
class RerankerConfig:
    """The ``reranker`` block: ``reranker_class`` plus that class's own options (flat)."""

    reranker_class: str = "IdentityReranker"
    options: RerankerOptions = field(default_factory=RerankerOptions)

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> RerankerConfig:
        if not isinstance(raw, Mapping):
            raise ConfigError(f"reranker: expected a mapping, got {raw!r}")
        raw = dict(raw)
        name = raw.pop("reranker_class", "IdentityReranker")
        rcls = RERANKERS.get(str(name))
        return cls(str(name), build_dataclass(rcls.config_cls, raw, "reranker"))

    def to_plain(self) -> dict[str, Any]:
        return {"reranker_class": self.reranker_class, **to_plain(self.options)}


@dataclass(frozen=True)
class ExperimentConfig:
    """A whole experiment. The ID is the config file's stem and the run folder's key."""

    id: str = field(metadata={"help": "The config file's stem (set automatically; may be omitted)"})
    description: str = field(default="", metadata={"help": "One line shown by 'presdep configs'"})
    seed: int = field(
        default=0, metadata={"help": "Master seed; every random draw derives from it"}
    )
    output_root: str = field(
        default="runs", metadata={"help": "Run folders go to <output_root>/<id>/<timestamp>/"}
    )
    plugins: list[str] = field(
        default_factory=list,
        metadata={
            "help": "Python modules imported before the reranker is built (custom rerankers)"
        },
    )
    reranker: RerankerConfig = field(default_factory=RerankerConfig)
    data: DataConfig = field(default_factory=DataConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    robustness: RobustnessConfig = field(default_factory=RobustnessConfig)
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


def _parse_assignment(text: str, source: str) -> tuple[list[str], Any]:
    if "=" not in text:
        raise ConfigError(f"{source}: {text!r} is not KEY=VALUE (for example data.top_k=20)")
    key, _, value = text.partition("=")
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise ConfigError(f"{source}: bad key {key!r} in {text!r}")
    try:
        parsed = yaml.safe_load(value) if value.strip() else ""
    except yaml.YAMLError as e:
        raise ConfigError(f"{source}: value of {key!r} is not valid YAML: {e}") from None
    return key.split("."), parsed


def apply_overrides(raw: dict[str, Any], assignments: Sequence[str], source: str) -> dict[str, Any]:
    """Return a copy of ``raw`` with dotted ``key=value`` assignments applied."""
    out: dict[str, Any] = _deep_copy(raw)
    for text in assignments:
        path, value = _parse_assignment(text, source)
        node = out
        for part in path[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"{source}: {'.'.join(path)}: {part!r} is not a block")
            node = child
        node[path[-1]] = value
    return out


def env_overrides(environ: Mapping[str, str] | None = None) -> list[str]:
    """``PRESDEP__DATA__TOP_K=20`` -> ``["data.top_k=20"]`` (keys lower-cased), sorted by key."""
    env = os.environ if environ is None else environ
    out = []
    for name in sorted(env):
        if name.startswith(ENV_PREFIX) and len(name) > len(ENV_PREFIX):
            key = ".".join(p.lower() for p in name[len(ENV_PREFIX) :].split("__"))
            out.append(f"{key}={env[name]}")
    return out


def _deep_copy(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: _deep_copy(v) for k, v in d.items()}
    if isinstance(d, list):
        return [_deep_copy(v) for v in d]
    return d


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
    return ExperimentConfig(**{**cfg.__dict__, "reranker": reranker})


def load_experiment_config(
    path: str | Path,
    overrides: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
) -> ExperimentConfig:
    """Load ``path`` (safe YAML), apply environment then CLI overrides, validate strictly."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(
            f"config file not found: {path} (list the configs with 'presdep configs')"
        )
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{path}: the top level must be a mapping of blocks, got {type(raw).__name__}"
        )
    raw = apply_overrides(raw, env_overrides(environ), "environment")
    raw = apply_overrides(raw, overrides, "--override")
    try:
        return config_from_raw(raw, path.stem)
    except (ConfigError, RegistryError) as e:
        raise ConfigError(f"{path}: {e}") from None


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
