"""What each resume unit cost: one line per computed unit in ``<run folder>/unit_costs.jsonl``.

A run that resumes across sessions, or that several processes share (claims), has no single
invocation whose wall time is its cost. So every stage (:func:`~.stage.run_units`: queries of
``run``, ``psi`` and ``qa``, the silver labels' queries, the judge's parts) appends, for each
unit it computes, the unit's wall seconds and this process's CPU seconds (``time.process_time``:
every thread of the process, undistorted by other jobs on the machine) under its phase. A
unit computed again (``--recompute-changed``) counts once: its last line wins. Each line is one
short ``write`` to a file opened for appending, so lines of processes sharing the folder do not
interleave.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["UNIT_COSTS", "PhaseCost", "UnitClock", "phase_cost", "record_unit_cost"]

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
    }
    path = Path(folder) / UNIT_COSTS
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


def phase_cost(folder: str | Path, phase: str) -> PhaseCost | None:
    """The summed cost of ``phase``'s units in ``folder`` (None: no unit of it recorded; a run
    made before costs were recorded). A torn last line (a process killed mid-write) is skipped."""
    path = Path(folder) / UNIT_COSTS
    if not path.is_file():
        return None
    last: dict[str, tuple[float, float]] = {}
    total = 0
    for text in path.read_text(encoding="utf-8").splitlines():
        try:
            d = json.loads(text)
        except json.JSONDecodeError:
            continue
        if d.get("phase") == phase:
            last[str(d["unit"])] = (float(d["seconds"]), float(d["cpu_seconds"]))
            total = int(d["of"])
    if not last:
        return None
    wall, cpu = sum(w for w, _ in last.values()), sum(c for _, c in last.values())
    return PhaseCost(len(last), total, wall, cpu)
