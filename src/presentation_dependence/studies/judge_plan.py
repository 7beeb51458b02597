"""The cost of a judge study before it runs: calls per config and CPU hours from a small run.

For every config of a study (``configs/judge/study/*.yaml``), :func:`plan_rows` counts the calls
it makes (items x placements for ``presdep judge``; items x presentations x prompts for
``task: rank``; items x batch sizes x repeats for a ``noise-`` config) by loading its data, and
estimates its CPU time from *measured* CPU seconds per call of a small run (its units' CPU
seconds, ``unit_costs.jsonl``; a run from before units recorded theirs: the invocation its
``study_timing.json`` timed, model load included):

* measured on the same config id: calls x that figure;
* else measured with the same judge on another config (of the same set if there is one): scaled
  by the mean number of characters a call shows (question + responses, each cut to ``max_response_chars``), since the prompt length
  drives the cost of one forward pass; the row names the run it scaled from.

An estimate, stated as one: the real cost also depends on the machine and its load.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from presentation_dependence.judge.config import (
    JudgeTaskConfig,
    load_judge_config,
)
from presentation_dependence.judge.items.loaders import load_response_set
from presentation_dependence.judge.items.records import ResponseItem
from presentation_dependence.judge.report import _table, fmt
from presentation_dependence.studies.judge_study import StudyRun

__all__ = ["PlanRow", "plan_markdown", "plan_rows"]


def _items(cfg: JudgeTaskConfig) -> list[ResponseItem]:
    one = cfg.task == "judge"
    items = load_response_set(
        replace(cfg.data, require_one_correct=one or cfg.data.require_one_correct)
    )
    if cfg.task == "rank":
        items = [it for it in items if 0 < it.num_correct < len(it.responses)]
    return items


def _per_item_calls(cfg: JudgeTaskConfig, n: int) -> int:
    if cfg.task == "rank":  # a call = one presentation of an item (ceil(n / B) prompts)
        return cfg.ranking.num_presentations
    if cfg.id.startswith("noise-"):
        return (
            cfg.noise.repeats
            * len(cfg.noise.batch_sizes)
            * (1 if cfg.placement.mode == "seeded" else n)
        )
    return {"full": math.factorial(n), "cyclic": n, "seeded": 1}[cfg.placement.mode]


def _chars(cfg: JudgeTaskConfig, items: Sequence[ResponseItem]) -> float:
    cut = getattr(cfg.judge.options, "max_response_chars", None) or getattr(
        cfg.reranker.options, "max_passage_chars", None
    )
    total = [len(it.prompt) + sum(len(r[:cut] if cut else r) for r in it.responses) for it in items]
    return sum(total) / max(1, len(total))


def _judge_kind(cfg: JudgeTaskConfig) -> str:
    return cfg.judge.judge_class if cfg.task == "judge" else f"rank:{cfg.reranker.reranker_class}"


@dataclass
class PlanRow:
    """One config of a study: its calls and estimated CPU time."""

    config_id: str
    kind: str
    items: int
    calls: int
    chars: float
    cpu_per_call: float | None = None
    cpu_hours: float | None = None
    basis: str = "no measured run of this judge"


def plan_rows(config_paths: Sequence[Path], measured: Sequence[StudyRun]) -> list[PlanRow]:
    """One row per config: calls, and CPU hours estimated from ``measured`` runs."""
    runs = {r.run_id: r for r in measured if r.cpu_seconds and r.kind in ("judge", "rank")}
    rows = []
    for path in config_paths:
        cfg = load_judge_config(path)
        items = _items(cfg)
        calls = sum(_per_item_calls(cfg, len(it.responses)) for it in items)
        row = PlanRow(cfg.id, _judge_kind(cfg), len(items), calls, _chars(cfg, items))
        own = runs.get(cfg.id)
        same = [r for r in runs.values() if _run_kind(r) == row.kind]
        near = [r for r in same if r.set_name == cfg.data.dataset]  # same set first
        basis = own or next(iter(near + same), None)
        if basis is not None and basis.cpu_seconds:
            per_call = basis.cpu_seconds / _run_calls(basis)
            if basis is not own:
                base_cfg = basis.config
                per_call *= row.chars / max(1.0, _chars(base_cfg, _items(base_cfg)))
            row.cpu_per_call, row.cpu_hours = per_call, per_call * calls / 3600
            row.basis = f"`{basis.run_id}`" + ("" if own else ", scaled by characters per call")
        rows.append(row)
    return rows


def _run_kind(run: StudyRun) -> str:
    if run.kind == "rank":
        return f"rank:{run.config.reranker.reranker_class}"
    return run.judge_class


def _run_calls(run: StudyRun) -> int:
    if run.kind == "rank":
        return int(run.summary["items"]) * int(run.summary["num_presentations"])
    return len(run.records)


def plan_markdown(config_paths: Sequence[Path], measured: Sequence[StudyRun]) -> str:
    """The plan table: calls and estimated CPU time per config, and the total."""
    rows = plan_rows(config_paths, measured)
    total = sum(r.cpu_hours or 0.0 for r in rows)
    body = _table(
        ["config", "judge", "items", "calls", "CPU s per call (est.)", "CPU hours (est.)", "from"],
        [
            [
                f"`{r.config_id}`",
                r.kind,
                r.items,
                r.calls,
                fmt(r.cpu_per_call, 2),
                fmt(r.cpu_hours, 1),
                r.basis,
            ]
            for r in rows
        ],
    )
    return body + (
        f"\nTotal: about {fmt(total, 0)} CPU hours (one thread) for the configs with an "
        "estimate, without `--rerun` (one more sweep each) and `--gate` (k sweeps each).\n"
    )
