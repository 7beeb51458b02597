"""Every generated block of the docs is listed in docs/generated_blocks.yaml, and every block
listed as recomputable renders again, byte for byte, from the committed files its argv names."""

from __future__ import annotations

import difflib
import re
import runpy
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from presentation_dependence.cli import main
from presentation_dependence.judge.items.loaders import default_shared_data

REPO = Path(__file__).resolve().parents[2]
REGISTRY = REPO / "docs" / "generated_blocks.yaml"
START = re.compile(r"^<!-- (\S+):start -->$", re.M)  # a marker is a line of its own


def _entries() -> list[dict[str, Any]]:
    doc = yaml.safe_load(REGISTRY.read_text(encoding="utf-8"))
    return list(doc["blocks"])


def _docs() -> list[Path]:
    """The docs, the README and the shipped students' model cards."""
    cards = (REPO / "students").glob("*/README.md")
    return sorted([*(REPO / "docs").rglob("*.md"), REPO / "README.md", *cards])


def _blocks_in_docs() -> list[tuple[str, str]]:
    found = []
    for path in _docs():
        text = path.read_text(encoding="utf-8")
        for name in START.findall(text):
            end = f"\n<!-- {name}:end -->"
            assert end in text, f"{path}: block {name} has no end marker line"
            found.append((path.relative_to(REPO).as_posix(), name))
    return found


def test_every_block_of_the_docs_is_listed_once() -> None:
    listed = [(e["doc"], e["block"]) for e in _entries()]
    assert len(listed) == len(set(listed)), "a block is listed twice"
    in_docs = _blocks_in_docs()
    assert len(in_docs) == len(set(in_docs)), "a doc holds a block twice"
    missing = sorted(set(in_docs) - set(listed))
    assert not missing, f"blocks not in {REGISTRY.name}: {missing}"
    stale = sorted(set(listed) - set(in_docs))
    assert not stale, f"{REGISTRY.name} lists blocks no doc holds: {stale}"


def test_every_entry_says_how_it_renders_or_why_it_cannot() -> None:
    for e in _entries():
        where = f"{e['doc']} {e['block']}"
        assert isinstance(e.get("recomputable"), bool), where
        if not e["recomputable"]:
            assert e.get("reason") and not e.get("argv") and not e.get("checked_by"), where
            continue
        assert bool(e.get("argv")) != bool(e.get("checked_by")), f"{where}: argv or checked_by"
        assert e.get("needs") in (None, "shared-data"), where
        if e.get("checked_by"):
            assert (REPO / e["checked_by"]).is_file(), where
            text = (REPO / e["checked_by"]).read_text(encoding="utf-8")
            assert e["block"] in text, f"{e['checked_by']} does not check {where}"
        else:
            assert e["argv"][0] in ("presdep", "python"), where
            assert "{out}/" + e["doc"] in e["argv"], f"{where}: the argv must write {{out}}/doc"


def _render(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Run a registry argv in this process, from the repository root."""
    monkeypatch.chdir(REPO)
    if argv[0] == "presdep":
        assert main(argv[1:]) == 0, argv
        return
    monkeypatch.setattr(sys, "argv", argv[1:])
    try:
        runpy.run_path(str(REPO / argv[1]), run_name="__main__")
    except SystemExit as stop:  # a script that ends with sys.exit(main(...))
        assert stop.code in (0, None), argv


RENDERED = [e for e in _entries() if e["recomputable"] and e.get("argv")]


@pytest.mark.parametrize("entry", RENDERED, ids=[f"{e['doc']}:{e['block']}" for e in RENDERED])
def test_the_block_renders_again_from_committed_files(
    entry: Mapping[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if entry.get("needs") == "shared-data" and not default_shared_data().is_dir():
        pytest.skip(
            f"{entry['block']} also reads the shared data; {default_shared_data()} is absent"
        )
    doc = REPO / entry["doc"]
    copy = tmp_path / entry["doc"]
    copy.parent.mkdir(parents=True)
    shutil.copyfile(doc, copy)
    _render([a.replace("{out}", str(tmp_path)) for a in entry["argv"]], monkeypatch)
    want, got = doc.read_text(encoding="utf-8"), copy.read_text(encoding="utf-8")
    if got != want:
        diff = difflib.unified_diff(
            want.splitlines(True), got.splitlines(True), entry["doc"], "rendered again", n=1
        )
        pytest.fail(f"{entry['doc']} block {entry['block']} differs:\n{''.join(diff)}")
