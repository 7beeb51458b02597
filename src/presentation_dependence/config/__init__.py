"""Experiment configuration: dataclasses, strict YAML loading, overrides."""

from presentation_dependence.config.data_config import DataConfig, resolve_path
from presentation_dependence.config.eval_config import EvalConfig, to_trec_eval_measure
from presentation_dependence.config.experiment import (
    ExperimentConfig,
    RerankerConfig,
    apply_overrides,
    env_overrides,
    list_experiment_configs,
    load_experiment_config,
)

__all__ = [
    "DataConfig",
    "EvalConfig",
    "ExperimentConfig",
    "RerankerConfig",
    "apply_overrides",
    "env_overrides",
    "list_experiment_configs",
    "load_experiment_config",
    "resolve_path",
    "to_trec_eval_measure",
]
