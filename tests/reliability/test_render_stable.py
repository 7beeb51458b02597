"""Issue 38 (17): docs/RELIABILITY.md holds no temporary path, so it is the same on every run."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from presdep_tools.reliability import Case, CaseFailed, render_markdown, run_cases
from presdep_tools.reliability.cases import CASES


def _names_its_folder(root: Path) -> str:
    (root / "run").mkdir()
    return f"wrote {root / 'run' / 'metrics.json'} (real {os.path.realpath(root)}/run)"


def _fails_naming_a_temp_file(root: Path) -> str:
    with tempfile.NamedTemporaryFile(suffix=".log") as other:
        raise CaseFailed(f"exit 2: {other.name}: cannot read {root}/x.yaml")


def _render(workdir: Path) -> bytes:
    """The cases run with the system's temporary folder set to ``workdir``."""
    before = tempfile.tempdir
    tempfile.tempdir = str(workdir)
    try:
        real = next(c for c in CASES if c.name == "psi --from-scores on an empty folder")
        cases = [
            real,
            Case("x", "names its folder", "-", _names_its_folder),
            Case("x", "fails naming a temporary file", "-", _fails_naming_a_temp_file),
        ]
        return render_markdown(run_cases(cases), command="test").encode("utf-8")
    finally:
        tempfile.tempdir = before


def test_the_rendered_doc_is_the_same_from_two_temporary_folders(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b-longer-name").mkdir()
    first, second = _render(tmp_path / "a"), _render(tmp_path / "b-longer-name")
    assert first == second
    text = first.decode()
    assert "wrote <case>/run/metrics.json (real <case>/run)" in text
    assert "FAILED: exit 2: <tmp>/...: cannot" in text and "cannot read <case>/x.yaml" in text
    assert str(tmp_path) not in text
