"""The benchmark code runs and reports what it says (no timing is asserted)."""

from __future__ import annotations

import torch

from presdep_tools.bench.readout import (
    matmul_flops,
    non_embedding_parameters,
    run_readout_benchmark,
)
from presdep_tools.bench.report import benchmarks_markdown
from presentation_dependence.records import Candidate, Query, RerankRequest


def test_non_embedding_parameters_excludes_tied_embeddings(tiny_model):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    total = sum(p.numel() for p in model.parameters())  # tied: the head is the embedding
    emb = model.get_input_embeddings().weight.numel()
    assert non_embedding_parameters(model) == total - emb


def test_matmul_flops_positive():
    assert matmul_flops(torch.float32, n=64, repeats=2) > 0


def test_benchmark_end_to_end_on_tiny_model(tiny_model):
    reqs = [
        RerankRequest(
            Query(f"q{q}", "what do fleas eat"),
            tuple(Candidate(f"d{i}", f"fleas eat blood number {i}", i + 1) for i in range(6)),
        )
        for q in range(2)
    ]
    res = run_readout_benchmark(reqs, model_name=tiny_model, dtypes=["float32"], chunk_size=6)
    d = res["by_dtype"]["float32"]
    assert d["listwise"]["forward_passes"] == 2 and d["pointwise"]["forward_passes"] == 12
    assert d["listwise"]["docs"] == d["pointwise"]["docs"] == 12
    assert d["listwise_over_pointwise_docs_per_second"] > 0
    assert 0 < d["forward"]["achieved_flops"] <= d["forward"]["achieved_flops_with_attention"]
    assert d["forward"]["max_score_diff_batched_vs_one_at_a_time"] < 1e-4
    o = d["rank_vs_forward"]
    assert len(o["rank_seconds"]) == len(o["forward_seconds"]) == o["reps"] == 3
    assert o["rank_over_forward_best"] > 0 and o["prompt_build_seconds"] >= 0
    md = benchmarks_markdown(
        {
            "readout": {**res, "by_dtype": {"float32": d}},
            "machine": "test",
            "time_utc": "t",
            "git": {"commit": "abc", "dirty": False},
            "data": "synthetic",
        }
    )
    assert "| float32 |" in md and "listwise ÷ pointwise" in md
    assert "Overhead outside the forward pass (float32)" in md
