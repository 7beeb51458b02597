"""The study-step benchmark (issue 39) runs on the tiny model and renders its row."""

from __future__ import annotations

import random

from presdep_tools.bench.report import psi_step_markdown
from presdep_tools.bench.study_steps import psi_step_benchmark
from presentation_dependence.records import Candidate, Query, RerankRequest

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
    r = psi_step_benchmark([req], model_name=tiny_model, m=4, null_repeats=1, dtype="float32")
    assert r["presentations"] == 6 and r["shuffles"] == 4
    for part in ("one_a_pass", "batched"):
        assert r[part]["wall_seconds"] > 0 and r[part]["prompt_tokens"] > 0
    assert r["one_a_pass"]["prompt_tokens"] == r["batched"]["prompt_tokens"]
    assert r["batched"]["forward_passes"] < r["one_a_pass"]["forward_passes"] == 6
    assert r["max_abs_score_diff"] == 0.0  # unpadded: the one-a-pass scores, bit for bit
    text = psi_step_markdown(r)
    assert "| presentation_batch 11 |" in text and "max |Δscore| 0" in text
