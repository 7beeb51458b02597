"""Render benchmark results (``docs/results/bench-run.json``) as ``docs/BENCHMARKS.md``."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from presentation_dependence.io.markdown import markdown_table

__all__ = [
    "benchmarks_markdown",
    "full_markdown",
    "profile_table",
    "psi_step_markdown",
    "speed_markdown",
    "study_training_markdown",
    "training_benchmark_markdown",
]


def _g(x: float) -> str:
    return f"{x / 1e9:.1f}"


def _dtype_table(by_dtype: dict[str, Any]) -> list[str]:
    """Listwise against pointwise, one row per dtype."""
    head = ["dtype", "listwise docs/s", "pointwise docs/s", "listwise ÷ pointwise (goal ≥ 1.5)"]
    head += ["matmul GFLOP/s", "readout GFLOP/s", "readout ÷ matmul (goal ≥ 0.60)"]
    head += ["max |Δscore| batched vs one-at-a-time"]
    rows = []
    for dtype, d in by_dtype.items():
        fw = d["forward"]
        rows.append(
            [
                dtype,
                f"{d['listwise']['docs_per_second']:.2f}",
                f"{d['pointwise']['docs_per_second']:.2f}",
                f"**{d['listwise_over_pointwise_docs_per_second']:.2f}×**",
                _g(d["matmul_flops"]),
                _g(fw["achieved_flops"]),
                f"**{d['achieved_over_matmul']:.2f}**",
                f"{fw['max_score_diff_batched_vs_one_at_a_time']:.2e} "
                f"({fw['batched_prompts_per_pass']} prompts per pass)",
            ]
        )
    return markdown_table(head, rows)


def _lever_table(levers: Sequence[dict[str, Any]]) -> list[str]:
    """One row per speed lever (bold: eager and optimised)."""
    head = ["lever", "dtype", "setting", "docs/s", "tokens/s", "fraction of matmul"]
    head += ["+ attention", "max |ΔE[g]| vs reference"]
    rows = []
    for r in levers:
        bold = "**" if r["lever"] in ("eager", "optimised") else ""
        rows.append(
            [
                f"{bold}{r['lever']}{bold}",
                r["dtype"],
                r["setting"],
                f"{r['docs_per_second']:.2f}",
                f"{r['tokens_per_second']:.0f}",
                f"{r['fraction_of_matmul']:.2f}",
                f"{r['fraction_of_matmul_with_attention']:.2f}",
                f"{r['max_abs_de_vs_reference']:.3f}",
            ]
        )
    return markdown_table(head, rows)


def _overhead_lines(by_dtype: dict[str, Any]) -> list[str]:
    """rank() against the forward passes alone, alternated in one process (issue 39)."""
    out = []
    for dt, d in by_dtype.items():
        o = d.get("rank_vs_forward")
        if o is None:
            continue
        runs = ", ".join(
            f"{a:.2f}/{b:.2f}" for a, b in zip(o["rank_seconds"], o["forward_seconds"], strict=True)
        )
        out += [
            "",
            f"Overhead outside the forward pass ({dt}): `rank()` end to end against the forward "
            f"passes alone on the same prompts, alternated {o['reps']} times (seconds, rank/forward: "
            f"{runs}); best against best **{o['rank_over_forward_best']:.2f}×**, prompt building "
            f"{o['prompt_build_seconds']:.3f} s. The tables of one run can still disagree where "
            "one times a single pass and another the best of several on this noisy machine.",
        ]
    return out


def benchmarks_markdown(res: dict[str, Any]) -> str:
    r = res["readout"]
    lines = [
        "# Benchmarks",
        "",
        "Written by `uv run poe bench` (`scripts/bench.py`) from the numbers it measured in one "
        f"run; raw results in `docs/results/bench-run.json`. Machine: {res['machine']}. "
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
    ]
    lines += _dtype_table(r["by_dtype"])
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
    lines += _overhead_lines(r["by_dtype"])
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


def profile_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    """A Markdown table of a profile summary (``bench.speed.summarise_profile``)."""
    head = ["operator", "share of self CPU time", "ms", "calls"]
    return markdown_table(
        head, [[f"`{r['op']}`", f"{r['share']:.1%}", f"{r['ms']:.0f}", r["calls"]] for r in rows]
    )


def _paired(ratios: Sequence[float] | None) -> str:
    if not ratios:
        return ""
    listed = ", ".join(f"{r:.2f}" for r in ratios)
    return f"; median of the {len(ratios)} paired ratios **{statistics.median(ratios):.2f}×** ({listed})"


def _rates(timings: dict[str, dict[str, float]]) -> str:
    start, end = timings["start"], timings["end"]
    return ", ".join(f"{k} {start[k] / 1e9:.0f}/{end[k] / 1e9:.0f}" for k in start)


def speed_markdown(res: dict[str, Any]) -> str:
    """The docs/BENCHMARKS.md section of ``bench.speed.readout_speed_benchmark``'s result."""
    lines = ["## Readout speed levers (issue 14)", "", _speed_conditions(res), ""]
    lines += _lever_table(res["rows"])
    lines += ["", *_speed_findings(res)]
    lines += [
        "",
        "Where the time goes: one forward pass of the first prompt (bfloat16) under the torch "
        "profiler, self CPU time by operator.",
        "",
        "Eager:",
        "",
        *profile_table(res["profile"]["eager"]),
        "",
        "Optimised (the compiled layers' fused elementwise kernels show as one row):",
        "",
        *profile_table(res["profile"]["optimised"]),
        "",
    ]
    return "\n".join(lines)


def _speed_conditions(res: dict[str, Any]) -> str:
    """What the lever table measured: the prompts, the rows, the matmul it is a fraction of."""
    mm = res["matmul_flops"]
    o = next(r for r in res["rows"] if r["lever"] == "optimised")
    return (
        f"`{res['model_name']}`, {res['threads']} threads, the {res['prompts']} listwise prompts "
        f"above (B = 20, {res['tokens']:,} tokens, {res['docs']} documents), one prompt per pass "
        "unless said. Each row changes one thing; *eager* is the path before issue 14 and "
        "*optimised* compiles the layers too (`attn_implementation: sdpa`, `compile: true`; "
        "`auto`, the default, compiles in bfloat16 on CPU). "
        f"Those two were timed alternately {o['timed']} times (best of each), the others once "
        "after a warm pass. Fraction of matmul: achieved FLOP/s (2·N·T) over a 1024³ matmul in the "
        f"row's dtype, timed before and after the rows, the higher taken (bfloat16 "
        f"{mm['bfloat16'] / 1e9:.0f}, float32 {mm['float32'] / 1e9:.0f} GFLOP/s"
        + (
            f"; before/after {_rates(res['matmul_flops_timings'])}"
            if "matmul_flops_timings" in res
            else ""
        )
        + "); *+ attention* adds causal attention's 2·L·d·T². "
        "|ΔE[g]|: the largest expected-grade difference from the float32 eager-attention "
        "uncompiled reference, over all slots (0–3 scale)."
    )


def _speed_findings(res: dict[str, Any]) -> list[str]:
    """Optimised against eager, the first compiled pass, and the shared prefix's KV cache."""
    by = {r["lever"]: r for r in res["rows"]}
    e, o = by["eager"], by["optimised"]
    sp = res["shared_prefix"]
    return [
        f"Optimised over eager: **{res['optimised_over_eager']:.2f}×** the documents per second "
        f"({o['docs_per_second']:.2f} vs {e['docs_per_second']:.2f}, best of each)"
        + _paired(res.get("optimised_over_eager_paired"))
        + "; readout at "
        f"**{o['fraction_of_matmul']:.2f}** of the bfloat16 matmul rate "
        f"({o['fraction_of_matmul_with_attention']:.2f} counting attention). The first compiled "
        f"pass of a process took {res['first_compiled_pass_seconds']:.1f} s against "
        f"{res['steady_compiled_pass_seconds']:.2f} s once compiled (inductor compiles one graph "
        "per kind of call and reuses it for every prompt length; its on-disk cache shortens later "
        "processes).",
        "",
        f"Shared prefix: the {sp['presentations']} presentations of one query share their first "
        f"{sp['shared_prefix_tokens']} tokens (instruction and query) of "
        f"{min(sp['prompt_tokens'])}–{max(sp['prompt_tokens'])}. Computing that prefix's KV "
        f"cache once and only the suffixes after it took {sp['prefix_seconds']:.2f} s against "
        f"{sp['full_seconds']:.2f} s for the full passes (**{sp['speedup']:.2f}×**), "
        f"max |ΔE[g]| {sp['max_abs_de']:.3f}. " + _prefix_verdict(sp),
    ]


def _prefix_verdict(sp: dict[str, Any]) -> str:
    share = sp["shared_prefix_tokens"] / min(sp["prompt_tokens"])
    return (
        f"The prefix is {share:.0%} of each prompt, so reusing it can save at most about that "
        f"share of the work (≤ {1 / (1 - share):.2f}× ideally); a measured ratio beyond that "
        "bound is pass-to-pass noise, and a suffix attending to a cache needs an explicit mask "
        "(SDPA's masked kernel, not the causal one). Not kept: the gain is bounded by the "
        "prefix share at the project's prompt shapes."
    )


def full_markdown(results: dict[str, Any]) -> str:
    """docs/BENCHMARKS.md (without its hand-kept sections) from one ``poe bench`` run."""
    text = benchmarks_markdown(results)
    if results.get("speed") is not None:
        text += "\n" + speed_markdown(results["speed"])
    g = results["generative_listwise"]
    by_dtype = results["readout"]["by_dtype"]
    bf = by_dtype.get("bfloat16") or next(iter(by_dtype.values()))
    text += (
        "\n## Generative listwise (RankGPT-style sliding window) on the same documents\n\n"
        f"{g['generative_listwise_docs_per_second']:.3f} docs/s ({g['windows']} windows, "
        f"{g['generated_tokens']} generated tokens, response statuses "
        f"{g['response_statuses']}); the listwise readout "
        f"({bf['listwise']['docs_per_second']:.2f} docs/s, same dtype) is "
        f"**{g['readout_over_generative']:.1f}×** faster (goal ≥ 3: "
        f"{'met' if g['goal_met'] else 'missed'}).\n"
    )
    if results.get("training") is not None:
        text += "\n" + training_benchmark_markdown(results["training"])
    if results.get("psi_step") is not None:
        text += "\n" + psi_step_markdown(results["psi_step"])
    if results.get("study_training") is not None:
        text += "\n" + study_training_markdown(results["study_training"])
    conditions = results.get("conditions") or "Not stated (--conditions)."
    return text + f"\n## Conditions of this run\n\n{conditions}\n"


_STEP_ROWS = {
    "single_view": "single view, eager",
    "oc_sft": "OC-SFT, eager",
    "single_view_compiled": "single view, optimised",
    "oc_sft_compiled": "OC-SFT, optimised",
    "oc_sft_autocast": "OC-SFT, float32 weights + bfloat16 autocast, eager",
    "oc_sft_study_allocator": "OC-SFT, eager, the study's allocator (32 MiB mmap threshold)",
}


def _step_table(result: dict[str, Any]) -> list[str]:
    """One row per training step variant that ran."""
    head = ["step", "views", "prompt tokens", "time per step", "tokens/s", "peak step memory"]
    rows = [
        [
            name,
            result[key]["views"],
            f"{result[key]['prompt_tokens']:,}",
            f"{result[key]['seconds_median']:.3f} s",
            f"{result[key]['tokens_per_second']:.0f}",
            f"{result[key]['peak_step_mb']:.0f} MB",
            f"{result[key].get('warmup_seconds', 0.0):.1f} s",
        ]
        for key, name in _STEP_ROWS.items()
        if key in result
    ]
    return markdown_table([*head, "untimed first step(s)"], rows)


def training_benchmark_markdown(result: dict[str, Any]) -> str:
    """A Markdown section for docs/BENCHMARKS.md."""
    s = result["single_view"] if "single_view" in result else result["oc_sft"]
    rows = [
        "## Training step: OC-SFT vs single view, eager vs optimised",
        "",
        f"`{result['model']}`, {s['dtype']} on {s['device']} ({s['threads']} threads), LoRA r="
        f"{result['lora_r']} ({s['trainable_parameters']:,} trainable parameters), one query with "
        f"{result['num_candidates']} candidates cut to {result['max_passage_chars']} characters; "
        f"each row in a fresh process, median of {len(s['step_seconds'])} steps after "
        f"{s.get('warmup_steps', 1)} untimed; memory: {s['memory_kind']} of a warm step"
        f"{'' if result['isolated'] else ' (in-process: indicative)'}. Eager is the step before "
        "issue 14; optimised compiles the decoder layers (LoRA included; `compile: true`; the "
        "default `auto` compiles in bfloat16 on CPU).",
        "",
        *_step_table(result),
        "",
        *_step_ratios(result),
    ]
    for key, label in (("oc_sft", "eager"), ("oc_sft_compiled", "optimised")):
        prof = result.get(key, {}).get("profile")
        if prof:
            rows += [
                "",
                f"Profile of one OC-SFT step ({label}), self CPU time by operator:",
                "",
                *profile_table(prof),
            ]
    rows.append("")
    return "\n".join(rows)


def _step_ratios(result: dict[str, Any]) -> list[str]:
    """OC-SFT against single view (eager, optimised), then the optimised, autocast and
    allocator variants of the step, each where it was measured."""
    rows = []
    for suffix, label in (("", "eager"), ("_compiled", "optimised")):
        if "time_ratio" + suffix not in result:
            continue
        ok = result["meets_goal" + suffix]
        rows.append(
            f"Ratio OC-SFT / single view ({label}): time **{result['time_ratio' + suffix]:.2f}×** "
            f"({'meets' if ok['time'] else 'misses'} the ≤ {result['goal_ratio']}× goal), memory "
            f"**{result['memory_ratio' + suffix]:.2f}×** ({'meets' if ok['memory'] else 'misses'} "
            "it)."
        )
    if "speedup_compiled" in result:
        oc, opt = result["oc_sft"], result["oc_sft_compiled"]
        rows.append(
            f"\nOptimised OC-SFT step over eager: **{result['speedup_compiled']:.2f}×** "
            f"({opt['tokens_per_second']:.0f} vs {oc['tokens_per_second']:.0f} tokens/s), peak "
            f"step memory {opt['peak_step_mb']:.0f} vs {oc['peak_step_mb']:.0f} MB."
        )
    if "speedup_autocast" in result:
        rows.append(
            f"\nbfloat16 autocast over float32 weights instead of bfloat16 weights: "
            f"{result['speedup_autocast']:.2f}× the eager step's speed (not kept when < 1)."
        )
    if "allocator_speedup" in result:
        oc, study = result["oc_sft"], result["oc_sft_study_allocator"]
        rows.append(
            f"\nThe OC-SFT step under the study's allocator settings (`ALLOCATOR_ENV`, "
            f"studies/sequencer.py) against the 128 KiB mmap threshold the memory rows use: "
            f"**{result['allocator_speedup']:.2f}×** the speed ({_cpu(study)}; against "
            f"{_cpu(oc)})."
        )
    return rows


def _cpu(part: dict[str, Any]) -> str:
    return (
        f"user {part['user_seconds_per_step']:.2f} s, system "
        f"{part['system_seconds_per_step']:.2f} s, "
        f"{part['minor_faults_per_step']:,.0f} minor page faults per step"
    )


def _goal(speedup: float, goal: float) -> str:
    return f"**{speedup:.2f}×** ({'met' if speedup >= goal else 'missed'})"


def psi_step_markdown(r: dict[str, Any]) -> str:
    """The study steps' section (tools/presdep_tools/bench/study_steps.py): one query's PSI
    along each path."""
    heading = "## The studies' steps end to end: today's path against the levers"
    return "\n".join([heading, "", *psi_step_lines(r)])


def psi_step_lines(r: dict[str, Any]) -> list[str]:
    """One query's PSI along each path: the description, the table and where the time went
    (also a probe's, tools/presdep_tools/bench/evidence.py)."""
    goal = r["goal_speedup"]
    rows = [
        [
            name,
            p["dtype"],
            f"{p['wall_seconds']:.1f}",
            f"{p['cpu_seconds']:.1f}",
            str(p["forward_passes"]),
            f"{p['prompt_tokens']:,}",
            _goal(p["cpu_speedup"], goal),
            f"{p['max_abs_score_diff']:.3g}",
        ]
        for name, p in r["paths"].items()
    ]
    head = ["path", "dtype", "wall s", "CPU s", "forward passes", "prompt tokens"]
    head += [f"CPU speed-up over today (goal ≥ {goal:g})", "max |Δscore| vs today"]
    return [
        f"One query's PSI: DL19 query {r['qid']}, BM25 top-20, the interleaved readout at "
        f"B = 20 (passages cut to 300 characters), {r['shuffles']} shuffles + the given order "
        f"+ {r['null_repeats']} repeats ({r['presentations']} presentations), "
        f"{r['threads']} thread(s), as `configs/experiments/psi-dl19-interleaved.yaml` scores "
        "every query; each path its own reranker, warmed (and compiled) on two presentations "
        "before the timed pass, all in one process.",
        "",
        *markdown_table(head, rows),
        "",
        *_psi_stages(r["paths"]),
    ]


def _split_table(paths: dict[str, Any], key: str, head: Sequence[str], intro: str) -> list[str]:
    """Each path's wall time split into parts (``paths[name][key]``: seconds by part, in
    ``head``'s order after its first two columns), the total and each part's share of it; runs
    before 2026-12-07 did not measure the splits, and say nothing here."""
    if not all(key in p for p in paths.values()):
        return []
    rows = []
    for name, p in paths.items():
        parts = p[key]
        total = sum(parts.values())
        rows.append([name, f"{total:.2f}", *(f"{v:.2f} ({v / total:.0%})" for v in parts.values())])
    return [intro, "", *markdown_table(head, rows), ""]


def _psi_stages(paths: dict[str, Any]) -> list[str]:
    """Where each path's wall time went (study_steps.stage_clock)."""
    head = ["path", "wall s", "prompt building s", "forward + readout s", "the rest s"]
    intro = (
        "Where the wall time of each path went: prompt building (template, passage cuts, chat "
        "template, tokenisation), the forward passes with the readout at the slots, and the rest "
        "(drawing, realigning the scores to the candidates, records), each with its share:"
    )
    return _split_table(paths, "stages", head, intro)


def study_training_markdown(r: dict[str, Any]) -> str:
    """One OC-SFT step at the studies' geometry along each path."""
    goal = r["goal_speedup"]
    rows = [
        [
            name,
            f"{p['prompt_tokens']:,}",
            f"{p['user_seconds_per_step']:.2f}",
            f"{p['seconds_median']:.2f}",
            f"{p['warmup_seconds']:.1f}",
            _goal(p["cpu_speedup"], goal),
        ]
        for name, p in r["paths"].items()
    ]
    head = ["path", "prompt tokens, both views", "CPU s per step", "wall s per step (median)"]
    head += ["untimed first step, s", f"CPU speed-up over today (goal ≥ {goal:g})"]
    return "\n".join(
        [
            f"One OC-SFT training step at the studies' geometry: one NovelEval query, "
            f"{r['num_candidates']} candidates cut at {r['max_passage_chars']} characters, two "
            f"views, LoRA r {r['lora_r']}, {r['threads']} thread; each path in a fresh process "
            "under the studies' allocator settings.",
            "",
            *markdown_table(head, rows),
            "",
            *_step_phases(r["paths"]),
        ]
    )


def _step_phases(paths: dict[str, Any]) -> list[str]:
    """Where each path's step went (bench/training.py ``PHASES``)."""
    head = ["path", "step s", "readout + loss s", "backward s", "optimizer s"]
    intro = "Where a step's wall time went (medians of the timed steps, each phase with its share):"
    return _split_table(paths, "phase_seconds_median", head, intro)
