"""What each resume unit cost: one line per computed unit in ``<run folder>/unit_costs.jsonl``.

A run that resumes across sessions, or that several processes share (claims), has no single
invocation whose wall time is its cost. So every stage (:func:`~.stage.run_units`: queries of
``run``, ``psi`` and ``qa``, the silver labels' queries, the judge's parts) appends, for each
unit it computes, the unit's wall seconds and this process's CPU seconds (``time.process_time``:
every thread of the process, undistorted by other jobs on the machine) under its phase. A
unit computed again (``--recompute-changed``) counts once: its last line wins. Each line is one
short ``write`` to a file opened for appending, so lines of processes sharing the folder do not
interleave.

Each line also names the processor that computed the unit (:func:`~presentation_dependence.
provenance.cpu_label`): a run resumed on another machine is then two judges' work where the
scores are bfloat16 (the kernels, and so the last bits, follow the CPU's features), and
:func:`units_by_processor` says how many units each machine computed.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from presentation_dependence.provenance import cpu_info, cpu_label
from presentation_dependence.runners.readback import read_provenance

__all__ = ["UNIT_COSTS", "PhaseCost", "UnitClock", "phase_cost", "record_unit_cost"]
__all__ += ["unit_processors", "units_by_processor"]

UNIT_COSTS = "unit_costs.jsonl"


class UnitClock:
    """Started at construction; :meth:`elapsed` is ``(wall seconds, CPU seconds)`` since."""

    def __init__(self) -> None:
        self.wall0, self.cpu0 = time.perf_counter(), time.process_time()

    def elapsed(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall0, time.process_time() - self.cpu0


@dataclass(frozen=True)
class PhaseCost:
    """A phase's cost summed over the units recorded (each unit's last record), of ``total``
    units in the phase (as its last record says)."""

    units: int
    total: int
    seconds: float
    cpu_seconds: float

    @property
    def complete(self) -> bool:
        """Every unit of the phase recorded: the sums are the phase's whole cost (a run begun
        before costs were recorded has units without a line)."""
        return self.units >= self.total


def record_unit_cost(
    folder: str | Path, phase: str, unit: str, of: int, seconds: float, cpu_seconds: float
) -> None:
    """Append the cost of ``unit`` (one of the ``of`` units of ``phase``) to
    ``folder/unit_costs.jsonl``."""
    line = {
        "phase": phase,
        "unit": unit,
        "of": of,
        "seconds": round(seconds, 3),
        "cpu_seconds": round(cpu_seconds, 3),
        "utc_end": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cpu": cpu_label(cpu_info()),
    }
    path = Path(folder) / UNIT_COSTS
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


def _last_records(folder: str | Path, phase: str) -> tuple[dict[str, dict[str, Any]], int]:
    """Each unit's last line of ``phase``, and the phase's size as its last line says (a torn
    last line, from a process killed mid-write, is skipped)."""
    path = Path(folder) / UNIT_COSTS
    last: dict[str, dict[str, Any]] = {}
    total = 0
    if not path.is_file():
        return last, total
    for text in path.read_text(encoding="utf-8").splitlines():
        try:
            d = json.loads(text)
        except json.JSONDecodeError:
            continue
        if d.get("phase") == phase:
            last[str(d["unit"])] = d
            total = int(d["of"])
    return last, total


def phase_cost(folder: str | Path, phase: str) -> PhaseCost | None:
    """The summed cost of ``phase``'s units in ``folder`` (None: no unit of it recorded; a run
    made before costs were recorded). A torn last line (a process killed mid-write) is skipped."""
    last, total = _last_records(folder, phase)
    if not last:
        return None
    wall = sum(float(d["seconds"]) for d in last.values())
    cpu = sum(float(d["cpu_seconds"]) for d in last.values())
    return PhaseCost(len(last), total, wall, cpu)


def unit_processors(folder: str | Path, phase: str) -> dict[str, str]:
    """The processor that computed each of ``phase``'s recorded units, by :func:`cpu_label`.

    A line written before lines named their processor is given to the processor of the folder's
    last ``provenance.json`` invocation of ``phase`` that began before the unit ended (one
    machine at a time per folder: the sessions that resumed it ran one after another); a unit
    no invocation precedes is ``not recorded``."""
    starts = sorted(
        (str(inv["time_utc"]), cpu_label(inv.get("cpu")))
        for inv in read_provenance(folder).invocations
        if inv.get("phase", phase) == phase and "time_utc" in inv
    )
    out: dict[str, str] = {}
    for unit, d in _last_records(folder, phase)[0].items():
        label = d.get("cpu")
        if label is None:
            end = str(d.get("utc_end", ""))
            before = [cpu for t, cpu in starts if t <= end]  # ISO UTC stamps sort as times
            label = before[-1] if before else "not recorded"
        out[unit] = str(label)
    return out


def units_by_processor(folder: str | Path, phase: str) -> dict[str, int]:
    """How many of ``phase``'s recorded units each processor computed (:func:`unit_processors`)."""
    counts: dict[str, int] = {}
    for label in unit_processors(folder, phase).values():
        counts[label] = counts.get(label, 0) + 1
    return counts
