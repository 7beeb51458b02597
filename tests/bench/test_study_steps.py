"""The study-step benchmark (issue 39) runs on the tiny model and renders its row."""

from __future__ import annotations

import random

import pytest

from presdep_tools.bench.report import psi_step_markdown, study_training_markdown
from presdep_tools.bench.study_steps import psi_step_benchmark, stage_clock, training_step_paths
from presentation_dependence.records import Candidate, Query, RerankRequest
from presentation_dependence.rerankers.grade import GradeReranker, GradeRerankerOptions

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
]


def test_psi_step_benchmark_on_the_tiny_model(tiny_model: str) -> None:
    rng = random.Random(0)
    cands = [
        Candidate(f"d{i}", " ".join(rng.choices(WORDS, k=rng.randint(4, 12))), rank=i + 1)
        for i in range(20)
    ]
    req = RerankRequest(Query("q1", "which letter"), tuple(cands))
    paths = {
        "float32 (today)": {"dtype": "float32"},
        "float32, presentation_batch 11": {"dtype": "float32", "presentation_batch": 11},
        "bfloat16": {"dtype": "bfloat16"},
    }
    r = psi_step_benchmark([req], model_name=tiny_model, m=4, null_repeats=1, paths=paths)
    assert r["presentations"] == 6 and r["shuffles"] == 4 and list(r["paths"]) == list(paths)
    today, batched, bf16 = r["paths"].values()
    for p in (today, batched, bf16):
        assert p["wall_seconds"] > 0 and p["cpu_seconds"] > 0
        assert p["prompt_tokens"] == today["prompt_tokens"] > 0
        assert p["cpu_speedup"] == pytest.approx(today["cpu_seconds"] / p["cpu_seconds"])
    assert today["cpu_speedup"] == 1.0 and today["max_abs_score_diff"] == 0.0
    assert batched["forward_passes"] < today["forward_passes"] == 6
    assert batched["max_abs_score_diff"] == 0.0  # unpadded: the one-a-pass scores, bit for bit
    assert bf16["dtype"] == "bfloat16" and 0 < bf16["max_abs_score_diff"] < 1
    for p in (today, batched, bf16):  # the wall time accounted for, stage by stage
        st = p["stages"]
        assert st["prompts_seconds"] > 0 and st["forward_seconds"] > 0
        parts = st["prompts_seconds"] + st["forward_seconds"] + st["rest_seconds"]
        assert parts == pytest.approx(p["wall_seconds"])
        assert st["forward_seconds"] < p["wall_seconds"]
    text = psi_step_markdown(r)
    name = "float32, presentation_batch 11"
    share = batched["stages"]["forward_seconds"] / batched["wall_seconds"]
    total = sum(batched["stages"].values())
    assert f"| {name} | {total:.2f} | " in text and f"({share:.0%})" in text
    assert "| float32, presentation_batch 11 | float32 |" in text
    assert "**1.00×** (missed)" in text  # today's path against itself, goal ≥ 2


def test_training_step_paths_on_the_tiny_model(tiny_model: str) -> None:
    paths = {"float32 (today)": ("float32", False), "bfloat16": ("bfloat16", False)}
    r = training_step_paths(
        tiny_model, paths=paths, isolate=False, repeats=1, num_candidates=4, lora_r=4
    )
    assert (r["num_candidates"], r["lora_r"], r["threads"]) == (4, 4, 1)
    today, bf16 = r["paths"].values()
    assert today["dtype"] == "float32" and bf16["dtype"] == "bfloat16"
    assert today["views"] == bf16["views"] == 2 and today["prompt_tokens"] == bf16["prompt_tokens"]
    assert bf16["cpu_speedup"] == pytest.approx(
        today["user_seconds_per_step"] / bf16["user_seconds_per_step"]
    )
    for p in (today, bf16):  # every phase of a timed step measured, none longer than the step
        phases = p["phase_seconds_median"]
        assert list(phases) == ["forward", "backward", "optimizer"]
        assert all(v > 0 for v in phases.values())
        assert max(phases.values()) <= max(p["step_seconds"])
    text = study_training_markdown(r)
    assert "| float32 (today) |" in text and "| bfloat16 |" in text
    back = today["phase_seconds_median"]["backward"]
    share = back / sum(today["phase_seconds_median"].values())
    assert f"{back:.2f} ({share:.0%})" in text


def test_the_stage_clock_leaves_the_reranker_as_it_was(tiny_model: str) -> None:
    reranker = GradeReranker(GradeRerankerOptions(model_name=tiny_model))
    backend, _ = reranker._ensure_loaded()
    with stage_clock(reranker) as spent:
        assert "_prompts" in vars(reranker) and "grade_probs" in vars(backend)
        reranker.rank(Query("q", "which letter"), [Candidate("d0", "alpha beta", rank=1)])
    assert spent["prompts"] > 0 and spent["forward"] > 0
    assert "_prompts" not in vars(reranker) and "grade_probs" not in vars(backend)


def test_a_probe_of_the_study_steps_renders_as_evidence(tiny_model: str, tmp_path) -> None:
    import json

    from presdep_tools.bench.evidence import evidence_markdown
    from presdep_tools.bench.study_steps import PSI_PATHS, study_steps_probe

    cands = tuple(Candidate(f"d{i}", f"{WORDS[i % 11]} text {i}", rank=i + 1) for i in range(4))
    req = RerankRequest(Query("q1", "which letter"), cands)
    today = next(iter(PSI_PATHS))
    probe = study_steps_probe(
        [req],
        model_name=tiny_model,
        psi_paths=[today],
        train_paths=[],
        conditions="a test",
        script="print()",
    )
    assert probe["kind"] == "study_steps" and probe["dtype"] == "float32"
    psi = probe["results"]["psi"]
    assert list(psi["paths"]) == [today] and probe["results"]["training"] is None
    (tmp_path / "probe.json").write_text(json.dumps(probe))
    text = evidence_markdown(tmp_path)
    wall = psi["paths"][today]["wall_seconds"]
    assert f"| {today} | float32 | {wall:.1f} |" in text and "prompt building" in text
    with pytest.raises(ValueError, match="is not one of"):
        study_steps_probe(
            [req],
            model_name=tiny_model,
            psi_paths=["fast"],
            train_paths=[],
            conditions="",
            script="",
        )
