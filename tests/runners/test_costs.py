"""Unit costs: one line per computed unit, the last line of a unit wins, a torn line is skipped."""

from __future__ import annotations

import json

import pytest

from presentation_dependence.provenance import cpu_info, cpu_label
from presentation_dependence.runners.costs import (
    UNIT_COSTS,
    UnitClock,
    phase_cost,
    record_unit_cost,
    units_by_processor,
)


def test_the_last_record_of_a_unit_counts_and_phases_are_apart(tmp_path):
    record_unit_cost(tmp_path, "psi", "q1", 2, 10.0, 9.0)
    record_unit_cost(tmp_path, "psi", "q1", 2, 4.0, 3.5)  # computed again (--recompute-changed)
    record_unit_cost(tmp_path, "run", "q1", 2, 1.0, 1.0)
    cost = phase_cost(tmp_path, "psi")
    assert cost is not None
    assert (cost.units, cost.total, cost.seconds, cost.cpu_seconds) == (1, 2, 4.0, 3.5)
    assert not cost.complete
    record_unit_cost(tmp_path, "psi", "q2", 2, 6.0, 5.5)
    done = phase_cost(tmp_path, "psi")
    assert done is not None and done.complete
    assert (done.seconds, done.cpu_seconds) == pytest.approx((10.0, 9.0))


def test_a_torn_last_line_is_skipped_and_no_file_is_none(tmp_path):
    assert phase_cost(tmp_path, "psi") is None
    record_unit_cost(tmp_path, "psi", "q1", 1, 2.0, 1.0)
    with (tmp_path / UNIT_COSTS).open("a", encoding="utf-8") as f:
        f.write('{"phase": "psi", "unit": "q2", "of"')  # a process killed mid-write
    cost = phase_cost(tmp_path, "psi")
    assert cost is not None and (cost.units, cost.cpu_seconds, cost.complete) == (1, 1.0, True)


def test_the_clock_measures_this_process_cpu():
    clock = UnitClock()
    sum(i * i for i in range(200_000))  # some CPU work
    wall, cpu = clock.elapsed()
    assert wall > 0 and cpu > 0


def test_each_line_names_its_processor_and_older_lines_take_the_invocation_before(tmp_path):
    here = cpu_label(cpu_info())
    old = {"model": "Old CPU", "flags": ["avx2", "avx512_bf16"]}
    invs = [
        {"time_utc": "2026-12-01T10:00:00Z", "phase": "judge", "cpu": old},
        {"time_utc": "2026-12-01T09:00:00Z", "phase": "rank", "cpu": None},  # another phase
        {"time_utc": "2026-12-02T08:00:00Z", "phase": "judge", "cpu": None},  # not recorded
    ]
    (tmp_path / "provenance.json").write_text(json.dumps({"invocations": invs}))
    lines = [
        {"unit": "p0", "utc_end": "2026-12-01T09:30:00Z"},  # before any judge invocation
        {"unit": "p1", "utc_end": "2026-12-01T11:00:00Z"},
        {"unit": "p2", "utc_end": "2026-12-01T12:00:00Z"},
        {"unit": "p3", "utc_end": "2026-12-02T09:00:00Z"},
    ]
    with (tmp_path / UNIT_COSTS).open("w", encoding="utf-8") as f:
        for d in lines:  # lines from before units named their processor
            f.write(json.dumps({"phase": "judge", "of": 5, "seconds": 1, "cpu_seconds": 1, **d}))
            f.write("\n")
    record_unit_cost(tmp_path, "judge", "p4", 5, 1.0, 1.0)
    assert json.loads((tmp_path / UNIT_COSTS).read_text().splitlines()[-1])["cpu"] == here
    assert units_by_processor(tmp_path, "judge") == {
        "not recorded": 2,
        "Old CPU [avx2 avx512_bf16]": 2,
        here: 1,
    }
    assert units_by_processor(tmp_path, "psi") == {}
