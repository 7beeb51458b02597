"""Measured blocks between <!-- NAME:start/end --> markers (report/markers.py)."""

from __future__ import annotations

import pytest

from presentation_dependence.errors import ConfigError
from presentation_dependence.report.markers import markers, splice, splice_file


def test_splice_replaces_only_the_block(tmp_path):
    start, end = markers("study-table")
    doc = tmp_path / "doc.md"
    doc.write_text(f"intro\n{start}\nold table\n{end}\noutro\n")
    splice_file(doc, "study-table", "| new |\n")
    assert doc.read_text() == f"intro\n{start}\n| new |\n{end}\noutro\n"
    splice_file(doc, "study-table", "| newer |")  # idempotent shape
    assert doc.read_text().count(start) == 1 and "| new |" not in doc.read_text()


def test_splice_refuses_missing_or_doubled_markers(tmp_path):
    start, end = markers("x")
    with pytest.raises(ValueError, match="needs one"):
        splice(f"{start}\n{start}\n{end}", "b", start, end)
    with pytest.raises(ValueError, match="needs one"):
        splice(f"{end}\n{start}", "b", start, end)
    doc = tmp_path / "doc.md"
    doc.write_text("no markers\n")
    with pytest.raises(ConfigError, match=r"doc\.md.*add the two marker lines"):
        splice_file(doc, "x", "b")
    assert doc.read_text() == "no markers\n"
