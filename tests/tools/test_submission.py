"""The submission weigher counts what the workplace's diff limit counts (tools/presdep_tools/submission.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from presdep_tools.submission import checkout_base, over_limits, weigh

ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=ENV
    ).stdout.strip()


def _commit(repo: Path, message: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    _git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "README.md").write_text("hello\n")
    return tmp_path, _commit(tmp_path, "base")


def test_a_binary_added_then_removed_counts_twice_and_text_counts_its_diff(
    repo: tuple[Path, str],
) -> None:
    root, base = repo
    blob = os.urandom(50_000) + b"\0"  # a NUL byte: git treats it as binary
    (root / "ckpt.bin").write_bytes(blob)
    (root / "notes.txt").write_text("a\n" * 100)
    _commit(root, "add")
    (root / "ckpt.bin").unlink()
    (root / "notes.txt").write_text("a\n" * 100 + "b\n")
    _commit(root, "remove the checkpoint, append a line")

    weight = weigh(root, base)

    assert weight.commits == 2
    binary = [c for c in weight.changes if c.path == "ckpt.bin"]
    assert [(c.status, c.binary, c.diff_bytes) for c in binary] == [
        ("A", True, len(blob)),
        ("D", True, len(blob)),
    ]
    text = [c for c in weight.changes if c.path == "notes.txt"]
    assert [c.status for c in text] == ["A", "M"]
    assert all(not c.binary for c in text)
    # the appended line's diff is far smaller than the file; the added file's diff carries it whole
    assert text[1].diff_bytes < text[0].diff_bytes
    assert text[0].diff_bytes > 200
    # the random blob does not compress: the pack carries it once
    assert len(blob) < weight.pack_bytes < 2 * len(blob)
    assert weight.diff_bytes == sum(c.diff_bytes for c in weight.changes) > 2 * len(blob)


def test_the_base_defaults_to_where_main_was_created_and_the_margin_fails(
    repo: tuple[Path, str],
) -> None:
    root, base = repo
    (root / "x.txt").write_text("x\n")
    _commit(root, "one more")
    assert checkout_base(root) == base
    weight = weigh(root, checkout_base(root))
    assert weight.commits == 1
    assert over_limits(weight, 0.75) == []
    assert over_limits(weight, 0.0) == ["packed", "diffs"]
