"""Shipped students: export a trained tiny student, serve it by name, refuse what does not match.

``presdep student export`` casts the adapter to the smallest dtype within the tolerance, writes
the manifest and the card; ``reranker.adapter: NAME`` (and ``pd.shipped_student``) serve it after
checking the adapter's sha256 and the base's revision. The plain-peft snippet of
docs/STUDENTS.md loads the same model outside the toolkit.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import presentation_dependence as pd
from presentation_dependence.cli import main as presdep
from presentation_dependence.config.adhoc import reranker_block
from presentation_dependence.errors import ConfigError
from presentation_dependence.models.embedded import ResolvedModel
from presentation_dependence.readout.adapter import adapter_sha256
from presentation_dependence.readout.students import (
    MANIFEST,
    STUDENTS_ENV,
    read_manifest,
    verify_student,
)
from presentation_dependence.records import Query
from presentation_dependence.rerankers.grade import GradeRerankerOptions, clear_model_cache
from presentation_dependence.training.export import export_student
from presentation_dependence.training.trainer import train_student
from tests.training.conftest import NOVELEVAL, student_cfg

DOC = Path(__file__).resolve().parents[2] / "docs" / "STUDENTS.md"
NAME = "tiny-oc-sft"


@pytest.fixture(scope="module")
def trained(tiny_model, silver_file, silver, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("student") / "run"
    heldout = [
        {"dataloader_class": "FixtureLoader", "path": NOVELEVAL, "top_k": 5, "max_queries": 1}
    ]
    cfg = student_cfg(tiny_model, silver_file, out, splits={"heldout": heldout})
    train_student(cfg, silver=silver)
    return out


@pytest.fixture()
def students(trained, tmp_path, monkeypatch) -> Path:
    """A students folder holding the tiny student exported in bfloat16, on the lookup path."""
    root = tmp_path / "students"
    export_student(trained, NAME, dest_root=root, tolerance=10.0, check_queries=1)
    monkeypatch.setenv(STUDENTS_ENV, str(root))
    clear_model_cache()
    return root


def _scores(reranker, silver) -> list[float]:
    q = silver.queries[0]
    return [it.score for it in reranker.rank(Query(q.qid, q.query), list(q.candidates)).items]


def test_export_writes_a_checked_student(students, trained) -> None:
    folder = students / NAME
    assert {p.name for p in folder.iterdir()} == {
        "adapter_config.json",
        "adapter_model.safetensors",
        MANIFEST,
        "training_config.yaml",
        "README.md",
    }
    student = verify_student(folder)
    assert student.adapter_sha256 == adapter_sha256(folder)
    assert student.stored_dtype == "bfloat16"  # the first dtype tried, within tolerance 10
    assert set(student.dtype_check["max_abs_diff_expected_grade"]) == {"bfloat16"}
    assert student.training["steps"] == 2 and student.training["variant"] == "oc_sft"
    assert student.base_revision.startswith("files-sha256:")  # a local base: its files' hash
    config = json.loads((folder / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == student.base_model
    from safetensors.torch import load_file

    weights = load_file(str(folder / "adapter_model.safetensors"))
    assert {str(t.dtype) for t in weights.values()} == {"torch.bfloat16"}
    card = (folder / "README.md").read_text()
    assert student.adapter_sha256 in card and "<!-- student-results:start -->" in card


def test_tolerance_zero_keeps_float32(trained, tmp_path) -> None:
    student = export_student(trained, NAME, dest_root=tmp_path, tolerance=0.0, check_queries=1)
    tried = student.dtype_check["max_abs_diff_expected_grade"]
    assert student.stored_dtype == list(tried)[-1]
    assert tried[student.stored_dtype] == 0.0
    assert all(tried[d] > 0.0 for d in list(tried)[:-1])  # every smaller dtype moved E[g]


def test_served_by_name_equals_the_adapter_folder(students, silver, tiny_model) -> None:
    by_name = pd.shipped_student(NAME)
    assert by_name.options.adapter == NAME and by_name.options.adapter_path is None
    folder = students / NAME
    block = {**read_manifest(folder).serving}
    block.pop("adapter")
    by_path = pd.build_reranker(block.pop("reranker_class"), **block, adapter_path=str(folder))
    served = _scores(by_name, silver)
    assert served == _scores(by_path, silver)
    base = pd.build_reranker("GradeReranker", **{**block, "adapter_path": None})
    assert _scores(base, silver) != served
    assert by_name.describe()["student"] == NAME
    assert NAME in pd.list_students()


def test_a_changed_adapter_is_refused(students, silver) -> None:
    weights = students / NAME / "adapter_model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x01  # one bit of the last weight
    weights.write_bytes(bytes(data))
    with pytest.raises(ConfigError, match="sha256"):
        _scores(pd.shipped_student(NAME), silver)


def test_another_base_is_refused(students, silver) -> None:
    manifest = students / NAME / MANIFEST
    raw = json.loads(manifest.read_text())
    raw["base_revision"] = "files-sha256:" + "0" * 32
    manifest.write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match=r"trained on .* at revision"):
        _scores(pd.shipped_student(NAME), silver)


def test_base_fingerprint_follows_the_weights(tmp_path) -> None:
    folder = tmp_path / "base"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"a")
    (folder / "notes.txt").write_text("not a weight")
    resolved = ResolvedModel("m", str(folder), None, "local")
    first = resolved.fingerprint()
    (folder / "notes.txt").write_text("changed")
    assert resolved.fingerprint() == first
    (folder / "model.safetensors").write_bytes(b"b")
    assert resolved.fingerprint() != first
    assert ResolvedModel("m", str(folder), "rev1", "local").fingerprint() == "rev1"


def test_config_errors(students) -> None:
    serving = {
        k: v
        for k, v in read_manifest(students / NAME).serving.items()
        if k not in ("reranker_class", "adapter")
    }
    with pytest.raises(ConfigError, match="Did you mean 'tiny-oc-sft'"):
        GradeRerankerOptions(**serving, adapter="tiny-oc-sf")
    with pytest.raises(ConfigError, match="not both"):
        GradeRerankerOptions(**serving, adapter=NAME, adapter_path=str(students / NAME))
    with pytest.raises(ConfigError, match="trained with template 'pathc_grade_v1'") as e:
        GradeRerankerOptions(**{**serving, "template": "interleaved_grade_v1"}, adapter=NAME)
    assert e.value.key == "reranker.template"


def test_cli_lists_verifies_and_shows(students, capsys) -> None:
    assert presdep(["student", "list"]) == 0
    assert NAME in capsys.readouterr().out
    assert presdep(["student", "verify", NAME]) == 0
    assert "matches" in capsys.readouterr().out
    assert presdep(["student", "show", NAME]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == NAME
    (students / NAME / "adapter_config.json").write_text("{}")
    assert presdep(["student", "verify", NAME]) == 2


def test_plain_peft_snippet_loads_the_served_model(students, tiny_model) -> None:
    """docs/STUDENTS.md's snippet, its base lines swapped for the tiny model's folder."""
    import torch

    text = DOC.read_text(encoding="utf-8")
    marker = "<!-- plain-peft-example: run by tests/training/test_export.py -->"
    code = re.search(r"```python\n(.*?)```", text[text.index(marker) :], re.S).group(1)
    lines = code.splitlines()
    base_lines = [
        ln
        for ln in lines
        if ln.startswith(("wheel =", "gguf =", "path =", "tokenizer =", "base ="))
    ]
    assert len(base_lines) == 5  # the embedded base: the only lines the test replaces
    code = "\n".join(ln for ln in lines if ln not in base_lines).replace(
        "model = PeftModel",
        "base = AutoModelForCausalLM.from_pretrained(BASE_DIR, dtype=torch.float32)\nmodel = PeftModel",
    )
    ns: dict[str, object] = {"STUDENT": str(students / NAME), "BASE_DIR": tiny_model}
    exec(compile(code, str(DOC), "exec"), ns)
    reranker = pd.shipped_student(NAME)
    served = reranker._ensure_loaded()[0].model
    ids = torch.arange(5, 45).reshape(1, -1)
    with torch.no_grad():
        ours = served(input_ids=ids).logits
        theirs = ns["model"](input_ids=ids).logits
    torch.testing.assert_close(theirs, ours, rtol=0, atol=0)


def test_verify_against_archive_rescored_from_a_fixture(students, tmp_path, capsys) -> None:
    """A PSI run of the shipped student, archived, re-scored by `student verify
    --against-archive` from a fixture: exit 0; a changed archived score: exit 1."""
    import numpy as np
    import yaml

    from presentation_dependence.config import load_experiment_config
    from presentation_dependence.robustness.runner import PSIRunner
    from presentation_dependence.studies.archive import archive_summaries
    from tests.robustness.test_runner import make_fixture

    fixture = make_fixture(tmp_path / "fixture.jsonl")
    serving = read_manifest(students / NAME).serving
    config = tmp_path / "psi-student.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "reranker": dict(serving),
                "data": {"dataloader_class": "FixtureLoader", "path": str(fixture)},
                "robustness": {"num_presentations": 3, "bootstrap_resamples": 100},
            }
        )
    )
    PSIRunner(load_experiment_config(config), tmp_path / "run" / NAME).run()
    archive_summaries([tmp_path / "run" / NAME], tmp_path / "archive")
    checks = tmp_path / "checks.yaml"
    data = {"dataloader_class": "FixtureLoader", "path": str(fixture)}
    checks.write_text(
        yaml.safe_dump(
            {
                "checks": [
                    {"student": NAME, "archive": str(tmp_path / "archive" / NAME), "data": data}
                ]
            }
        )
    )
    argv = ["student", "verify", NAME, "--against-archive", "--checks", str(checks)]
    assert presdep(argv) == 0
    assert "max |Δ| 0 (identical required: ok)" in capsys.readouterr().out
    columnar = tmp_path / "archive" / NAME / "psi" / "grade_distributions.npz"
    with np.load(columnar) as z:
        cols = {k: z[k] for k in z.files}
    cols["score"] = cols["score"] + 1e-3
    np.savez_compressed(columnar, **cols)
    assert presdep(argv) == 1
    assert "FAILED" in capsys.readouterr().out


def test_rerank_selects_a_student_by_name(students) -> None:
    """``presdep rerank RUN --reranker NAME``: the student's serving block, its adapter by name
    (so the sha256 is checked at load)."""
    block = reranker_block(NAME)
    serving = read_manifest(students / NAME).serving
    assert block == {**{k: v for k, v in serving.items() if k != "adapter_path"}, "adapter": NAME}
