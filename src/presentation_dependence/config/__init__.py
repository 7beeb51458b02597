"""Experiment configuration: every block's dataclass, the one YAML loader, the schema doc."""

from presentation_dependence.config.eval_config import EvalConfig, to_trec_eval_measure
from presentation_dependence.config.experiment import (
    ExperimentConfig,
    list_experiment_configs,
    load_experiment_config,
)
from presentation_dependence.config.loader import apply_overrides, env_overrides, load_config
from presentation_dependence.config.qa_config import QAConfig
from presentation_dependence.config.robustness_config import RobustnessConfig
from presentation_dependence.data.config import DataConfig, resolve_path
from presentation_dependence.rerankers.base import RerankerConfig

__all__ = [
    "DataConfig",
    "EvalConfig",
    "ExperimentConfig",
    "QAConfig",
    "RerankerConfig",
    "RobustnessConfig",
    "apply_overrides",
    "env_overrides",
    "list_experiment_configs",
    "load_config",
    "load_experiment_config",
    "resolve_path",
    "to_trec_eval_measure",
]
