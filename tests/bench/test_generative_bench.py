"""The generative listwise rate on the tiny model."""

from __future__ import annotations

from presdep_tools.bench.generative import generative_listwise_rate
from presentation_dependence.records import Candidate, Query, RerankRequest


def test_generative_listwise_rate(tiny_model: str) -> None:
    import torch

    torch.set_num_threads(1)
    req = RerankRequest(
        Query("q1", "fleas"), tuple(Candidate(f"d{i}", f"text {i}", i + 1) for i in range(5))
    )
    out = generative_listwise_rate(
        [req],
        model_name=tiny_model,
        dtype="float32",
        window_size=4,
        stride=2,
        readout_docs_per_second=1e9,
    )
    assert out["documents"] == 5 and out["windows"] == 2
    assert out["generative_listwise_docs_per_second"] > 0
    assert out["goal_met"] is True and out["readout_over_generative"] > 3
