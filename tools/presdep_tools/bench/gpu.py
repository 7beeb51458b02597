"""Render the prepared GPU check's results (``scripts/device/gpu_check.sh``) as a Markdown block.

The check's JSON files are committed under ``docs/results/device/`` (one per architecture shape,
with the ``nvidia-smi.csv`` of the machine); ``scripts/bench.py --render-gpu`` writes the block
of docs/BENCHMARKS.md from them, and tests/docs/test_generated_blocks.py renders it again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from presentation_dependence.io.markdown import markdown_table

__all__ = ["GPU_BLOCK", "gpu_markdown", "load_gpu_checks"]

GPU_BLOCK = "gpu-check"


def load_gpu_checks(folder: str | Path) -> list[dict[str, Any]]:
    """Every ``gpu_check-*.json`` of ``folder``, in name order; an empty folder is an error."""
    files = sorted(Path(folder).glob("gpu_check-*.json"))
    if not files:
        raise FileNotFoundError(
            f"{folder}: no gpu_check-*.json (run scripts/device/gpu_check.sh on a lent GPU "
            "machine and copy its $OUT files here)"
        )
    return [json.loads(f.read_text(encoding="utf-8")) | {"file": f.name} for f in files]


def _tf(x: float) -> str:
    return f"{x / 1e12:.1f}"


def _row(r: dict[str, Any]) -> list[str]:
    ro, st = r["readout"], r["oc_sft_step"]
    pres = r.get("presentations")
    return [
        r["architecture"],
        f"{ro['tokens_per_prompt']:.0f}",
        f"{ro['prompts_per_s']:.1f}",
        f"{ro['tokens_per_s']:,.0f}",
        f"{ro['fraction_of_matmul']:.3f}",
        f"{pres['one_a_pass_prompts_per_s']:.1f} → {pres['one_batch_prompts_per_s']:.1f} "
        f"({pres['speedup']:.2f}×, max ΔE[g] {pres['max_abs_diff']:.1g})"
        if pres
        else "not measured",
        f"{r['batched_vs_alone_max_abs_diff']:.3g}",
        f"{st['seconds']:.3f}",
        f"{st['tokens_per_s']:,.0f}",
        f"{st['peak_gib']:.1f}" if st.get("peak_gib") is not None else "n/a",
    ]


def gpu_markdown(folder: str | Path) -> str:
    """One row per architecture: readout, M-shuffle batch, padded batch numerics, OC-SFT step."""
    runs = load_gpu_checks(folder)
    first = runs[0]
    head = [
        "shape",
        "tokens/prompt",
        "readout prompts/s",
        "tokens/s",
        "fraction of matmul",
        "M = 11 shuffles: one a pass → one batch, prompts/s",
        "padded batch max ΔE[g]",
        "OC-SFT step s",
        "step tokens/s",
        "step peak GiB",
    ]
    lines = [
        f"Device {first['device']}, torch {first['torch']}, transformers {first['transformers']}, "
        f"{first['dtype']}, attention {first['attn_implementation']}, compiled layers "
        f"{'on' if first['compiled_layers'] else 'off'}; matmul rate "
        + ", ".join(f"{_tf(r['matmul_flops'])} TFLOP/s ({r['file']})" for r in runs)
        + ". Random weights (no weights travel to the machine); files: "
        + ", ".join(f"`{r['file']}`" for r in runs)
        + ".",
        "",
        *markdown_table(head, [_row(r) for r in runs]),
    ]
    return "\n".join(lines) + "\n"
