"""Reading a run folder back: its config through the family's loader, the run's invocation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from presentation_dependence.config import ExperimentConfig
from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.runners.readback import (
    Provenance,
    folder_config,
    read_provenance,
    recorded_cpus,
)
from presentation_dependence.runners.run_folder import RunFolder


def _invocation(phase: str, commit: str, **extra: object) -> dict[str, object]:
    return {"phase": phase, "git": {"commit": commit, "dirty": False}, **extra}


def test_the_run_invocation_is_the_last_run_not_the_first(tmp_path: Path) -> None:
    # A run stopped at commit a, resumed and finished at commit b, then evaluated at commit c:
    # the outputs are b's, so every summary of the folder names b.
    records = [
        _invocation("run", "a", reranker={"model_name": "m", "revision": "r1"}),
        _invocation("run", "b", reranker={"model_name": "m", "revision": "r2"}),
        _invocation("eval", "c"),
    ]
    (tmp_path / "provenance.json").write_text(json.dumps({"invocations": records}), "utf-8")
    prov = read_provenance(tmp_path)
    assert prov.run_invocation()["reranker"] == {"model_name": "m", "revision": "r2"}
    assert prov.commit == "b"
    assert [inv["git"]["commit"] for inv in prov.phase("run")] == ["a", "b"]


def test_without_a_run_invocation_the_last_one_and_without_a_file_none(tmp_path: Path) -> None:
    flat = {"phase": "psi-runs", "git": {"commit": "z"}}  # an old flat record
    (tmp_path / "provenance.json").write_text(json.dumps(flat), "utf-8")
    assert read_provenance(tmp_path).commit == "z"
    assert read_provenance(tmp_path / "absent") == Provenance()
    assert Provenance().run_invocation() == {} and Provenance().commit is None


def test_folder_config_through_the_family_loader(tmp_path: Path) -> None:
    cfg = ExperimentConfig(id="demo", seed=3)
    RunFolder(tmp_path).freeze_config(cfg)
    assert folder_config(tmp_path).to_yaml() == cfg.to_yaml()
    seen: list[tuple[str, int]] = []
    got = folder_config(tmp_path, lambda raw, cid: seen.append((cid, raw["seed"])) or "typed")
    assert got == "typed" and seen == [("demo", 3)]
    with pytest.raises(ConfigError, match="not a run folder"):
        folder_config(tmp_path / "empty")
    (tmp_path / "resolved_config.yaml").write_text("- a list\n", "utf-8")
    with pytest.raises(PresdepError, match="not a YAML mapping"):
        folder_config(tmp_path)


def test_a_row_scored_on_a_gpu_is_labelled_by_the_gpu_not_its_host(tmp_path):
    """A run whose reranker ran on cuda (scripts/device/zero_shot_pass.sh) scored on the GPU:
    its label names the GPU (``accelerator``), its host CPU only in brackets; the evaluation
    command, which scores nothing, adds no processor."""
    xeon = {"model": "Intel Xeon", "flags": ["amx_bf16"]}
    gpu = {"device": "cuda", "accelerator": "NVIDIA H200"}
    record = {
        "invocations": [
            {"command": ["presdep"], "cpu": xeon, "phase": "run", "reranker": gpu},
            {"command": ["presdep"], "cpu": xeon, "phase": "eval"},
            {"command": ["presdep"], "cpu": xeon, "phase": "psi", "reranker": {"device": "cuda"}},
        ]
    }
    (tmp_path / "provenance.json").write_text(json.dumps(record))
    assert recorded_cpus(tmp_path) == [
        "GPU NVIDIA H200 (cuda; host Intel Xeon [amx_bf16])",
        "GPU model not recorded (cuda; host Intel Xeon [amx_bf16])",
    ]
    cpu_only = {"invocations": [{"command": ["presdep"], "cpu": xeon, "phase": "eval"}]}
    (tmp_path / "provenance.json").write_text(json.dumps(cpu_only))
    assert recorded_cpus(tmp_path) == ["Intel Xeon [amx_bf16]"]
