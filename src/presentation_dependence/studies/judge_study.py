"""A judge study's run folders, read back: several response sets x judges (tables and figure:
:mod:`.judge_tables`).

Layout under a study root (``scripts/judge_study.py`` writes it; ``configs/judge/study/``):

* ``<root>/<config id>/``: a ``presdep judge`` folder (``records.jsonl``, ``summary.json``,
  ``resolved_config.yaml``, ``provenance.json``) plus the cost: ``unit_costs.jsonl`` (every
  part's wall and CPU seconds) where it covers every part, else (a run from before) its
  ``study_timing.json``;
  ``rerun/`` inside it, when present, is a ``presdep noise`` folder whose run 0 is the sweep
  itself (``--reference``); ``gate_verdict.json``, when present, a ``presdep gate`` verdict.
* ``<root>/<id>/`` with ``ranking_summary.json``: a ``task: rank`` folder;
  with ``noise.json`` and no ``records.jsonl``: a rerun-noise-against-load folder.

Besides the records' summary, each judge run's **verdict flip rate across placements**
(:func:`placement_flips`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from presentation_dependence.judge.config import JudgeTaskConfig, config_from_raw
from presentation_dependence.judge.items.records import JudgeRecord, read_records
from presentation_dependence.metrics.proportions import wilson_interval
from presentation_dependence.runners.costs import phase_cost, units_by_processor
from presentation_dependence.runners.readback import folder_config
from presentation_dependence.runners.run_folder import RESOLVED_CONFIG
from presentation_dependence.studies.timing import legacy_judge_timing

__all__ = ["StudyRun", "load_run", "load_study", "placement_flips"]


@dataclass
class StudyRun:
    """One run folder of a study."""

    run_id: str
    folder: Path
    kind: str  # judge | rank | noise
    config: JudgeTaskConfig
    summary: dict[str, Any] = field(default_factory=dict)
    records: list[JudgeRecord] = field(default_factory=list)
    seconds: float | None = None
    cpu_seconds: float | None = None
    rerun: dict[str, Any] | None = None
    gate: dict[str, Any] | None = None
    # units (parts, items) each processor computed, of the run and of its rerun
    processors: dict[str, int] = field(default_factory=dict)
    rerun_processors: dict[str, int] = field(default_factory=dict)

    @property
    def judge_class(self) -> str:
        return self.config.judge.judge_class

    @property
    def set_name(self) -> str:
        """The response set (``data.dataset``): runs of one set are compared."""
        return self.config.data.dataset


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def load_run(folder: Path) -> StudyRun | None:
    """The run in ``folder``, or None when it holds no finished run."""
    if not (folder / RESOLVED_CONFIG).is_file():
        return None
    cfg = folder_config(folder, config_from_raw)
    run = StudyRun(cfg.id, folder, "judge", cfg)
    if (folder / "ranking_summary.json").is_file():
        run.kind, run.summary = "rank", _json(folder / "ranking_summary.json")
    elif (folder / "records.jsonl").is_file() and (folder / "summary.json").is_file():
        run.summary = _json(folder / "summary.json")
        run.records = read_records(folder / "records.jsonl")
        run.rerun = _json(folder / "rerun" / "noise.json")
        run.gate = _json(folder / "gate_verdict.json")
    elif (folder / "noise.json").is_file():
        run.kind, run.summary = "noise", _json(folder / "noise.json")
    else:
        return None
    # The run's cost: its units' summed seconds where every unit has a record (a run resumed
    # across sessions or shared by processes), else the one invocation an old run's
    # study_timing.json timed.
    cost = phase_cost(folder, run.kind)
    run.processors = units_by_processor(folder, run.kind)
    if run.rerun is not None:
        run.rerun_processors = units_by_processor(folder / "rerun", "noise")
    timing = legacy_judge_timing(folder)
    if cost is not None and cost.complete:
        run.seconds, run.cpu_seconds = cost.seconds, cost.cpu_seconds
    else:
        run.seconds, run.cpu_seconds = timing.get("seconds"), timing.get("cpu_seconds")
    return run


def load_study(root: Path) -> list[StudyRun]:
    """Every finished run directly under ``root``, by run id."""
    runs = [r for f in sorted(root.iterdir()) if f.is_dir() and (r := load_run(f)) is not None]
    if not runs:
        raise FileNotFoundError(f"{root}: no finished judge, rank or noise run folder")
    return runs


def placement_flips(records: Sequence[JudgeRecord], confidence: float = 0.95) -> dict[str, Any]:
    """How often an item's verdict names a different *response* in another placement.

    Over items with at least two placements (repeat 0): ``items_flipped`` among the items whose
    every placement parsed (share + Wilson interval), and ``pair_flip_share``, the share of
    placement pairs of those items whose verdicts name different responses.
    """
    by_item: dict[str, list[JudgeRecord]] = defaultdict(list)
    for r in records:
        if r.repeat == 0:
            by_item[r.item_id].append(r)
    multi = {i: rs for i, rs in by_item.items() if len(rs) >= 2}
    parsed = {i: rs for i, rs in multi.items() if all(r.parsed for r in rs)}
    flipped, pairs, pair_flips = 0, 0, 0
    for rs in parsed.values():
        chosen = [r.placement[r.verdict_slot] for r in rs if r.verdict_slot is not None]
        flipped += len(set(chosen)) > 1
        for a in range(len(chosen)):
            for b in range(a + 1, len(chosen)):
                pairs += 1
                pair_flips += chosen[a] != chosen[b]
    low, high = wilson_interval(flipped, len(parsed), confidence)
    return {
        "items": len(multi),
        "items_all_parsed": len(parsed),
        "items_flipped": flipped,
        "flip_share": flipped / len(parsed) if parsed else float("nan"),
        "flip_ci": [low, high],
        "placement_pairs": pairs,
        "pair_flip_share": pair_flips / pairs if pairs else float("nan"),
    }
