"""Render benchmark results (``bench/results.json``) as ``docs/BENCHMARKS.md``."""

from __future__ import annotations

from typing import Any

__all__ = ["benchmarks_markdown"]


def _g(x: float) -> str:
    return f"{x / 1e9:.1f}"


def benchmarks_markdown(res: dict[str, Any]) -> str:
    r = res["readout"]
    lines = [
        "# Benchmarks",
        "",
        "Written by `uv run poe bench` (`scripts/bench.py`) from the numbers it measured in one "
        f"run; raw results in `bench/results.json`. Machine: {res['machine']}. "
        f"Measured {res['time_utc']} at commit `{res['git'].get('commit')}` "
        f"(dirty: {res['git'].get('dirty')}). Absolute times vary between machines and runs; "
        "quote the ratios.",
        "",
        "## Expected-grade readout: listwise B=20 against pointwise B=1",
        "",
        f"Model `{r['model_name']}`, {r['threads']} threads, {r['queries']} queries × "
        f"{r['docs'] // max(r['queries'], 1)} documents from {res['data']} "
        f"({r['docs']} documents). Both readouts score the same documents end to end through "
        "`rank()` (prompt building included). Achieved FLOP/s = 2 × non-embedding parameters × "
        "prompt tokens / forward time (attention FLOPs not counted), against a 1024³ dense matmul "
        "in the same dtype, same run.",
        "",
        "| dtype | listwise docs/s | pointwise docs/s | listwise ÷ pointwise (goal ≥ 1.5) "
        "| matmul GFLOP/s | readout GFLOP/s | readout ÷ matmul (goal ≥ 0.60) "
        "| max \\|Δscore\\| batched vs one-at-a-time |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for dtype, d in r["by_dtype"].items():
        fw = d["forward"]
        lines.append(
            f"| {dtype} | {d['listwise']['docs_per_second']:.2f} "
            f"| {d['pointwise']['docs_per_second']:.2f} "
            f"| **{d['listwise_over_pointwise_docs_per_second']:.2f}×** "
            f"| {_g(d['matmul_flops'])} | {_g(fw['achieved_flops'])} "
            f"| **{d['achieved_over_matmul']:.2f}** "
            f"| {fw['max_score_diff_batched_vs_one_at_a_time']:.2e} "
            f"({fw['batched_prompts_per_pass']} prompts per pass) |"
        )
    lines += [
        "",
        "Tokens per run: "
        + "; ".join(
            f"{dt}: listwise {d['listwise']['prompt_tokens']} tokens in "
            f"{d['listwise']['forward_passes']} passes, pointwise {d['pointwise']['prompt_tokens']} "
            f"tokens in {d['pointwise']['forward_passes']} passes"
            for dt, d in r["by_dtype"].items()
        )
        + f". Non-embedding parameters: {next(iter(r['by_dtype'].values()))['forward']['non_embedding_parameters']:,}.",
    ]
    lines += [
        "",
        "Counting causal attention's own matmuls too (2·layers·hidden·T² per prompt, not in the "
        "goal's formula): "
        + "; ".join(
            f"{dt} {_g(d['forward']['achieved_flops_with_attention'])} GFLOP/s = "
            f"{d['forward']['achieved_flops_with_attention'] / d['matmul_flops']:.2f} of matmul"
            for dt, d in r["by_dtype"].items()
            if "achieved_flops_with_attention" in d["forward"]
        )
        + ".",
    ]
    if "max_score_diff_bfloat16_vs_float32" in r:
        fp = r["by_dtype"]["float32"]["listwise"]["seconds"]
        bf = r["by_dtype"]["bfloat16"]["listwise"]["seconds"]
        lines += [
            "",
            f"bfloat16 against float32 (listwise, same documents): {fp / bf:.2f}× the speed, "
            f"largest expected-grade difference {r['max_score_diff_bfloat16_vs_float32']:.3f} "
            "on the 0–3 scale.",
        ]
    return "\n".join(lines) + "\n"
