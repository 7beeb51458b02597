"""The noise-aware gate on the trained judges at their held-out thresholds (issue 37), beside the
judge off the shelf on the same cases.

Each arm's gate verdict at the threshold its held-out run chose
(``<trained>/<label>/gate-heldout-threshold.json``, written by ``presdep gate
--threshold-from``; a checkpoint's under ``<trained>/checkpoints/<label>/``) is one row; the judge
off the shelf gets a row at the same threshold, decided from its judge-study gate verdict
(``<baseline>/<run id>/gate_verdict.json``, the same cases, k and z) by the gate's own rule
(:func:`~.judge_tables.gate_cells`). No call is made: the mean and the
measured noise of a gate do not depend on its threshold, only the decision does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from presentation_dependence.judge.report import _table, fmt
from presentation_dependence.studies.judge_tables import GATE_HEAD, gate_cells

__all__ = ["HELDOUT_GATE", "heldout_gates_markdown"]

HELDOUT_GATE = "gate-heldout-threshold.json"


def _verdicts(trained: Path) -> list[tuple[str, dict[str, Any]]]:
    """(label, verdict) of every arm and checkpoint with a gate at its held-out threshold."""
    folders = sorted(p for p in trained.iterdir() if p.is_dir()) if trained.is_dir() else []
    extra = trained / "checkpoints"
    folders += sorted(p for p in extra.iterdir() if p.is_dir()) if extra.is_dir() else []
    return [
        (f.name, json.loads((f / HELDOUT_GATE).read_text(encoding="utf-8")))
        for f in folders
        if (f / HELDOUT_GATE).is_file()
    ]


def _row(label: str, v: dict[str, Any], low: float, threshold: float) -> list[Any]:
    cells = gate_cells(v, threshold)
    del cells[GATE_HEAD.index("threshold")]  # shown with the held-out lower end it came from
    return [label, f"{fmt(low)} → {fmt(threshold, 2)}", *cells]


def heldout_gates_markdown(trained: Path, baseline: Path) -> str:
    """One table: each arm's gate at its held-out threshold, and the judge off the shelf
    decided at the same threshold from its own gate's calls; empty when no arm has one."""
    rows = []
    for label, v in _verdicts(trained):
        low, threshold = float(v["threshold_choice"]["heldout_ci_low"]), float(v["threshold"])
        rows.append(_row(f"`{label}`", v, low, threshold))
        base = baseline / v["config"]["id"] / "gate_verdict.json"
        if base.is_file():
            off = json.loads(base.read_text(encoding="utf-8"))
            rows.append(_row(f"off the shelf, same threshold as `{label}`", off, low, threshold))
    if not rows:
        return ""
    head = ["judge", "held-out lower end → threshold"]
    head += [h for h in GATE_HEAD if h != "threshold"]
    return (
        "### The gate at the held-out threshold\n\n"
        "Each trained judge gated on the HH-RLHF test cases at the threshold its held-out run "
        "chose (the lower end of its held-out accuracy interval, floored to the gate's grid; "
        "`presdep gate --threshold-from`), and the judge off the shelf decided at the same "
        "threshold from its own gate's calls on the same cases (no new call: a gate's mean and "
        "measured noise do not depend on the threshold). *Without margin*: mean ≥ threshold; "
        "*with margin*: the gate's decision, which passes within z·SE of the threshold.\n\n"
        + _table(head, rows)
    )
