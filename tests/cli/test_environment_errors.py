"""Issue 38 (16): errors of the machine (read-only or full disk, a file too large, a file where a
folder is meant) and damaged files (a truncated safetensors file, a cut pickle) exit 2 naming
the path and a fix; a bug still exits 3."""

from __future__ import annotations

import errno
import os
import pickle
from pathlib import Path

import pytest
import torch
import yaml

import presentation_dependence.io.atomic as atomic
import presentation_dependence.runners as runners
from presentation_dependence.cli import EXIT_INTERNAL_ERROR, EXIT_USER_ERROR, main
from presentation_dependence.data.smoke import build_smoke_fixture


@pytest.fixture()
def cfg(tmp_path: Path) -> Path:
    fixture = build_smoke_fixture(tmp_path / "data")
    path = tmp_path / "identity.yaml"
    body = {
        "reranker": {"reranker_class": "IdentityReranker"},
        "data": {"dataloader_class": "FixtureLoader", "path": str(fixture), "top_k": 6},
    }
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return path


def test_run_dir_that_is_a_file(cfg: Path, tmp_path: Path, caplog) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert main(["run", str(cfg), "--run-dir", str(afile)]) == EXIT_USER_ERROR
    assert f"{afile}. Fix: give a path that is a folder" in caplog.text
    assert "internal error" not in caplog.text
    caplog.clear()
    assert main(["psi", str(cfg), "--run-dir", str(afile / "sub")]) == EXIT_USER_ERROR
    assert "is a file, not a folder" in caplog.text and str(afile / "sub") in caplog.text


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (errno.ENOSPC, "the disk is full"),
        (errno.EFBIG, "ulimit -f"),
        (errno.EROFS, "read-only"),
        (errno.EDQUOT, "quota"),
    ],
)
def test_a_write_the_machine_refuses(
    cfg: Path, tmp_path: Path, caplog, monkeypatch, code: int, words: str
) -> None:
    def refuse(fd: int) -> None:  # the data write itself fails (names no file)
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(atomic.os, "fsync", refuse)
    run = tmp_path / "run"
    assert main(["run", str(cfg), "--run-dir", str(run)]) == EXIT_USER_ERROR
    line = next(x for x in caplog.text.splitlines() if "environment error" in x)
    assert words in line and f"{run}{os.sep}" in line and "Fix:" in line
    assert "internal error" not in caplog.text


def _fails_with(monkeypatch, fn) -> None:
    def evaluate(self):
        fn()

    monkeypatch.setattr(runners.EvalManager, "evaluate", evaluate)


def test_a_cut_pickle_is_an_input_error_naming_it(tmp_path: Path, caplog, monkeypatch) -> None:
    whole = pickle.dumps({"state": list(range(100))})
    optimizer = tmp_path / "checkpoint-4" / "optimizer.pt"
    optimizer.parent.mkdir()
    optimizer.write_bytes(whole[: len(whole) // 2])
    _fails_with(monkeypatch, lambda: torch.load(str(optimizer), weights_only=False))
    (tmp_path / "r").mkdir()
    assert main(["eval", "--run-dir", str(tmp_path / "r")]) == EXIT_USER_ERROR
    assert f"input error: {optimizer} cannot be read (UnpicklingError" in caplog.text
    assert "truncated or corrupt" in caplog.text and "Fix:" in caplog.text


def test_a_truncated_safetensors_file_is_an_input_error(tmp_path: Path, caplog, monkeypatch):
    from safetensors.torch import load_file, save_file

    weights = tmp_path / "adapter_model.safetensors"
    save_file({"w": torch.zeros(64)}, str(weights))
    weights.write_bytes(weights.read_bytes()[:40])
    _fails_with(monkeypatch, lambda: load_file(str(weights)))
    (tmp_path / "r").mkdir()
    assert main(["eval", "--run-dir", str(tmp_path / "r")]) == EXIT_USER_ERROR
    assert f"input error: {weights} cannot be read (SafetensorError" in caplog.text


@pytest.mark.parametrize(
    "bug",
    [RuntimeError("an internal bug"), ValueError("bad"), OSError("no errno"), EOFError()],
)
def test_bugs_stay_internal_errors(tmp_path: Path, caplog, monkeypatch, bug) -> None:
    def raise_it() -> None:
        raise bug

    _fails_with(monkeypatch, raise_it)
    (tmp_path / "r").mkdir()
    assert main(["eval", "--run-dir", str(tmp_path / "r")]) == EXIT_INTERNAL_ERROR
    assert "internal error" in caplog.text


def test_a_truncated_served_adapter(tmp_path: Path, tiny_model: str, caplog) -> None:
    peft = pytest.importorskip("peft")
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    lora = peft.get_peft_model(
        model, peft.LoraConfig(r=2, target_modules=["q_proj"], task_type="CAUSAL_LM")
    )
    adapter = tmp_path / "adapter"
    lora.save_pretrained(str(adapter))
    weights = adapter / "adapter_model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    fixture = build_smoke_fixture(tmp_path / "data")
    cfg = tmp_path / "student.yaml"
    body = {
        "reranker": {
            "reranker_class": "GradeReranker",
            "model_name": tiny_model,
            "device": "cpu",
            "dtype": "float32",
            "adapter_path": str(adapter),
        },
        "data": {"dataloader_class": "FixtureLoader", "path": str(fixture), "top_k": 4},
    }
    cfg.write_text(yaml.safe_dump(body), encoding="utf-8")
    assert main(["run", str(cfg), "--run-dir", str(tmp_path / "run")]) == EXIT_USER_ERROR
    assert f"input error: {weights} cannot be read" in caplog.text
