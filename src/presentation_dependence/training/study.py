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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from presentation_dependence.config.loader import load_config, read_yaml_mapping
from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import build_dataclass
from presentation_dependence.metrics.stats import paired_bootstrap, paired_permutation_test
from presentation_dependence.rerankers.base import RERANKERS, Paradigm
from presentation_dependence.runners.run_folder import recorded_cpus
from presentation_dependence.seeding import rng_from

__all__ = [
    "STUDENTS",
    "Step",
    "collapsed",
    "load_plan",
    "paired_rows",
    "study_plan",
    "study_row",
    "study_table",
]

# (scorer name, training config stem) of the four students.
STUDENTS = (
    ("single-order", "single-order"),
    ("order-averaged", "order-averaged"),
    ("perm-aug", "perm-aug"),
    ("oc-sft", "oc-sft"),
)
# Every trained scorer's run-folder name (the content study adds DebiasFirst and gold OC-SFT).
STUDENT_NAMES = (*(name for name, _ in STUDENTS), "debias-first", "oc-sft-gold")
CHOSEN = "<chosen adapter of {selection}>"


@dataclass(frozen=True)
class Step:
    """One command; ``done`` names a file whose existence means the step can be skipped;
    ``blocked`` why it cannot run (it is skipped with that reason); ``wait_for`` a file that
    another lane writes (the step waits until it exists, e.g. the silver labels)."""

    name: str
    argv: list[str]
    done: str | None = None
    needs_chosen_adapter: bool = field(default=False)
    lane: str = "main"
    blocked: str | None = None
    wait_for: str | None = None


@dataclass(frozen=True)
class Plan:
    """A plan file: ``steps: [{name, argv: [...], done, lane}]``."""

    steps: list[Step]


def load_plan(path: str | Path, *, python: str = "python") -> list[Step]:
    """A study plan from YAML: ``steps: [{name, argv: [...], done, lane}]``, in order.

    ``{python}`` in an argv item is replaced by ``python``; ``done`` names the file whose
    existence marks the step finished (steps without one always run: they resume or are
    no-ops themselves); ``lane`` groups steps that one process runs in order, so two lanes
    can share the machine (``run_cpu_study.py --plan FILE --lane NAME``); ``wait_for`` names
    a file of another lane that the step needs (it waits until the file exists).
    """

    def build(raw: dict[str, Any], stem: str) -> list[Step]:
        steps = build_dataclass(Plan, raw).steps
        if not steps:
            raise ConfigError("expected 'steps:' with a list of steps", key="steps")
        names = [s.name for s in steps]
        for i, s in enumerate(steps):
            if not s.argv:
                raise ConfigError(f"step {s.name!r} needs a non-empty argv", key=f"steps[{i}]")
            if s.name in names[:i]:
                raise ConfigError(f"step name {s.name!r} repeats", key=f"steps[{i}]")
        return [replace(s, argv=[a.replace("{python}", python) for a in s.argv]) for s in steps]

    return load_config(path, build, family="plan")


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


# Paradigms whose scores are expected grades on the 0-3 scale: the collapse rule compares
# their spread with the off-the-shelf readout's. Others (a bi-encoder teacher's cosines) are
# on a scale of their own.
GRADE_SCALE_PARADIGMS = (Paradigm.LISTWISE_READOUT, Paradigm.MITIGATION)


def run_paradigm(folder: Path) -> str | None:
    """The paradigm of the reranker named in a run folder's resolved_config.yaml (None when
    the file or the name is missing or not registered here)."""
    path = folder / "resolved_config.yaml"
    if not path.exists():
        return None
    block = read_yaml_mapping(path).get("reranker") or {}
    name = block.get("reranker_class") if isinstance(block, Mapping) else None
    if not isinstance(name, str) or name not in RERANKERS:
        return None
    return Paradigm(RERANKERS.get(name).paradigm).value


def study_row(run_dir: str | Path) -> dict[str, Any]:
    """One scorer's figures from its run folder (metrics.json and psi/psi_metrics.json)."""
    folder = Path(run_dir)
    metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    psi = json.loads((folder / "psi" / "psi_metrics.json").read_text(encoding="utf-8"))
    shuffled_block = psi["variants"]["random_shuffle"]
    shuffled = shuffled_block["summary"]
    null = psi["variants"].get("same_order", {}).get("summary", {})
    cost = psi.get("cost", {}).get("same_order", {})
    return {
        "scorer": folder.name,
        "paradigm": run_paradigm(folder),
        "queries": metrics.get("num_queries"),
        "ndcg10_given": metrics["mean"].get("ndcg@10"),
        "ndcg_shuffled": shuffled["ndcg_mean"],
        "tau_psi": shuffled["tau_psi"],
        "delta_ndcg": _mean(shuffled, "delta_ndcg"),
        "flip_topk": _mean(shuffled, "changed_topk"),
        "score_spread": _mean(shuffled, "score_spread"),
        "tied_share": _mean(shuffled, "tied_share"),
        "null_tau_psi": _mean(null, "tau_psi"),
        "passes_per_presentation": cost.get("forward_passes_per_query"),
        "tokens_per_presentation": cost.get("prompt_tokens_per_query"),
        "per_query": shuffled_block.get("per_query", {}),
        "cpus": recorded_cpus(folder),
    }


def collapsed(row: Mapping[str, Any], base: Mapping[str, Any]) -> bool | None:
    """A variant "wins" by flattening when its within-query score spread falls below half the
    off-the-shelf scorer's, or when more than half of its candidates tie (``tied_share``).

    None (not applicable) for a scorer whose scores are not expected grades (its ``paradigm``
    is known and not in :data:`GRADE_SCALE_PARADIGMS`): its spread is on another scale.
    """
    paradigm = row.get("paradigm")
    if paradigm is not None and Paradigm(paradigm) not in GRADE_SCALE_PARADIGMS:
        return None
    spread, base_spread = row.get("score_spread"), base.get("score_spread")
    if spread is not None and base_spread and spread < 0.5 * base_spread:
        return True
    return bool(row.get("tied_share") is not None and row["tied_share"] > 0.5)


def _verdict(flag: bool | None) -> str:
    return "n/a (not on the grade scale)" if flag is None else ("yes" if flag else "no")


def paired_rows(
    rows: Sequence[Mapping[str, Any]], *, seed: int = 0, base: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Each scorer against ``base`` (default: the first row, off-the-shelf), paired over
    queries: τ-PSI, nDCG@10 over the shuffles and the score spread. Seeded paired bootstrap
    (95% CI) and a paired permutation test."""
    if not rows or (base is None and len(rows) < 2):
        return []  # nothing to pair: no rows, or only the base itself
    base = rows[0] if base is None else base
    out = []
    for r in rows:
        if r["scorer"] == base["scorer"]:
            continue
        for metric in ("tau_psi", "ndcg_mean", "score_spread"):
            qids = [q for q in base["per_query"] if q in r["per_query"]]
            if not qids or metric not in r["per_query"][qids[0]]:
                continue
            a = np.array([r["per_query"][q][metric] for q in qids])
            b = np.array([base["per_query"][q][metric] for q in qids])
            name = f"{r['scorer']}/{metric}"
            if base is not rows[0]:
                name = f"{r['scorer']}-vs-{base['scorer']}/{metric}"
            boot = paired_bootstrap(a, b, rng=rng_from(seed, name))
            perm = paired_permutation_test(a, b, rng=rng_from(seed, name, 1))
            out.append(
                {
                    "scorer": r["scorer"],
                    "metric": metric,
                    "queries": len(qids),
                    **boot,
                    "permutation_p": perm["p_value"],
                }
            )
    return out


def step_seconds(timings: str | Path | None) -> dict[str, float]:
    """Seconds per step name from a study sequencer's ``steps.jsonl`` (the last line wins)."""
    out: dict[str, float] = {}
    if timings is None or not Path(timings).is_file():
        return out
    for line in Path(timings).read_text(encoding="utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            out[str(d["step"])] = float(d["seconds"])
    return out


def study_table(run_dirs: Sequence[str | Path], timings: str | Path | None = None) -> str:
    """The study's Markdown: one row per scorer run folder, then each scorer paired against the
    first (off-the-shelf) and the verdict on the issue's goal (τ-PSI halved, no loss of nDCG@10
    over the shuffles, no collapse of the score spread)."""
    rows = [study_row(d) for d in run_dirs]
    seconds = step_seconds(timings)
    head = (
        "| scorer | queries | nDCG@10 (given order) | nDCG@10 over 10 shuffles [95% CI] | "
        "τ-PSI [95% CI] | ΔnDCG@10 | top-10 flip rate | score spread (mean within-query std) "
        "| tied share | τ-PSI same-order null | forward passes per query (null variant) "
        "| prompt tokens per query (null variant) | wall s (PSI step) |"
    )
    lines = [head, "|" + "---|" * 13]
    for r in rows:
        wall = seconds.get(f"psi {r['scorer']}")
        tok = r.get("tokens_per_presentation")
        tokens = "—" if tok is None else f"{tok:.0f}"
        lines.append(
            f"| {r['scorer']} | {r['queries']} | {_fmt(r['ndcg10_given'])} | "
            f"{_fmt(_mean(r, 'ndcg_shuffled'), r['ndcg_shuffled'])} | "
            f"{_fmt(_mean(r, 'tau_psi'), r['tau_psi'])} | {_fmt(r['delta_ndcg'])} | "
            f"{_fmt(r['flip_topk'])} | {_fmt(r['score_spread'])} | {_fmt(r['tied_share'])} | "
            f"{_fmt(r['null_tau_psi'])} | {_fmt(r['passes_per_presentation'])} | "
            f"{tokens} | {'—' if wall is None else f'{wall:.0f}'} |"
        )
    cpus = sorted({c for r in rows for c in r["cpus"]})
    lines += ["", f"Processors (provenance.json): {'; '.join(cpus) or 'no provenance'}."]
    if len(cpus) > 1:
        lines[-1] += " The rows were not all computed on one kind of processor: " + "; ".join(
            f"{r['scorer']}: {', '.join(r['cpus']) or 'no provenance'}" for r in rows
        )
    paired = paired_rows(rows)
    if paired:
        lines += [
            "",
            f"Paired over queries against `{rows[0]['scorer']}` (difference = scorer − "
            f"{rows[0]['scorer']}; seeded paired bootstrap, 95% CI; paired permutation test):",
            "",
            "| scorer | metric | queries | mean difference [95% CI] | bootstrap p | "
            "permutation p |",
            "|---|---|---|---|---|---|",
        ]
        for p in paired:
            lines.append(
                f"| {p['scorer']} | {p['metric']} | {p['queries']} | {p['mean_diff']:+.3f} "
                f"[{p['ci_low']:+.3f}, {p['ci_high']:+.3f}] | {p['p_value']:.3g} | "
                f"{p['permutation_p']:.3g} |"
            )
        base = rows[0]
        ocsft = next((r for r in rows if r["scorer"] == "oc-sft"), None)
        students = [r for r in rows if r["scorer"] in STUDENT_NAMES and r is not ocsft]
        if ocsft is not None and students:
            lines += [
                "",
                "OC-SFT against each other student, paired over queries (difference = "
                "oc-sft − student; the claim under test: OC-SFT has the lowest τ-PSI of the "
                "trained scorers at equal nDCG@10):",
                "",
                "| student | metric | queries | oc-sft − student [95% CI] | bootstrap p | "
                "permutation p |",
                "|---|---|---|---|---|---|",
            ]
            for p in paired_rows(students, base=ocsft):
                lines.append(
                    f"| {p['scorer']} | {p['metric']} | {p['queries']} | {-p['mean_diff']:+.3f} "
                    f"[{-p['ci_high']:+.3f}, {-p['ci_low']:+.3f}] | {p['p_value']:.3g} | "
                    f"{p['permutation_p']:.3g} |"
                )
        lines += [
            "",
            "Goal (issues 5 and 13): τ-PSI at most half the off-the-shelf scorer's, nDCG@10 over the "
            "shuffles not below it (paired mean difference ≥ 0 or its CI covering 0), and no "
            "collapse (spread ≥ half the off-the-shelf spread, tied share ≤ 0.5).",
            "",
            "| scorer | τ-PSI / off-the-shelf | halved | nDCG over shuffles kept | collapsed |",
            "|---|---|---|---|---|",
        ]
        ndcg = {p["scorer"]: p for p in paired if p["metric"] == "ndcg_mean"}
        for r in rows[1:]:
            ratio = (_mean(r, "tau_psi") or 0.0) / (_mean(base, "tau_psi") or float("nan"))
            d = ndcg.get(r["scorer"])
            kept = d is not None and d["ci_high"] >= 0  # not significantly below
            lines.append(
                f"| {r['scorer']} | {ratio:.2f} | {'yes' if ratio <= 0.5 else 'no'} | "
                f"{'yes' if kept else 'no'} | {_verdict(collapsed(r, base))} |"
            )
    return "\n".join(lines) + "\n"
