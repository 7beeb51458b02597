"""Requirement checks and the messages the Pyserini and ir_datasets commands stop with."""

from __future__ import annotations

import importlib.util
import os
import stat
from pathlib import Path
from types import ModuleType

import pytest

from presentation_dependence.data import irds as irds_mod
from presentation_dependence.data.irds import build_fixture_irds, irds_problems, irds_text
from presentation_dependence.firststage import pyserini as pyserini_mod
from presentation_dependence.firststage.pyserini import (
    PyseriniSpec,
    doc_text,
    fetch_pyserini_dataset,
    pyserini_problems,
)
from presentation_dependence.requirements import (
    MissingRequirementError,
    Problem,
    check_java,
    check_module,
    check_network,
    find_jdks,
    java_major_version,
    require,
)

REPO = Path(__file__).resolve().parents[2]


def _fake_jdk(root: Path, name: str, version: str) -> Path:
    home = root / name
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f"#!/bin/sh\necho 'openjdk version \"{version}\" 2025-01-01' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return home


@pytest.fixture
def jdks(tmp_path: Path) -> Path:
    root = tmp_path / "jvm"
    _fake_jdk(root, "jdk-17", "17.0.15")
    _fake_jdk(root, "jdk-21", "21.0.4")
    _fake_jdk(root, "jdk-8", "1.8.0_292")
    return root


def test_java_versions(jdks: Path) -> None:
    assert java_major_version(jdks / "jdk-17" / "bin" / "java") == 17
    assert java_major_version(jdks / "jdk-8" / "bin" / "java") == 8
    assert java_major_version(jdks / "nope" / "bin" / "java") is None
    assert [(h.name, v) for h, v in find_jdks([jdks])] == [
        ("jdk-21", 21),
        ("jdk-17", 17),
        ("jdk-8", 8),
    ]


def test_check_java_names_java_home_and_a_fix(jdks: Path) -> None:
    env = {"JAVA_HOME": str(jdks / "jdk-17"), "PATH": ""}
    p = check_java(21, env, jvm_roots=[jdks])
    assert p is not None and p.missing == "Java 21+ not found (JAVA_HOME)"
    assert "JAVA_HOME=" in p.detail and "Java 17" in p.detail
    assert f"export JAVA_HOME={jdks / 'jdk-21'}" in p.fix
    assert check_java(21, {"JAVA_HOME": str(jdks / "jdk-21")}, jvm_roots=[jdks]) is None
    # no JAVA_HOME and no java on PATH, no JDK anywhere
    p = check_java(21, {"PATH": str(jdks / "empty")}, jvm_roots=[])
    assert p is not None and "no 'java' on PATH" in p.detail and "install a Java 21+" in p.fix
    # no JAVA_HOME, java 17 on PATH
    p = check_java(21, {"PATH": str(jdks / "jdk-17" / "bin")}, jvm_roots=[])
    assert p is not None and "Java 17" in p.detail


def test_module_and_network_checks() -> None:
    p = check_module("surely_not_a_module_xyz", "pyserini")
    assert p is not None and p.missing == "surely_not_a_module_xyz not installed"
    assert ".[pyserini]" in p.fix
    assert check_module("json") is None
    p = check_network(["example.invalid"], probe=lambda h: False)
    assert p is not None and p.missing == "no network" and "example.invalid:443" in p.detail
    assert check_network(["example.org"], probe=lambda h: True) is None
    with pytest.raises(MissingRequirementError) as e:
        require("do it", [None, Problem("a missing", "why", "fix it")])
    assert str(e.value).startswith(
        "cannot do it; missing:"
    ) and "a missing: why. Fix: fix it" in str(e.value)
    require("do it", [None])  # nothing missing: no error


def _without_pyserini(monkeypatch: pytest.MonkeyPatch) -> None:
    real = pyserini_mod.check_module

    def fake(module: str, extra: str | None = None, pip_name: str | None = None) -> Problem | None:
        if module == "pyserini":
            return Problem("pyserini not installed", "not importable", "install the extra")
        return real(module, extra, pip_name)

    monkeypatch.setattr(pyserini_mod, "check_module", fake)


def test_pyserini_problems_name_all_three(
    monkeypatch: pytest.MonkeyPatch, jdks: Path, tmp_path: Path
) -> None:
    _without_pyserini(monkeypatch)
    env = {"PATH": str(jdks / "jdk-17" / "bin")}
    names = [
        p.missing
        for p in pyserini_problems("msmarco-v1-passage", environ=env, probe=lambda h: False)
    ]
    assert names == ["pyserini not installed", "Java 21+ not found (JAVA_HOME)", "no network"]
    # a local index folder needs no network; --assume-cached skips the check too
    local = tmp_path / "index"
    local.mkdir()
    assert "no network" not in [
        p.missing for p in pyserini_problems(str(local), environ=env, probe=lambda h: False)
    ]
    assert "no network" not in [
        p.missing
        for p in pyserini_problems("x", environ=env, probe=lambda h: False, assume_cached=True)
    ]


def test_fetch_stops_before_any_work(
    monkeypatch: pytest.MonkeyPatch, jdks: Path, tmp_path: Path
) -> None:
    _without_pyserini(monkeypatch)
    monkeypatch.setenv("PATH", str(jdks / "jdk-17" / "bin"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(pyserini_mod, "reachable", lambda host: False)
    spec = PyseriniSpec(
        "dl19", "msmarco-v1-passage", "dl19-passage", "dl19-passage", 0.82, 0.68, "x"
    )
    with pytest.raises(MissingRequirementError) as e:
        fetch_pyserini_dataset(spec, tmp_path / "out")
    text = str(e.value)
    for needle in ("pyserini not installed", "Java 21+ not found (JAVA_HOME)", "no network"):
        assert needle in text
    assert not (tmp_path / "out").exists()


def _script(rel: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(Path(rel).stem, REPO / rel)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_pyserini_scripts_exit_2_naming_what_is_missing(
    monkeypatch: pytest.MonkeyPatch, jdks: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _without_pyserini(monkeypatch)
    monkeypatch.setenv(
        "PATH", str(jdks / "jdk-17" / "bin") + os.pathsep + os.environ.get("PATH", "")
    )
    monkeypatch.setenv("JAVA_HOME", str(jdks / "jdk-17"))
    monkeypatch.setattr(pyserini_mod, "reachable", lambda host: False)
    monkeypatch.chdir(REPO)
    fetch = _script("scripts/data/fetch_pyserini_dataset.py")
    assert fetch.main(["dl19", "--out", str(tmp_path / "o")]) == 2
    assert (
        "pyserini not installed" in caplog.text and "Java 21+ not found (JAVA_HOME)" in caplog.text
    )
    assert "no network" in caplog.text and "rgw.cs.uwaterloo.ca" in caplog.text
    caplog.clear()
    build = _script("scripts/data/build_fixture_pyserini.py")
    args = [
        "--run",
        "r",
        "--index",
        "msmarco-v1-passage",
        "--topics",
        "t",
        "--out",
        str(tmp_path / "f"),
    ]
    assert build.main(args) == 2 and "pyserini not installed" in caplog.text
    caplog.clear()
    assert fetch.main(["not-a-collection"]) == 2 and "has no collection" in caplog.text


def test_irds_messages(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env = {"IR_DATASETS_HOME": str(tmp_path / "irds")}
    monkeypatch.setattr(
        irds_mod,
        "check_module",
        lambda m, e=None, p=None: Problem("ir_datasets not installed", "x", "install the extra"),
    )
    names = [
        p.missing for p in irds_problems("beir/scifact/test", environ=env, probe=lambda h: False)
    ]
    assert names == ["ir_datasets not installed", "no network"]
    (tmp_path / "irds" / "beir").mkdir(parents=True)  # a local copy: no network needed
    assert [
        p.missing for p in irds_problems("beir/scifact", environ=env, probe=lambda h: False)
    ] == ["ir_datasets not installed"]
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "elsewhere"))
    monkeypatch.setattr(irds_mod, "reachable", lambda host: False)
    with pytest.raises(MissingRequirementError, match="ir_datasets not installed"):
        build_fixture_irds("beir/scifact/test", tmp_path / "run.trec", tmp_path / "fx.jsonl")
    assert not (tmp_path / "fx.jsonl").exists()


def test_document_texts() -> None:
    assert doc_text('{"_id": "1", "title": "T", "text": "body"}') == "T body"
    assert doc_text('{"id": "7", "contents": " passage "}') == "passage"
    assert doc_text('{"passage": "v2 text", "spans": ""}') == "v2 text"
    assert doc_text("plain text") == "plain text" and doc_text(None) == ""

    class Doc:
        doc_id, title, text = "d", "Title", "Body"

    class Plain:
        doc_id, text = "d", " only body "

    assert irds_text(Doc()) == "Title Body" and irds_text(Plain()) == "only body"
