"""The ``cpu-evidence`` block of docs/studies/cpu-probes.md, rendered from committed probe files.

Single measurements that are not a ``poe bench`` run (a machine too busy for one, a question
the bench does not ask) are committed as ``docs/results/bench/<name>-<date>.json``, each with
its ``kind``, conditions, raw numbers and the script that took them. This module turns each
kind into a table; every figure in the block is computed here from the raw numbers.

    uv run poe bench --render-evidence docs/results/bench
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from presdep_tools.bench.report import psi_step_lines, study_training_markdown
from presentation_dependence.io.markdown import markdown_table

__all__ = ["EVIDENCE_BLOCK", "EVIDENCE_DOC", "evidence_markdown"]

EVIDENCE_BLOCK = "cpu-evidence"
EVIDENCE_DOC = "docs/studies/cpu-probes.md"


def _rank_vs_forward(ev: dict[str, Any]) -> list[str]:
    r = ev["result"]
    best_rank, best_fwd = min(r["rank_seconds"]), min(r["forward_seconds"])
    matmul = max(ev["matmul_float32_1_thread_gflops"])
    rows = [
        ["rank() end to end, best of 3 (s)", f"{best_rank:.2f}"],
        ["forward passes alone, best of 3 (s)", f"{best_fwd:.2f}"],
        ["rank() ÷ forward", f"{r['rank_over_forward_best']:.3f}"],
        ["prompt building (s)", f"{r['prompt_build_seconds']:.2f}"],
        ["1-thread float32 matmul (GFLOP/s, best of 3)", f"{matmul:.1f}"],
    ]
    return markdown_table(["measure", "value"], rows)


def _compile_and_shared_pass(ev: dict[str, Any]) -> list[str]:
    psi, comp = ev["psi_step"], ev["compile"]
    one, shared = psi["one_a_pass"], psi["batched"]
    eager, compiled = (
        comp["cpu_seconds_per_pass"]["eager"],
        comp["cpu_seconds_per_pass"]["compiled"],
    )
    rows = [
        [
            f"PSI step, one query ({psi['presentations']} presentations)",
            f"one a pass: {one['cpu_seconds']:.1f} CPU s, {one['forward_passes']} passes",
            f"shared pass (≤ {psi['presentation_batch']} a pass): {shared['cpu_seconds']:.1f} CPU s, "
            f"{shared['forward_passes']} passes",
            f"{psi['cpu_ratio']:.2f}×",
            f"{psi['max_abs_score_diff']:.1e}",
        ],
        [
            f"one prompt ({comp['prompt_tokens']:,} tokens), best of {len(eager)}",
            f"eager: {min(eager):.2f} CPU s",
            f"compiled layers: {min(compiled):.2f} CPU s",
            f"{comp['eager_over_compiled_best']:.2f}×",
            f"{comp['max_abs_delta_expected_grade']:.1e}",
        ],
    ]
    header = ["what", "today's path", "lever", "speed-up", "max |Δ| (score, E[g])"]
    return markdown_table(header, rows)


def _attention_kernels(ev: dict[str, Any]) -> list[str]:
    secs, diffs = ev["cpu_seconds"], ev.get("max_abs_diff_from_sdpa_causal", {})
    base = secs["sdpa_flash_is_causal"]
    rows = [
        [
            name.replace("_", " "),
            f"{s * 1000:.0f}",
            f"{ev['causal_gflop'] / s:.1f}",
            f"{s / base:.2f}×",
            f"{diffs[name]:.1e}" if name in diffs else "",
        ]
        for name, s in sorted(secs.items(), key=lambda kv: kv[1])
    ]
    header = ["kernel", "ms a layer", "causal GFLOP/s", "time ÷ SDPA causal", "max |Δ| output"]
    return markdown_table(header, rows)


def _int8_dynamic(ev: dict[str, Any]) -> list[str]:
    r = ev["result"]
    secs = r["cpu_seconds"]
    rows = [
        [
            f"{len(r['prompt_tokens'])} prompts ({sum(r['prompt_tokens']):,} tokens), "
            f"best of {len(secs['float32'])}",
            f"float32: {min(secs['float32']):.2f} CPU s",
            f"int8 dynamic: {min(secs['int8_dynamic']):.2f} CPU s",
            f"{min(secs['float32']) / min(secs['int8_dynamic']):.2f}×",
            ", ".join(f"{p['max_abs_delta_expected_grade']:.2f}" for p in r["per_prompt"]),
            ", ".join(f"{p['kendall_tau_float32_vs_int8']:.2f}" for p in r["per_prompt"]),
        ]
    ]
    header = [
        "what",
        "today's path",
        "lever",
        "speed-up",
        "max |ΔE[g]| per prompt",
        "Kendall τ, float32 vs int8 scores",
    ]
    return markdown_table(header, rows)


def _shared_pass_by_dtype(ev: dict[str, Any]) -> list[str]:
    res = ev["results"]
    base = res["float32"]["one_a_pass"]["cpu_seconds"]
    rows = []
    for dtype, r in res.items():
        one, shared = r["one_a_pass"], r["batched"]
        rows.append(
            [
                dtype,
                f"{one['cpu_seconds']:.1f} CPU s, {one['forward_passes']} passes",
                f"{base / one['cpu_seconds']:.2f}×",
                f"{shared['cpu_seconds']:.1f} CPU s, {shared['forward_passes']} passes "
                f"(≤ {r['presentation_batch']} a pass)",
                f"{r['cpu_ratio']:.2f}×",
                f"{r['max_abs_score_diff']:.1e}",
            ]
        )
    header = [
        f"dtype (PSI step, one query, {res['float32']['presentations']} presentations)",
        "one a pass",
        "speed-up over float32, one a pass",
        "shared pass",
        "shared pass speed-up",
        "max |Δ| score, shared vs one a pass",
    ]
    return markdown_table(header, rows)


def _training_steps(label: str) -> Callable[[dict[str, Any]], list[str]]:
    """Rows of OC-SFT steps under settings (``results``: setting -> alternations), each against
    the first setting's best CPU seconds."""

    def render(ev: dict[str, Any]) -> list[str]:
        res = ev["results"]
        cpu = {key: min(r["user_seconds_per_step"] for r in runs) for key, runs in res.items()}
        base = next(iter(res))
        rows = [
            [
                key,
                f"{runs[0]['prompt_tokens']:,}",
                ", ".join(f"{r['user_seconds_per_step']:.2f}" for r in runs),
                f"{cpu[base] / cpu[key]:.2f}×",
            ]
            for key, runs in res.items()
        ]
        header = [
            f"{label} (OC-SFT step, two views)",
            "prompt tokens, both views",
            "CPU s per step (each alternation)",
            f"speed-up over {base} (best)",
        ]
        return markdown_table(header, rows)

    return render


def _forward_account(ev: dict[str, Any]) -> list[str]:
    rows = []
    for dtype, r in ev["results"].items():
        linear = 2 * r["non_embedding_parameters"] * r["tokens"] / (r["matmul_gflops"] * 1e9)
        fwd, layers = r["forward_cpu_seconds_best_of_3"], r["layers"]
        total = r["profile_self_cpu_seconds"]
        attn, lin = r["profile_attention_seconds"], r["profile_linear_seconds"]
        kernel, exp = r["kernel_seconds_per_layer"], r["exp_seconds_per_layer"]
        rows.append(
            [
                f"{dtype}, {r['tokens']:,} tokens",
                f"{fwd:.2f}",
                f"{linear / fwd:.2f}",
                f"{lin / total:.0%} / {attn / total:.0%} / {1 - (lin + attn) / total:.0%}",
                f"{kernel * 1e3:.1f}",
                f"{exp * 1e3:.1f} ({exp / kernel:.0%})",
                f"{r['attention_matmuls_seconds_per_layer'] * 1e3:.1f}",
                f"{linear / (linear + layers * exp):.2f}",
            ]
        )
    header = [
        "dtype, prompt",
        "forward, CPU s",
        "readout ÷ matmul (2·N·T)",
        "linear / attention / rest (profile)",
        "SDPA causal, ms a layer",
        "its exponentials alone, ms (÷ kernel)",
        "its two matmuls as bmm, ms",
        "ceiling: linear at the matmul rate, attention at its exponentials",
    ]
    return markdown_table(header, rows)


def _judge_steps(ev: dict[str, Any]) -> list[str]:
    """Trained-judge steps of the same items under settings, the first (compile) step left out;
    each against the first setting's total CPU seconds."""
    res = ev["results"]
    timed = {key: rows[1:] for key, rows in res.items()}
    total = {key: sum(r["cpu_s"] for r in rows) for key, rows in timed.items()}
    base = next(iter(res))
    if len({tuple(r["tokens"] for r in rows) for rows in timed.values()}) != 1:
        raise ValueError("judge_step_by_dtype: the settings did not train on the same items")
    rows = [
        [
            key,
            f"{len(timed[key])} ({sum(r['tokens'] for r in timed[key]):,})",
            f"{res[key][0]['cpu_s']:.1f}",
            f"{total[key]:.1f}",
            f"{total[key] / len(timed[key]):.2f}",
            f"{total[base] / total[key]:.2f}×",
        ]
        for key in res
    ]
    header = [
        "judge step (two placements of one item)",
        "steps timed (prompt tokens)",
        "first step, CPU s (left out)",
        "CPU s, timed steps",
        "CPU s per step",
        f"speed-up over {base}",
    ]
    return markdown_table(header, rows)


def _study_steps(ev: dict[str, Any]) -> list[str]:
    """The studies' two steps as ``poe bench`` renders them (scripts/probes/study_steps.py:
    the same measurements along the paths a machine can take), with where the time went."""
    res = ev["results"]
    out = psi_step_lines(res["psi"]) if res.get("psi") else []
    if res.get("training"):
        out += ["", *study_training_markdown(res["training"]).splitlines()]
    return out


RENDERERS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "int8_dynamic": _int8_dynamic,
    "rank_vs_forward": _rank_vs_forward,
    "compile_and_shared_pass": _compile_and_shared_pass,
    "attention_kernels": _attention_kernels,
    "shared_pass_by_dtype": _shared_pass_by_dtype,
    "training_step_by_dtype": _training_steps("dtype"),
    "training_step_compiled": _training_steps("decoder layers, bfloat16"),
    "forward_account": _forward_account,
    "judge_step_by_dtype": _judge_steps,
    "study_steps": _study_steps,
}


def _heading(path: Path, ev: dict[str, Any]) -> list[str]:
    when = ev.get("utc", "")
    return [
        f"**`{path.name}`** ({when}, commit `{ev['commit'][:7]}`, {ev['cpu']}, {ev['dtype']}, "
        f"{ev['threads']} thread): {ev['what']}. Conditions: {ev['conditions']}.",
        "",
    ]


def evidence_markdown(folder: str | Path) -> str:
    """Every probe file of ``folder``, in name order, as a heading line and a table."""
    out: list[str] = []
    for path in sorted(Path(folder).glob("*.json")):
        ev = json.loads(path.read_text(encoding="utf-8"))
        kind = ev.get("kind")
        if kind not in RENDERERS:
            raise ValueError(f"{path}: kind {kind!r} is not one of {sorted(RENDERERS)}")
        out += [*_heading(path, ev), *RENDERERS[kind](ev), ""]
    return "\n".join(out).rstrip() + "\n"
