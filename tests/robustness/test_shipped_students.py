"""The students that ship (issue 35): each loads, its hash is checked, and it re-scores two
DL19 queries of its archived run exactly (on the archive's processor kind; within the
documented tolerance elsewhere), from the committed two-query fixture.

Parametrised over what is committed: ``students/`` and ``students/checks.yaml``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from presentation_dependence.errors import ConfigError
from presentation_dependence.readout.students import (
    STUDENTS_ENV,
    list_students,
    read_manifest,
    verify_student,
)
from presentation_dependence.robustness.verify import load_checks, run_check

REPO = Path(__file__).resolve().parents[2]
SHIPPED = sorted(p.parent.name for p in (REPO / "students").glob("*/student.json"))
CHECKS = load_checks(REPO / "students" / "checks.yaml")


@pytest.mark.parametrize("name", SHIPPED)
def test_each_shipped_student_is_listed_and_its_hash_checks(name, tmp_path, monkeypatch):
    monkeypatch.setenv(STUDENTS_ENV, str(REPO / "students"))
    assert name in list_students()
    student = verify_student(REPO / "students" / name)
    assert student.name == name and len(student.adapter_sha256) == 64
    assert (REPO / "students" / name / "README.md").read_text().count(student.adapter_sha256)
    tampered = tmp_path / name
    shutil.copytree(REPO / "students" / name, tampered)
    weights = tampered / "adapter_model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # one bit of the last weight
    weights.write_bytes(bytes(data))
    with pytest.raises(ConfigError, match="adapter files have sha256"):
        verify_student(tampered)


def test_every_shipped_student_has_a_re_score_check():
    assert sorted({c.student for c in CHECKS}) == sorted(
        read_manifest(REPO / "students" / n).name for n in SHIPPED
    )


@pytest.mark.integration
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.student)
def test_each_shipped_student_re_scores_its_archive(check, monkeypatch):
    monkeypatch.setenv(STUDENTS_ENV, str(REPO / "students"))
    result = run_check(check, REPO)
    assert result.scores > 0 and len(result.queries) == check.queries
    assert result.ok, result.line()
