"""The CPU-scale study: its command plan (``scripts/train/run_cpu_study.py``) and its table.

Train on non-DL19 queries (SciFact BM25 top-20, HotpotQA paragraphs, NovelEval), select λ on
held-out queries of the same collections, and evaluate on DL19 top-20 with M = 10 shuffles:
the off-the-shelf readout, batched self-consistency (BSC, K = 10) and the four students. Each
step is an ordinary command of the repository; every one of them resumes or is skipped when
its output exists, so the plan can be rerun after an interruption.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["STUDENTS", "Step", "study_plan", "study_table"]

# (scorer name, training config stem) of the four students.
STUDENTS = (
    ("single-order", "single-order"),
    ("order-averaged", "order-averaged"),
    ("perm-aug", "perm-aug"),
    ("oc-sft", "oc-sft"),
)
CHOSEN = "<chosen adapter of {selection}>"


@dataclass(frozen=True)
class Step:
    """One command; ``done`` names a file whose existence means the step can be skipped."""

    name: str
    argv: list[str]
    done: str | None = None
    needs_chosen_adapter: bool = field(default=False)


def study_plan(
    *,
    python: str = "python",
    root: str = "runs/self-distill/study",
    configs: str = "configs/self-distill",
    dl19_config: str = "configs/experiments/psi-dl19-smollm2.yaml",
    bsc_config: str = "configs/experiments/psi-dl19-smollm2-bsc.yaml",
    data_dir: str = "data/study",
    launcher: Sequence[str] = (),
    eval_overrides: Sequence[str] = (),
) -> list[Step]:
    """The study's commands in order. ``launcher`` prefixes training (e.g. accelerate launch)."""
    selection = f"{root}/lambda"
    overrides = [a for o in eval_overrides for a in ("--override", o)]
    steps = [
        Step(
            "data",
            [python, "scripts/train/prepare_study_data.py", "--out", data_dir],
            f"{data_dir}/noveleval-heldout.jsonl",
        ),
        Step("silver", [python, "scripts/train/make_silver.py", f"{configs}/oc-sft.yaml"]),
        Step(
            "lambda",
            [
                *(launcher or [python]),
                "scripts/train/select_lambda.py",
                f"{configs}/oc-sft.yaml",
                "--out",
                selection,
            ],
            f"{selection}/lambda_selection.json",
        ),
    ]
    for name, stem in STUDENTS[:3]:
        steps.append(
            Step(
                f"train {name}",
                [
                    *(launcher or [python]),
                    "scripts/train/train_student.py",
                    f"{configs}/{stem}.yaml",
                ],
                f"runs/self-distill/{stem}/adapter/adapter_model.safetensors",
            )
        )
    scorers: list[tuple[str, str, list[str], bool]] = [
        ("off-the-shelf", dl19_config, [], False),
        ("bsc", bsc_config, [], False),
    ]
    for name, stem in STUDENTS:
        adapter = CHOSEN.format(selection=selection) if name == "oc-sft" else None
        adapter = adapter or f"runs/self-distill/{stem}/adapter"
        scorers.append(
            (
                name,
                dl19_config,
                ["--override", f"reranker.adapter_path={adapter}"],
                name == "oc-sft",
            )
        )
    for name, config, extra, chosen in scorers:
        run_dir = f"{root}/dl19/{name}"
        common = [config, *extra, *overrides, "--run-dir", run_dir]
        steps.append(
            Step(
                f"run {name}",
                [python, "scripts/run_experiment.py", *common, "--eval"],
                f"{run_dir}/metrics.json",
                chosen,
            )
        )
        steps.append(
            Step(
                f"psi {name}",
                [python, "scripts/run_psi.py", *common],
                f"{run_dir}/psi/psi_metrics.json",
                chosen,
            )
        )
    steps.append(
        Step(
            "table",
            [python, "scripts/train/study_table.py", f"{root}/dl19", "--out", f"{root}/table.md"],
        )
    )
    return steps


def _mean(block: Mapping[str, Any], key: str) -> float | None:
    value = block.get(key)
    if isinstance(value, Mapping):
        value = value.get("mean")
    return None if value is None else float(value)


def _fmt(x: float | None, ci: Mapping[str, Any] | None = None) -> str:
    if x is None:
        return "—"
    if ci and "ci_low" in ci:
        return f"{x:.3f} [{float(ci['ci_low']):.3f}, {float(ci['ci_high']):.3f}]"
    return f"{x:.3f}"


def study_row(run_dir: str | Path) -> dict[str, Any]:
    """One scorer's figures from its run folder (metrics.json and psi/psi_metrics.json)."""
    folder = Path(run_dir)
    metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    psi = json.loads((folder / "psi" / "psi_metrics.json").read_text(encoding="utf-8"))
    shuffled = psi["variants"]["random_shuffle"]["summary"]
    null = psi["variants"].get("same_order", {}).get("summary", {})
    cost = psi.get("cost", {}).get("same_order", {})
    return {
        "scorer": folder.name,
        "queries": metrics.get("num_queries"),
        "ndcg10_given": metrics["mean"].get("ndcg@10"),
        "ndcg_shuffled": shuffled["ndcg_mean"],
        "tau_psi": shuffled["tau_psi"],
        "delta_ndcg": _mean(shuffled, "delta_ndcg"),
        "flip_topk": _mean(shuffled, "changed_topk"),
        "null_tau_psi": _mean(null, "tau_psi"),
        "passes_per_presentation": cost.get("forward_passes_per_query"),
    }


def study_table(run_dirs: Sequence[str | Path]) -> str:
    """The study's Markdown table, one row per scorer run folder."""
    head = (
        "| scorer | queries | nDCG@10 (given order) | nDCG@10 over 10 shuffles [95% CI] | "
        "τ-PSI [95% CI] | ΔnDCG@10 | top-10 flip rate | τ-PSI same-order null | forward passes "
        "per query (null variant) |"
    )
    lines = [head, "|" + "---|" * 9]
    for d in run_dirs:
        r = study_row(d)
        lines.append(
            f"| {r['scorer']} | {r['queries']} | {_fmt(r['ndcg10_given'])} | "
            f"{_fmt(_mean(r, 'ndcg_shuffled'), r['ndcg_shuffled'])} | "
            f"{_fmt(_mean(r, 'tau_psi'), r['tau_psi'])} | {_fmt(r['delta_ndcg'])} | "
            f"{_fmt(r['flip_topk'])} | {_fmt(r['null_tau_psi'])} | "
            f"{_fmt(r['passes_per_presentation'])} |"
        )
    return "\n".join(lines) + "\n"
