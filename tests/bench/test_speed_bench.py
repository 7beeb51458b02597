"""The speed-lever benchmark runs end to end and reports what it says (no timing asserted)."""

from __future__ import annotations

import pytest

from presdep_tools.bench.report import speed_markdown
from presdep_tools.bench.speed import readout_speed_benchmark
from presentation_dependence.readout import speed
from presentation_dependence.records import Candidate, Query, RerankRequest


@pytest.mark.skipif(speed.cxx_compiler() is None, reason="compile on CPU needs a C++ compiler")
def test_speed_levers_on_the_tiny_model(tiny_model: str) -> None:
    reqs = [
        RerankRequest(
            Query(f"q{q}", "what do fleas eat"),
            tuple(
                Candidate(f"d{i}", f"fleas eat blood, says source {i} of {q}", i + 1)
                for i in range(6)
            ),
        )
        for q in range(2)
    ]
    res = readout_speed_benchmark(reqs, model_name=tiny_model, chunk_size=6, reps=2)
    rows = {r["lever"]: r for r in res["rows"]}
    assert {"reference", "eager", "optimised", "padding", "logits_to_keep", "threads"} <= set(rows)
    assert res["prompts"] == 2 and res["docs"] == 12
    assert rows["optimised"]["timed"] == 2 and rows["padding"]["timed"] == 1
    assert rows["reference"]["max_abs_de_vs_reference"] == 0.0
    # float32 rows are the same math as the reference; bfloat16 rows are not
    fp32 = [r for r in res["rows"] if r["dtype"] == "float32"]
    assert all(r["max_abs_de_vs_reference"] < 1e-4 for r in fp32)
    for r in res["rows"]:
        assert r["docs_per_second"] > 0
        assert 0 < r["fraction_of_matmul"] < r["fraction_of_matmul_with_attention"]
    assert rows["padding"]["padded_tokens"] >= res["tokens"]
    assert res["optimised_over_eager"] > 0 and res["first_compiled_pass_seconds"] > 0
    sp = res["shared_prefix"]
    assert 0 < sp["shared_prefix_tokens"] < min(sp["prompt_tokens"])
    ops = res["profile"]["optimised"]
    assert ops and abs(sum(o["share"] for o in ops)) <= 1.0 + 1e-9
    assert any("compiled graph" in o["op"] for o in ops)
    md = speed_markdown(res)
    assert "| **optimised** |" in md and "Shared prefix" in md and "Where the time goes" in md
