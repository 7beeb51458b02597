"""The one timing record of every study: ``steps.jsonl``, one JSON line per finished step.

A line is ``{"step", "lane", "seconds", "utc_end"}`` (wall seconds, rounded to 0.1). The
sequencer (:func:`~.sequencer.run_steps`) appends one for each step it ran (a plan's record is
``runs/<plan stem>/steps.jsonl``: the study table's wall-time column); the judge study
(:mod:`.judge_run`) one for each phase of a config it ran (``<id> run``, ``<id> rerun``,
``<id> gate``) to ``<root>/steps.jsonl``. Each line is one short write to a file opened for
appending, so lanes and processes sharing the record do not interleave. A run's CPU seconds,
over resumes and processes, are its units' (``unit_costs.jsonl``,
:mod:`~presentation_dependence.runners.costs`).

A judge study folder from before this record holds ``study_timing.json`` (the wall and CPU
seconds of each phase's last invocation): :func:`legacy_judge_timing` still reads it, the cost
of a run whose units did not all record theirs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from presentation_dependence.provenance import utc_now

__all__ = ["LEGACY_JUDGE_TIMING", "STEPS", "legacy_judge_timing", "record_step", "step_seconds"]

STEPS = "steps.jsonl"
LEGACY_JUDGE_TIMING = "study_timing.json"  # read only: judge study folders from before STEPS


def record_step(path: Path, step: str, lane: str, seconds: float) -> None:
    """Append one finished step's line to the timing record ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"step": step, "lane": lane, "seconds": round(seconds, 1)}
    with path.open("a", encoding="utf-8") as f:  # one short line each: an atomic append
        f.write(json.dumps({**record, "utc_end": utc_now()}) + "\n")


def step_seconds(timings: str | Path | None) -> dict[str, float]:
    """Seconds per step name from a timing record (``steps.jsonl``; the last line wins)."""
    out: dict[str, float] = {}
    if timings is None or not Path(timings).is_file():
        return out
    for line in Path(timings).read_text(encoding="utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            out[str(d["step"])] = float(d["seconds"])
    return out


def legacy_judge_timing(folder: Path) -> dict[str, Any]:
    """A judge study folder's ``study_timing.json`` (``seconds``, ``cpu_seconds``, and
    ``rerun_``/``gate_`` prefixed ones), or ``{}`` where it has none."""
    path = folder / LEGACY_JUDGE_TIMING
    return (json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None) or {}
