"""The reliability harness: a case that misbehaves is reported, never hidden."""

from __future__ import annotations

from pathlib import Path

from presdep_tools.reliability import Case, CaseFailed, render_markdown, run_cases
from presdep_tools.reliability.cases import CASES


def _fails(root: Path) -> str:
    raise CaseFailed("the project did something wrong")


def _crashes(root: Path) -> str:
    raise KeyError("harness bug")


def test_results_table_reports_pass_fail_and_crash() -> None:
    real = next(c for c in CASES if c.name == "psi --from-scores on an empty folder")
    cases = [real, Case("x", "fails", "-", _fails), Case("x", "crashes", "-", _crashes)]
    results = run_cases(cases)
    assert [r.passed for r in results] == [True, False, False]
    assert results[2].observed.startswith("CRASHED: KeyError")
    text = render_markdown(results, command="test")
    assert "**1 of 3 cases behaved as expected.**" in text
    assert text.count("| **FAIL** |") == 2 and "| pass |" in text


def test_every_category_has_cases() -> None:
    categories = {c.category for c in CASES}
    assert categories == {
        "bad input",
        "stale results",
        "kill point",
        "concurrency",
        "secrets",
        "hosted fault",
    }
    assert len({c.name for c in CASES}) == len(CASES)
