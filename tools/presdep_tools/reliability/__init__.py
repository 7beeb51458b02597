"""Hostile-user reliability cases: run them, record what happened, write docs/RELIABILITY.md.

``python scripts/reliability.py`` (``poe reliability``) runs every case of
:data:`~presdep_tools.reliability.cases.CASES` against the synthetic smoke fixture, the
scripted judge and the loopback chat server (no network, no GPU, no model download), each in its
own temporary folder, and writes the table of cases and results (paths under the temporary
folders written ``<case>`` and ``<tmp>``: the table is the same from run to run). A case is a
function that returns what it observed and raises :class:`CaseFailed` when the project
misbehaved; an unexpected exception is a failure too. Not part of the default test run (it
starts subprocesses and kills them); the regression tests of issues 16 and 38 cover each defect
in ``pytest``.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Case", "CaseFailed", "CaseResult", "portable", "render_markdown", "run_cases"]

log = logging.getLogger(__name__)


class CaseFailed(AssertionError):
    """The project did not behave as the case expects."""


@dataclass(frozen=True)
class Case:
    category: str  # bad input | stale results | kill point | concurrency | secrets | hosted fault
    name: str
    expected: str
    run: Callable[[Path], str]  # -> what was observed; raises CaseFailed on misbehaviour


@dataclass(frozen=True)
class CaseResult:
    case: Case
    passed: bool
    observed: str
    seconds: float


def run_cases(
    cases: Sequence[Case],
    *,
    only: str | None = None,
    on_result: Callable[[CaseResult], None] | None = None,
) -> list[CaseResult]:
    """Run each case (whose name contains ``only``, if given) in a fresh temporary folder;
    ``on_result`` is called with each result as it comes."""
    results = []
    for case in cases:
        if only is not None and only not in case.name:
            continue
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="presdep-reliability-") as tmp:
            try:
                observed, passed = case.run(Path(tmp)), True
            except CaseFailed as e:
                observed, passed = f"FAILED: {e}", False
            except Exception as e:  # a crash of the harness or the project: a failure
                observed, passed = f"CRASHED: {type(e).__name__}: {e}", False
                log.debug("%s", traceback.format_exc())
        res = CaseResult(case, passed, portable(observed, Path(tmp)), time.perf_counter() - t0)
        if on_result is not None:
            on_result(res)
        results.append(res)
    return results


def portable(text: str, root: Path) -> str:
    """``text`` with the case's temporary folder written ``<case>`` and any other path under the
    system's temporary folder ``<tmp>/.../rest``, so that docs/RELIABILITY.md is the same on every
    run and machine (issue 38, defect 17)."""
    for form in sorted({str(root), os.path.realpath(root)}, key=len, reverse=True):
        text = text.replace(form, "<case>")
    for base in sorted({tempfile.gettempdir(), os.path.realpath(tempfile.gettempdir())}, key=len):
        # The first name under it is a random one (mkdtemp's, mkstemp's): written "...".
        text = re.sub(re.escape(base.rstrip(os.sep)) + r"[/\\][^/\\\s'\":]+", "<tmp>/...", text)
    return text


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def render_markdown(results: Sequence[CaseResult], *, command: str) -> str:
    """docs/RELIABILITY.md: how the cases are run, then one table row per case."""
    passed = sum(r.passed for r in results)
    lines = [
        "# Reliability: hostile cases and what happened",
        "",
        f"Written by `{command}` (`poe reliability`): every case below was run against the "
        "synthetic smoke fixture, the scripted judge and the loopback chat server (no network, "
        "GPU or model download), each in its own temporary folder. The *observed* column is "
        "what the run recorded, not a description of intent. Each defect of issue 16 also has a "
        "regression test in the default `pytest` run.",
        "",
        f"**{passed} of {len(results)} cases behaved as expected.**",
        "",
        "| # | Category | Case | Expected | Observed | Result |",
        "|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(results, start=1):
        lines.append(
            f"| {i} | {r.case.category} | {_cell(r.case.name)} | {_cell(r.case.expected)} | "
            f"{_cell(r.observed)} | {'pass' if r.passed else '**FAIL**'} |"
        )
    lines += [
        "",
        "Exit codes: 0 done, 1 only `presdep gate`'s fail beyond noise, 2 bad input, "
        "3 internal error (traceback with `--debug`), 130 interrupted.",
        "",
    ]
    return "\n".join(lines)
