"""The prepared GPU check runs on CPU with a tiny config (what a lent GPU machine will run)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from presdep_tools.bench.gpu import gpu_markdown

pytest.importorskip("peft")

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "device" / "gpu_check.py"


def test_gpu_check_runs_on_cpu_with_a_tiny_config(tmp_path: Path) -> None:
    out = tmp_path / "check.json"
    args = ["--tiny", "--device", "cpu", "--dtype", "float32", "--matmul-n", "128"]
    args += ["--matmul-repeats", "2", "--prompts", "3", "--slots", "4", "--passage-tokens", "9"]
    args += ["--head-tokens", "12", "--steps", "1", "--presentations", "3", "--out", str(out)]
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    r = json.loads(out.read_text())
    assert r["architecture"] == "tiny qwen3" and r["non_embedding_parameters"] > 0
    assert r["readout"]["tokens_per_s"] > 0 and r["readout"]["fraction_of_matmul"] > 0
    assert r["oc_sft_step"]["tokens_per_s"] > 0
    # padded batch vs one prompt a pass: float32 on CPU agrees closely
    assert r["batched_vs_alone_max_abs_diff"] < 1e-3
    # three shuffles of one prompt: one length, so one batch without padding
    pres = r["presentations"]
    assert pres["m"] == 3 and pres["one_batch_prompts_per_s"] > 0
    assert pres["max_abs_diff"] < 1e-5
    # the block of docs/BENCHMARKS.md renders from such files
    (tmp_path / "gpu_check-tiny.json").write_text(out.read_text())
    text = gpu_markdown(tmp_path)
    assert "| tiny qwen3 | " in text and "gpu_check-tiny.json" in text


def test_the_gpu_block_needs_its_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"gpu_check\.sh"):
        gpu_markdown(tmp_path)


def test_gpu_check_takes_the_cpu_paths_switches(tmp_path: Path) -> None:
    out = tmp_path / "check.json"
    args = ["--tiny", "--device", "cpu", "--dtype", "float32", "--matmul-n", "128"]
    args += ["--matmul-repeats", "2", "--prompts", "2", "--slots", "3", "--passage-tokens", "9"]
    args += ["--head-tokens", "12", "--steps", "1", "--out", str(out)]
    args += ["--attn-implementation", "eager", "--compile"]
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    r = json.loads(out.read_text())
    assert r["attn_implementation"] == "eager" and r["compiled_layers"] is True
    assert r["readout"]["tokens_per_s"] > 0 and r["oc_sft_step"]["tokens_per_s"] > 0
    assert r["batched_vs_alone_max_abs_diff"] < 1e-3
