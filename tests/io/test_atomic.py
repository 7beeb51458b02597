"""Atomic writes: parents created, no temp files left, the old file kept when a write fails."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from presentation_dependence.io import atomic
from presentation_dependence.io.atomic import atomic_write_bytes, atomic_write_text


def test_writes_and_creates_parents(tmp_path: Path) -> None:
    path = atomic_write_text(tmp_path / "a" / "b" / "f.txt", "héllo\n")
    assert path.read_text(encoding="utf-8") == "héllo\n"
    atomic_write_bytes(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in path.parent.iterdir()) == ["f.txt"]
    assert path.stat().st_mode & 0o777 == 0o666 & ~atomic._UMASK


def test_failed_write_keeps_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = atomic_write_text(tmp_path / "f.txt", "old")

    def boom(fd: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_text(path, "new")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]
