"""The CPU-evidence block: each committed probe file renders, its figures computed from raw numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from presdep_tools.bench.evidence import evidence_markdown

REPO = Path(__file__).resolve().parents[2]


def _probe(folder: Path, **body: object) -> None:
    head = {"commit": "0" * 40, "cpu": "test cpu", "dtype": "float32", "threads": 1}
    body = {**head, "what": "a probe", "conditions": "idle", **body}
    (folder / "probe.json").write_text(json.dumps(body), encoding="utf-8")


def test_attention_rows_are_ranked_and_relative_to_sdpa(tmp_path: Path) -> None:
    secs = {"sdpa_flash_is_causal": 0.5, "eager_matmul_softmax": 2.0, "sdpa_math": 1.0}
    _probe(tmp_path, kind="attention_kernels", causal_gflop=10.0, cpu_seconds=secs)
    rows = [line for line in evidence_markdown(tmp_path).splitlines() if line.startswith("| ")]
    assert rows[1:] == [
        "| sdpa flash is causal | 500 | 20.0 | 1.00× |  |",
        "| sdpa math | 1000 | 10.0 | 2.00× |  |",
        "| eager matmul softmax | 2000 | 5.0 | 4.00× |  |",
    ]


def test_an_unknown_kind_names_the_file(tmp_path: Path) -> None:
    _probe(tmp_path, kind="guess")
    with pytest.raises(ValueError, match=r"probe\.json: kind 'guess'"):
        evidence_markdown(tmp_path)


def test_every_committed_probe_renders() -> None:
    text = evidence_markdown(REPO / "docs" / "results" / "bench")
    assert text.count("**`") == len(list((REPO / "docs" / "results" / "bench").glob("*.json")))


def test_int8_row_computes_its_speed_up_from_the_raw_seconds(tmp_path: Path) -> None:
    result = {
        "prompt_tokens": [1000, 500],
        "cpu_seconds": {"float32": [3.0, 2.0], "int8_dynamic": [1.5, 1.0]},
        "per_prompt": [
            {"max_abs_delta_expected_grade": 0.25, "kendall_tau_float32_vs_int8": 0.5},
            {"max_abs_delta_expected_grade": 0.125, "kendall_tau_float32_vs_int8": 0.75},
        ],
    }
    _probe(tmp_path, kind="int8_dynamic", result=result)
    rows = [line for line in evidence_markdown(tmp_path).splitlines() if line.startswith("| ")]
    assert rows[1] == (
        "| 2 prompts (1,500 tokens), best of 2 | float32: 2.00 CPU s | int8 dynamic: 1.00 CPU s "
        "| 2.00× | 0.25, 0.12 | 0.50, 0.75 |"
    )


def _table_rows(folder: Path) -> list[str]:
    return [line for line in evidence_markdown(folder).splitlines() if line.startswith("| ")]


def test_training_steps_are_relative_to_the_first_setting(tmp_path: Path) -> None:
    def step(cpu: float) -> dict[str, float]:
        return {"user_seconds_per_step": cpu, "prompt_tokens": 2096}

    results = {"eager": [step(10.0), step(8.0)], "compiled": [step(5.0), step(4.0)]}
    _probe(tmp_path, kind="training_step_compiled", results=results)
    rows = _table_rows(tmp_path)
    assert rows[0].startswith("| decoder layers, bfloat16 (OC-SFT step, two views) |")
    assert rows[0].endswith("| speed-up over eager (best) |")
    assert rows[1:] == [
        "| eager | 2,096 | 10.00, 8.00 | 1.00× |",
        "| compiled | 2,096 | 5.00, 4.00 | 2.00× |",
    ]


def test_forward_account_derives_shares_and_the_ceiling(tmp_path: Path) -> None:
    # 2·N·T = 2·500·1000 FLOP at 1e-3 GFLOP/s: 1 s of linear work at the matmul rate, so
    # 1/4 of the 4 s forward, and 1 / (1 + 2 layers · 0.25 s of exponentials) = 0.67.
    r = {
        "tokens": 1000,
        "layers": 2,
        "non_embedding_parameters": 500,
        "matmul_gflops": 1e-3,
        "forward_cpu_seconds_best_of_3": 4.0,
        "profile_self_cpu_seconds": 8.0,
        "profile_attention_seconds": 2.0,
        "profile_linear_seconds": 4.0,
        "kernel_seconds_per_layer": 0.5,
        "exp_seconds_per_layer": 0.25,
        "attention_matmuls_seconds_per_layer": 0.75,
    }
    _probe(tmp_path, kind="forward_account", results={"bfloat16": r})
    assert _table_rows(tmp_path)[1] == (
        "| bfloat16, 1,000 tokens | 4.00 | 0.25 | 50% / 25% / 25% | 500.0 | 250.0 (50%) "
        "| 750.0 | 0.67 |"
    )


def test_judge_steps_leave_out_the_first_step_and_need_the_same_items(tmp_path: Path) -> None:
    def run(*cpu: float) -> list[dict[str, float]]:
        return [
            {"step": i + 1, "tokens": 100 + i, "cpu_s": c, "s_per_step": c}
            for i, c in enumerate(cpu)
        ]

    results = {"float32": run(5.0, 4.0, 2.0), "bfloat16": run(50.0, 1.0, 2.0)}
    _probe(tmp_path, kind="judge_step_by_dtype", results=results)
    rows = [line for line in evidence_markdown(tmp_path).splitlines() if line.startswith("| ")]
    assert rows[1:] == [
        "| float32 | 2 (203) | 5.0 | 6.0 | 3.00 | 1.00× |",
        "| bfloat16 | 2 (203) | 50.0 | 3.0 | 1.50 | 2.00× |",
    ]
    results["bfloat16"][2]["tokens"] = 7
    _probe(tmp_path, kind="judge_step_by_dtype", results=results)
    with pytest.raises(ValueError, match="same items"):
        evidence_markdown(tmp_path)
