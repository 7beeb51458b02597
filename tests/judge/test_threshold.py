"""The gate's threshold chosen on held-out items (judge/scoring/threshold.py; issue 37).

The rule, by hand: T = floor(ci_low / grid) · grid of the held-out accuracy (failure credit 0
or 1/N as the gate's convention); a summary without the score is refused with the fix; and
``presdep gate --threshold-from`` gates a scripted judge on that threshold and records the
choice in the verdict.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from presentation_dependence.cli import main
from presentation_dependence.errors import ConfigError
from presentation_dependence.judge.scoring.threshold import heldout_threshold
from tests.judge.test_gate import gate_config, run

SUMMARY = {
    "score_fail0": {"mean": 0.71, "ci_low": 0.637, "ci_high": 0.78, "n": 120},
    "score_fail_chance": {"mean": 0.74, "ci_low": 0.668, "ci_high": 0.81, "n": 120},
}


def test_the_rule_by_hand() -> None:
    fail0 = heldout_threshold(SUMMARY, grid=0.05)
    assert fail0.threshold == 0.6 and fail0.score_key == "score_fail0"  # floor(12.74) * 0.05
    assert (fail0.heldout_mean, fail0.heldout_ci_low, fail0.heldout_items) == (0.71, 0.637, 120)
    assert heldout_threshold(SUMMARY, grid=0.05, convention="chance").threshold == 0.65
    assert heldout_threshold(SUMMARY, grid=0.0).threshold == 0.637  # no grid: the bound itself
    exact = {"score_fail0": {"mean": 0.8, "ci_low": 0.65, "n": 10}}
    assert heldout_threshold(exact, grid=0.05).threshold == 0.65  # on the grid: kept
    with pytest.raises(ConfigError, match=r"no score_fail0 .* Fix: point at the summary\.json"):
        heldout_threshold({"records": 3}, grid=0.05)
    with pytest.raises(ConfigError, match="convention"):
        heldout_threshold(SUMMARY, grid=0.05, convention="zero")


def test_gate_threshold_from_a_heldout_summary(tmp_path: Path, items_file: Path) -> None:
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps(SUMMARY))
    cfg = gate_config(tmp_path, items_file, judge={"accuracy": 0.95, "noise": 0.1}, gate={"k": 3})
    code, verdict = run(cfg, tmp_path, "--threshold-from", str(summary))
    assert code == 0 and verdict["threshold"] == 0.6
    choice = verdict["threshold_choice"]
    assert choice["heldout_summary"] == str(summary) and choice["heldout_ci_low"] == 0.637
    weak = gate_config(tmp_path, items_file, judge={"accuracy": 0.05, "noise": 0.1}, gate={"k": 3})
    code, verdict = run(weak, tmp_path, "--threshold-from", str(summary))
    assert code == 1 and verdict["decision"] == "fail"
    assert main(["gate", str(cfg), "--threshold-from", str(tmp_path / "none.json")]) == 2
    with pytest.raises(SystemExit):  # one threshold or the other
        main(["gate", str(cfg), "--threshold", "0.5", "--threshold-from", str(summary)])
