"""The study's table (``presdep study table``): one row per scorer run folder, the paired tests
against the off-the-shelf readout and of OC-SFT against each other student, and the verdict on
the goal (τ-PSI halved, nDCG@10 over the shuffles kept, no collapse). The wall seconds of each
PSI step come from the study's timing record (:mod:`.timing`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from presentation_dependence.config.loader import read_yaml_mapping
from presentation_dependence.io.markdown import markdown_table
from presentation_dependence.metrics.stats import paired_comparison
from presentation_dependence.rerankers.base import GRADE_SCALE_PARADIGMS, Paradigm, block_paradigm
from presentation_dependence.robustness.recompute import recompute_run
from presentation_dependence.runners.costs import phase_cost
from presentation_dependence.runners.readback import recorded_cpus
from presentation_dependence.studies.plan import STUDENT_NAMES
from presentation_dependence.studies.timing import step_seconds

__all__ = ["PAIRED_METRICS", "collapsed", "paired_rows", "run_figures", "run_paradigm"]
__all__ += ["study_row", "study_table"]


def _mean(block: Mapping[str, Any], key: str) -> float | None:
    value = block.get(key)
    if isinstance(value, Mapping):
        value = value.get("mean")
    return None if value is None else float(value)


def _fmt0(x: float | None) -> str:
    return "—" if x is None else f"{x:.0f}"


def _fmt(x: float | None, ci: Mapping[str, Any] | None = None) -> str:
    if x is None:
        return "—"
    if ci and "ci_low" in ci:
        return f"{x:.3f} [{float(ci['ci_low']):.3f}, {float(ci['ci_high']):.3f}]"
    return f"{x:.3f}"


def run_paradigm(folder: Path) -> str | None:
    """The paradigm of the reranker named in a run folder's resolved_config.yaml (None when
    the file or the name is missing or not registered here)."""
    path = folder / "resolved_config.yaml"
    if not path.exists():
        return None
    paradigm = block_paradigm(read_yaml_mapping(path).get("reranker"))
    return None if paradigm is None else paradigm.value


def run_figures(
    folder: Path, *, from_scores: bool = False
) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """``(metrics.json, psi/psi_metrics.json)`` of a run folder: as stored, or, ``from_scores``,
    recomputed from its run.trec, qrels.txt and psi/grade_distributions.npz
    (:func:`~presentation_dependence.robustness.recompute.recompute_run`)."""
    if from_scores:
        done = recompute_run(folder)
        return done.metrics, done.psi_metrics
    metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    psi = json.loads((folder / "psi" / "psi_metrics.json").read_text(encoding="utf-8"))
    return metrics, psi


def study_row(run_dir: str | Path, *, from_scores: bool = False) -> dict[str, Any]:
    """One scorer's figures from its run folder (metrics.json and psi/psi_metrics.json, or,
    ``from_scores``, those recomputed from its scores)."""
    folder = Path(run_dir)
    metrics, psi = run_figures(folder, from_scores=from_scores)
    shuffled_block = psi["variants"]["random_shuffle"]
    shuffled = shuffled_block["summary"]
    null = psi["variants"].get("same_order", {}).get("summary", {})
    cost = psi.get("cost", {}).get("same_order", {})
    shuffle_tokens = psi.get("cost", {}).get("random_shuffle", {}).get("prompt_tokens_per_query")
    presentations = shuffled_block.get("num_presentations")
    psi_cost = phase_cost(folder, "psi")  # every query's CPU seconds, over resumes and processes
    return {
        "scorer": folder.name,
        "paradigm": run_paradigm(folder),
        "presentations": presentations,
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
        "tokens_per_shuffled_presentation": (
            shuffle_tokens / presentations if shuffle_tokens is not None and presentations else None
        ),
        "summary": shuffled,  # every metric's mean and CI over the shuffles
        "per_query": shuffled_block.get("per_query", {}),
        "given_per_query": {
            q: float(v["ndcg@10"])
            for q, v in metrics.get("per_query", {}).items()
            if "ndcg@10" in v
        },
        "cpus": recorded_cpus(folder),
        "psi_cpu_seconds": psi_cost.cpu_seconds if psi_cost and psi_cost.complete else None,
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


# The per-query figures the paired tests compare (keys of ``per_query``).
PAIRED_METRICS = ("tau_psi", "ndcg_mean", "score_spread")


def paired_rows(
    rows: Sequence[Mapping[str, Any]],
    *,
    seed: int = 0,
    base: Mapping[str, Any] | None = None,
    stream: str = "",
) -> list[dict[str, Any]]:
    """Each scorer against ``base`` (default: the first row, off-the-shelf), paired over
    queries: the :data:`PAIRED_METRICS` (τ-PSI, nDCG@10 over the shuffles, score spread).
    Seeded paired bootstrap (95% CI) and a paired permutation test; ``stream`` (e.g. the
    collection) names the random streams apart when the same scorers are paired elsewhere."""
    if not rows or (base is None and len(rows) < 2):
        return []  # nothing to pair: no rows, or only the base itself
    base = rows[0] if base is None else base
    out = []
    for r in rows:
        if r["scorer"] == base["scorer"]:
            continue
        for metric in PAIRED_METRICS:
            qids = [q for q in base["per_query"] if q in r["per_query"]]
            if not qids or metric not in r["per_query"][qids[0]]:
                continue
            a = np.array([r["per_query"][q][metric] for q in qids])
            b = np.array([base["per_query"][q][metric] for q in qids])
            name = f"{r['scorer']}/{metric}"
            if base is not rows[0]:
                name = f"{r['scorer']}-vs-{base['scorer']}/{metric}"
            words = (stream, name) if stream else (name,)
            boot = paired_comparison(a, b, stream=(seed, *words))
            out.append(
                {
                    "scorer": r["scorer"],
                    "metric": metric,
                    "queries": len(qids),
                    **boot,
                }
            )
    return out


def processors_line(rows: Sequence[Mapping[str, Any]]) -> str:
    """Where the rows ran (``provenance.json``): the processors recorded; when they differ, each
    row's; the rows with a command from before the processor was recorded."""
    unknown = "not recorded"
    known = sorted({c for r in rows for c in r["cpus"] if c != unknown})
    line = f"Processors (provenance.json): {'; '.join(known) or 'none recorded'}."
    if len(known) > 1:
        line += (
            " The rows were not all computed on one kind of processor: "
            + "; ".join(f"{r['scorer']}: {', '.join(r['cpus']) or 'no provenance'}" for r in rows)
            + "."
        )
    unrecorded = [r["scorer"] for r in rows if unknown in r["cpus"] or not r["cpus"]]
    if unrecorded and known:
        line += (
            f" Not recorded for {', '.join(unrecorded)} (a command from before provenance "
            "recorded the processor)."
        )
    return line


def _scorer_table(rows: Sequence[Mapping[str, Any]], seconds: Mapping[str, float]) -> list[str]:
    """One row per scorer run folder."""
    ms = sorted({r["presentations"] for r in rows if r.get("presentations")})
    over = (
        f"over {ms[0]} shuffles"
        if len(ms) == 1
        else "over the shuffles (M: "
        + (", ".join(f"{r['scorer']} {r.get('presentations')}" for r in rows) + ")")
    )
    head = ["scorer", "queries", "nDCG@10 (given order)", f"nDCG@10 {over} [95% CI]"]
    head += ["τ-PSI [95% CI]", "ΔnDCG@10", "top-10 flip rate"]
    head += ["score spread (mean within-query std)", "tied share", "τ-PSI same-order null"]
    head += ["forward passes per query (null variant)", "prompt tokens per query (null variant)"]
    head += ["wall s (PSI step)", "CPU s (PSI, all queries)"]
    table = []
    for r in rows:
        tok = r.get("tokens_per_presentation")
        table.append(
            [r["scorer"], r["queries"], _fmt(r["ndcg10_given"])]
            + [_fmt(_mean(r, "ndcg_shuffled"), r["ndcg_shuffled"])]
            + [_fmt(_mean(r, "tau_psi"), r["tau_psi"]), _fmt(r["delta_ndcg"])]
            + [_fmt(r[k]) for k in ("flip_topk", "score_spread", "tied_share", "null_tau_psi")]
            + [_fmt(r["passes_per_presentation"]), "—" if tok is None else f"{tok:.0f}"]
            + [_fmt0(seconds.get(f"psi {r['scorer']}")), _fmt0(r["psi_cpu_seconds"])]
        )
    return markdown_table(head, table)


def _paired_table(paired: Sequence[Mapping[str, Any]], diff: str, sign: int = 1) -> list[str]:
    """The paired rows, the difference ``diff`` (``sign`` -1: the negated difference)."""
    head = ["scorer" if sign == 1 else "student", "metric", "queries", diff]
    head += ["bootstrap p", "permutation p"]
    table = []
    for p in paired:
        low, high = (p["ci_low"], p["ci_high"]) if sign == 1 else (-p["ci_high"], -p["ci_low"])
        cell = f"{sign * p['mean_diff']:+.3f} [{low:+.3f}, {high:+.3f}]"
        table.append([p["scorer"], p["metric"], p["queries"], cell])
        table[-1] += [f"{p['p_value']:.3g}", f"{p['permutation_p']:.3g}"]
    return markdown_table(head, table)


def _goal_table(
    rows: Sequence[Mapping[str, Any]], paired: Sequence[Mapping[str, Any]]
) -> list[str]:
    """Each trained scorer against the issue's goal, the first row the off-the-shelf base."""
    base = rows[0]
    ndcg = {p["scorer"]: p for p in paired if p["metric"] == "ndcg_mean"}
    table = []
    for r in rows[1:]:
        ratio = (_mean(r, "tau_psi") or 0.0) / (_mean(base, "tau_psi") or float("nan"))
        d = ndcg.get(r["scorer"])
        kept = d is not None and d["ci_high"] >= 0  # not significantly below
        table.append([r["scorer"], f"{ratio:.2f}", "yes" if ratio <= 0.5 else "no"])
        table[-1] += ["yes" if kept else "no", _verdict(collapsed(r, base))]
    head = ["scorer", "τ-PSI / off-the-shelf", "halved", "nDCG over shuffles kept", "collapsed"]
    return markdown_table(head, table)


def study_table(
    run_dirs: Sequence[str | Path],
    timings: str | Path | None = None,
    *,
    from_scores: bool = False,
) -> str:
    """The study's Markdown: one row per scorer run folder, then each scorer paired against the
    first (off-the-shelf) and the verdict on the issue's goal (τ-PSI halved, no loss of nDCG@10
    over the shuffles, no collapse of the score spread). ``from_scores``: every figure
    recomputed from the folders' scores instead of read from their json files."""
    rows = [study_row(d, from_scores=from_scores) for d in run_dirs]
    lines = [*_scorer_table(rows, step_seconds(timings)), "", processors_line(rows)]
    paired = paired_rows(rows)
    if not paired:
        return "\n".join(lines) + "\n"
    lines += [
        "",
        f"Paired over queries against `{rows[0]['scorer']}` (difference = scorer − "
        f"{rows[0]['scorer']}; seeded paired bootstrap, 95% CI; paired permutation test):",
        "",
        *_paired_table(paired, "mean difference [95% CI]"),
    ]
    ocsft = next((r for r in rows if r["scorer"] == "oc-sft"), None)
    students = [r for r in rows if r["scorer"] in STUDENT_NAMES and r is not ocsft]
    if ocsft is not None and students:
        lines += [
            "",
            "OC-SFT against each other student, paired over queries (difference = "
            "oc-sft − student; the claim under test: OC-SFT has the lowest τ-PSI of the "
            "trained scorers at equal nDCG@10):",
            "",
            *_paired_table(paired_rows(students, base=ocsft), "oc-sft − student [95% CI]", -1),
        ]
    lines += [
        "",
        "Goal (issues 5 and 13): τ-PSI at most half the off-the-shelf scorer's, nDCG@10 over the "
        "shuffles not below it (paired mean difference ≥ 0 or its CI covering 0), and no "
        "collapse (spread ≥ half the off-the-shelf spread, tied share ≤ 0.5).",
        "",
        *_goal_table(rows, paired),
    ]
    return "\n".join(lines) + "\n"
