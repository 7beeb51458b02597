"""``dtype: auto`` resolves once per run folder: a folder resumed on a processor where ``auto``
means another dtype keeps the dtype its first scoring command used (runners/command.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from presentation_dependence.config import load_experiment_config
from presentation_dependence.readout import backend
from presentation_dependence.rerankers.grade_options import GradeRerankerOptions
from presentation_dependence.robustness.runner import PSIRunner
from presentation_dependence.runners.command import pin_auto_dtype
from presentation_dependence.runners.readback import read_provenance, recorded_dtype
from presentation_dependence.runners.run_folder import RunFolder
from tests.robustness.test_runner import make_fixture, write_config


def _psi(cfg_path: Path, run: Path, shard: tuple[int, int] | None) -> None:
    PSIRunner(load_experiment_config(cfg_path), run, shard=shard).run()


def _scores(run: Path) -> dict[str, np.ndarray]:
    out = {}
    for f in sorted((run / "psi" / "per_query").glob("*.npz")):
        with np.load(f) as z:
            floats = [z[k].ravel() for k in sorted(z.files) if z[k].dtype.kind == "f"]
            out[f.stem] = np.concatenate(floats)
    return out


def test_a_resume_where_auto_means_another_dtype_keeps_the_folders(
    tmp_path: Path, tiny_model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_fixture(tmp_path / "fixture.jsonl", n_queries=4)
    cfg = write_config(tmp_path, tiny_model, "GradeReranker", dtype="auto", chunk_size=6)
    # Begun on a CPU where auto is float32 (AVX2 only): half the queries.
    monkeypatch.setattr(backend, "cpu_default_dtype", lambda: "float32")
    _psi(cfg, tmp_path / "run", (1, 2))
    assert recorded_dtype(tmp_path / "run") == "float32"
    # Resumed on one where auto is bfloat16 (AMX): the rest, still in float32.
    monkeypatch.setattr(backend, "cpu_default_dtype", lambda: "bfloat16")
    _psi(cfg, tmp_path / "run", None)
    dtypes = [inv["reranker"]["dtype"] for inv in read_provenance(tmp_path / "run").invocations]
    assert dtypes == ["float32", "float32"]
    # ... so it scores exactly as a folder run in float32 from the start; a new folder on the
    # second processor resolves auto afresh (bfloat16) and differs.
    monkeypatch.setattr(backend, "cpu_default_dtype", lambda: "float32")
    _psi(cfg, tmp_path / "whole-f32", None)
    monkeypatch.setattr(backend, "cpu_default_dtype", lambda: "bfloat16")
    _psi(cfg, tmp_path / "new-bf16", None)
    resumed, whole = _scores(tmp_path / "run"), _scores(tmp_path / "whole-f32")
    assert resumed.keys() == whole.keys() and len(resumed) == 4
    assert all(np.array_equal(resumed[q], whole[q]) for q in whole)
    assert recorded_dtype(tmp_path / "new-bf16") == "bfloat16"
    bf16 = _scores(tmp_path / "new-bf16")
    assert any(not np.array_equal(bf16[q], whole[q]) for q in whole)


def test_an_explicit_dtype_and_a_new_folder_are_left_alone(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run")
    auto = GradeRerankerOptions(dtype="auto")
    assert pin_auto_dtype(auto, folder) is auto  # nothing scored yet: auto resolves here
    folder.path.mkdir(parents=True)
    record = {
        "invocations": [{"phase": "eval"}, {"phase": "run", "reranker": {"dtype": "float32"}}]
    }
    (folder.path / "provenance.json").write_text(json.dumps(record), "utf-8")
    assert pin_auto_dtype(auto, folder).dtype == "float32"
    explicit = GradeRerankerOptions(dtype="bfloat16")
    assert pin_auto_dtype(explicit, folder) is explicit
