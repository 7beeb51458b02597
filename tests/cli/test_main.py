import argparse
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from presentation_dependence.cli import (
    EXIT_GATE_FAIL,
    EXIT_INTERNAL_ERROR,
    EXIT_USER_ERROR,
    main,
    make_parser,
)

REPO = Path(__file__).resolve().parents[2]


def test_configs_lists_shipped_configs(capsys):
    assert main(["configs", "--root", str(REPO / "configs" / "experiments")]) == 0
    assert "_smoke-fixture" in capsys.readouterr().out


def test_user_errors_exit_2(tmp_path, caplog):
    bad = tmp_path / "bad.yaml"
    bad.write_text("reranker: {reranker_class: Nope}\n", encoding="utf-8")
    assert main(["run", str(bad), "--run-dir", str(tmp_path / "r")]) == 2
    assert "unknown reranker_class 'Nope'" in caplog.text
    assert main(["run", str(tmp_path / "missing.yaml")]) == 2
    assert main(["eval", "--run-dir", str(tmp_path / "nowhere")]) == 2


def _boom(*args, **kwargs):
    raise RuntimeError("an internal bug")


def test_internal_errors_exit_3_without_a_traceback(tmp_path, monkeypatch, capsys, caplog):
    """Issue 16 (6): a crash is not a gate fail (1) nor bad input (2); traceback only with --debug."""
    import presentation_dependence.runners as runners

    monkeypatch.setattr(runners.EvalManager, "evaluate", _boom)
    (tmp_path / "r").mkdir()
    assert main(["eval", "--run-dir", str(tmp_path / "r")]) == EXIT_INTERNAL_ERROR
    assert "internal error" in caplog.text and "--debug" in caplog.text
    assert "Traceback" not in capsys.readouterr().err
    assert main(["--debug", "eval", "--run-dir", str(tmp_path / "r")]) == EXIT_INTERNAL_ERROR
    assert "Traceback" in capsys.readouterr().err


def test_interrupt_exits_130(tmp_path, monkeypatch):
    import presentation_dependence.runners as runners

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runners.EvalManager, "evaluate", interrupted)
    assert main(["eval", "--run-dir", str(tmp_path)]) == 130


def test_a_closed_stdout_exits_141_quietly():
    """``presdep schema | head -1``: the reader goes away; no "internal error", no traceback."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "presentation_dependence.cli", "schema"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the command writes
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert "internal error" not in err and "Traceback" not in err


def test_gate_crashes_are_not_gate_fails(tmp_path, caplog):
    """--verdict naming a folder, or a garbled verdict cache, is bad input (2), never 1."""
    import yaml

    items = tmp_path / "items.jsonl"
    row = {"prompt": "p", "responses": ["a", "b"], "labels": [True, False]}
    items.write_text("".join(json.dumps({"id": f"it{i}", **row}) + "\n" for i in range(4)))
    cfg = tmp_path / "task.yaml"
    cache = tmp_path / "cache"
    cfg.write_text(
        yaml.safe_dump(
            {
                "data": {"dataset": "jsonl", "path": str(items)},
                "judge": {"judge_class": "scripted", "accuracy": 0.2},
                "gate": {"threshold": 0.9, "k": 2, "cache_dir": str(cache)},
            }
        )
    )
    folder = tmp_path / "a-folder"
    folder.mkdir()
    assert main(["gate", str(cfg), "--verdict", str(folder)]) == EXIT_USER_ERROR
    assert "is a folder" in caplog.text
    verdict = tmp_path / "v.json"
    assert main(["gate", str(cfg), "--verdict", str(verdict)]) == EXIT_GATE_FAIL
    (cache_file,) = cache.glob("*.jsonl")
    for garbage in (b"\x00\xff garbage\n", b'"just a string"\n', b"[1, 2]\n"):
        cache_file.write_bytes(garbage)
        caplog.clear()
        assert main(["gate", str(cfg), "--verdict", str(verdict)]) == EXIT_USER_ERROR, garbage
        assert str(cache_file) in caplog.text


def _parsers(
    parser: argparse.ArgumentParser, name: str = "presdep"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every parser of the command tree (presdep, presdep study, presdep study task, ...)."""
    yield name, parser
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for word, sub in a.choices.items():
                yield from _parsers(sub, f"{name} {word}")


def _listed(capsys, argv: list[str]) -> list[str]:
    with pytest.raises(SystemExit) as e:
        main([*argv, "--help"])
    assert e.value.code == 0
    found = re.search(r"\{([a-z0-9,-]+)\}", capsys.readouterr().out)
    assert found, argv
    return found.group(1).split(",")


def test_help_lists_every_subcommand(capsys) -> None:
    assert _listed(capsys, []) == [
        *("run", "rerank", "psi", "psi-diff", "psi-runs", "qa"),
        *("bm25", "eval", "compare", "report"),
        *("configs", "init"),
        "schema",
        *("judge", "noise", "gate", "silver", "train", "select-lambda"),
        *("judge-splits", "train-judge", "train-reward", "judge-averaged", "student", "study"),
    ]
    assert _listed(capsys, ["student"]) == ["list", "show", "verify", "export"]
    assert _listed(capsys, ["study"]) == [
        *(
            "plan",
            "table",
            "collections",
            "archive",
            "curve",
            "recipe",
            "judge",
            "judge-arms",
            "task",
            "stage",
        ),
        "appendix",
    ]
    assert _listed(capsys, ["study", "task"]) == ["list", "show", "generate"]


def test_version_and_every_flag_has_help(capsys) -> None:
    from presentation_dependence import __version__

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"presdep {__version__}"
    parsers = list(_parsers(make_parser()))
    assert len(parsers) > 30  # the nested study actions are walked too
    missing = [
        f"{name} {'/'.join(a.option_strings) or a.dest}"
        for name, p in parsers
        for a in p._actions
        if not a.help and not isinstance(a, argparse._HelpAction)
    ]
    assert missing == []
