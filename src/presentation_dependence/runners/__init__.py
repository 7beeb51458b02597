"""Runners: rerank a config's data into a run folder, evaluate it."""

from presentation_dependence.runners.compare import compare_files, compare_runs
from presentation_dependence.runners.evaluation import EvalManager, evaluate_files, evaluate_run
from presentation_dependence.runners.experiment import ExperimentManager, ExperimentSummary
from presentation_dependence.runners.run_folder import RunFolder, default_run_dir
from presentation_dependence.runners.stage import parse_shard

__all__ = [
    "EvalManager",
    "ExperimentManager",
    "ExperimentSummary",
    "RunFolder",
    "compare_files",
    "compare_runs",
    "default_run_dir",
    "evaluate_files",
    "evaluate_run",
    "parse_shard",
]
