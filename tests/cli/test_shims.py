"""The scripts kept as shims take the same arguments as their presdep subcommand, and call it."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

import presentation_dependence.cli as cli
from tests.cli.conftest import REPO, load_script

# script -> (its presdep subcommand, every option string and positional the script took before it
# became a shim: jobs and docs call the scripts with these).
SHIMS = {
    "scripts/report.py": (("report",), {"run_dirs", "--out", "--seed"}),
    "scripts/train/make_silver.py": (
        ("silver",),
        {"config", "--override", "-o", "--force", "--shard"},
    ),
    "scripts/train/train_student.py": (
        ("train",),
        {"config", "--override", "-o", "--lambda-from", "--restart"},
    ),
    "scripts/train/select_lambda.py": (("select-lambda",), {"config", "--override", "-o", "--out"}),
    "scripts/train/study_table.py": (
        ("study", "table"),
        {"dl19_dir", "--out", "--timings", "--doc"},
    ),
    "scripts/train/learning_curve.py": (
        ("study", "curve"),
        {"configs", "--png", "--presentations", "--max-queries", "--seed"},
    ),
    "scripts/train/run_cpu_study.py": (
        ("study", "plan"),
        {
            "--root",
            "--dry-run",
            "--plan",
            "--lane",
            "--timings",
            "--launcher",
            "--eval-override",
            "--reuse",
        },
    ),
    "scripts/study.py": (("study",), {"-v", "--verbose", "--data-root"}),
    "scripts/judge_study.py": (
        ("study", "judge"),
        {"configs", "--root", "--rerun", "--gate", "--override"},
    ),
}


def _subparser(words: tuple[str, ...]) -> argparse.ArgumentParser:
    parser = cli.make_parser()
    for word in words:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return parser


def _arguments(parser: argparse.ArgumentParser) -> set[str]:
    return {
        name
        for a in parser._actions
        for name in (a.option_strings or [a.dest])
        if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
    }


@pytest.mark.parametrize("script", sorted(SHIMS))
def test_shim_passes_its_arguments_to_its_subcommand(script: str, monkeypatch) -> None:
    words, flags = SHIMS[script]
    assert flags <= _arguments(_subparser(words)), "a flag of the script is gone"
    calls: list[list[str]] = []
    monkeypatch.setattr(cli, "main", lambda argv: calls.append(list(argv)) or 7)
    assert load_script(script).main(["ARG", "--flag"]) == 7
    assert calls == [[*words, "ARG", "--flag"]]
    monkeypatch.setattr(sys, "argv", [script, "FROM-SYS-ARGV"])
    assert load_script(script).main() == 7 and calls[-1] == [*words, "FROM-SYS-ARGV"]


def test_scripts_study_has_the_reproduction_groups() -> None:
    sub = next(
        a for a in _subparser(("study",))._actions if isinstance(a, argparse._SubParsersAction)
    )
    assert {"task", "stage", "appendix"} <= set(sub.choices)


def test_script_and_module_run_as_processes() -> None:
    """``python scripts/X.py`` and ``python -m presentation_dependence.cli`` print the same."""
    run = {"cwd": REPO, "capture_output": True, "text": True, "check": True}
    script = subprocess.run([sys.executable, "scripts/study.py", "task", "list"], **run)
    module = subprocess.run(
        [sys.executable, "-m", "presentation_dependence.cli", "study", "task", "list"], **run
    )
    assert script.stdout == module.stdout and "passage-reranking" in script.stdout
