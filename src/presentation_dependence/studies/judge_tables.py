"""A judge study's tables and figure, from its runs (:func:`~.judge_study.load_study`).

Runs on one response set (``data.dataset``) are compared: every run of a set against the set's
readout run (or, without one, the first two runs), paired on their common (item, placement)
calls.

Figures per judge run, all from the records: the summary of
:func:`~presentation_dependence.judge.scoring.summary.summarise_records` (both conventions, accuracy by
slot with Wilson intervals, best-worst spread with its item bootstrap), the **verdict flip rate
across placements** (:func:`~.judge_study.placement_flips`), the paired comparison of two judges
(:func:`~presentation_dependence.judge.scoring.paired.compare_runs`: exact McNemar and the paired item
bootstrap), and the rerun noise in units of the score's standard error
(:func:`~presentation_dependence.judge.scoring.noise.compare_reruns`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from presentation_dependence.judge.gate import GateConfig, decide
from presentation_dependence.judge.report import (
    _ci,
    _table,
    compare_markdown,
    fmt,
    fmt_ci,
    noise_markdown,
    paired_tests_markdown,
    ranking_markdown,
    sweep_markdown,
)
from presentation_dependence.judge.scoring.paired import compare_runs
from presentation_dependence.judge.scoring.summary import correct_in_every_placement
from presentation_dependence.metrics.stats import named_rng
from presentation_dependence.report.figures import _plt, _png
from presentation_dependence.runners.readback import recorded_cpus
from presentation_dependence.studies.judge_study import StudyRun, placement_flips

__all__ = ["GATE_HEAD", "gate_cells", "overview_table", "paired_markdown", "slot_accuracy_png"]
__all__ += ["study_markdown"]


def _rerun_noise(run: StudyRun) -> dict[str, Any] | None:
    if not run.rerun:
        return None
    within = [c for c in run.rerun.get("comparisons", []) if "run 1 vs run 0" in c["label"]]
    return within[0] if within else None


def _noise_cell(noise: dict[str, Any] | None, records: int) -> str:
    """The rerun noise in SE units; with the calls it was measured on when the rerun judged
    only a share of the sweep's (``--rerun-items``)."""
    if noise is None:
        return "not run"
    if noise["records"] < records:
        return f"{fmt(noise['noise_to_se'])} ({noise['records']} of {records} calls)"
    return fmt(noise["noise_to_se"])


def overview_table(runs: Sequence[StudyRun]) -> str:
    """One row per judge run: accuracy (both conventions), parse failures, slots, spread, flips,
    the items judged right in every placement (right and not flipping), rerun noise and cost per
    call."""
    rows = []
    for r in runs:
        s, fl = r.summary, placement_flips(r.records, r.summary["confidence"])
        slots = [x for x in s["slots"] if x["n"]]
        best = max(slots, key=lambda x: x["accuracy"])
        worst = min(slots, key=lambda x: x["accuracy"])
        f0, fc, sp = s["score_fail0"], s["score_fail_chance"], s["slot_spread"]
        noise = _rerun_noise(r)
        per_call = r.cpu_seconds / s["records"] if r.cpu_seconds else None
        rows.append(
            [
                f"`{r.run_id}`",
                r.judge_class,
                s["items"],
                fmt(s["placements_per_item"], 0),
                _ci(f0),
                _ci(fc),
                fmt_ci(s["parse_failure_rate"], *s["parse_failure_ci"]),
                f"{best['slot']} {fmt(best['accuracy'])} / {worst['slot']} {fmt(worst['accuracy'])}",
                _ci(sp, "spread"),
                f"{fmt_ci(fl['flip_share'], *fl['flip_ci'])} of {fl['items_all_parsed']}",
                fmt(correct_in_every_placement(r.records)),
                _noise_cell(noise, s["records"]),
                fmt(per_call, 2),
            ]
        )
    conf = round(100 * runs[0].summary["confidence"])
    return _table(
        [
            "run",
            "judge",
            "items",
            "placements/item",
            f"accuracy, failure = 0 [{conf}% CI]",
            f"accuracy, failure = 1/N [{conf}% CI]",
            "parse failure rate [Wilson]",
            "best / worst slot",
            f"spread [{conf}% bootstrap]",
            "items whose verdict flips across placements [Wilson]",
            "items right in every placement",
            "rerun noise ÷ SE",
            "CPU s per call",
        ],
        rows,
    )


def _processor_table(runs: Sequence[StudyRun]) -> str:
    """Which processor computed how many of each run's units (``unit_costs.jsonl``): bfloat16
    verdicts follow the CPU's kernels, so a run resumed on another machine says so here. A run
    from before units recorded their cost names the processors of its invocations instead."""

    def cell(counts: Mapping[str, int], folder: Path, ran: bool) -> str:
        if counts:
            return "; ".join(f"{n} on {cpu}" for cpu, n in counts.items())
        cpus = recorded_cpus(folder) if ran else []
        return f"{' / '.join(cpus)} (units not counted)" if cpus else "—"

    rows = [
        [
            f"`{r.run_id}`",
            cell(r.processors, r.folder, True),
            cell(r.rerun_processors, r.folder / "rerun", r.rerun is not None),
        ]
        for r in runs
    ]
    return _table(["run", "units by processor", "rerun units by processor"], rows)


def _pairs(runs: Sequence[StudyRun]) -> list[tuple[StudyRun, StudyRun]]:
    """Every run of a set against the set's first readout run, or the first two runs."""
    readout = [r for r in runs if r.judge_class == "readout"]
    if readout:
        return [(r, readout[0]) for r in runs if r is not readout[0]]
    return [(runs[0], runs[1])] if len(runs) >= 2 else []


def paired_markdown(a: StudyRun, b: StudyRun) -> str:
    """Run A vs run B (e.g. generative vs readout) on their common (item, placement) calls."""
    ka = {(r.item_id, r.placement) for r in a.records if r.repeat == 0}
    kb = {(r.item_id, r.placement) for r in b.records if r.repeat == 0}
    common = ka & kb
    if not common:
        return f"`{a.run_id}` and `{b.run_id}` share no call: not paired.\n"
    ra = [r for r in a.records if r.repeat == 0 and (r.item_id, r.placement) in common]
    rb = [r for r in b.records if r.repeat == 0 and (r.item_id, r.placement) in common]
    out = [f"On the {len(common)} calls both judged (failure = 0):\n\n"]
    for conv in ("fail0", "chance"):
        c = compare_runs(
            ra,
            rb,
            rng=named_rng(0, "study-paired", a.run_id, b.run_id, conv),
            failure_credit=conv,
            n_resamples=a.summary["bootstrap_resamples"],
            confidence=a.summary["confidence"],
        )
        if conv == "chance":
            pb = c["paired_bootstrap"]
            out.append(
                f"\nWith failure = 1/N the paired difference A − B is {pb['mean_diff']:+.3f} "
                f"[{fmt(pb['ci_low'])}, {fmt(pb['ci_high'])}] (bootstrap p {fmt(pb['p_value'])}).\n"
            )
        else:
            out.append(compare_markdown([(f"`{a.run_id}`", f"`{b.run_id}`", c)]))
    return "".join(out)


GATE_HEAD = ["cases", "k", "threshold", "mean", "noise SE", "margin (z·SE)"]
GATE_HEAD += ["verdict without margin", "verdict with margin"]


def gate_cells(verdict: Mapping[str, Any], threshold: float | None = None) -> list[Any]:
    """A gate verdict's cells under :data:`GATE_HEAD`, decided at ``threshold`` (default: its
    own) by the gate's rule (:func:`~presentation_dependence.judge.gate.decide`): a gate's mean
    and measured noise do not depend on its threshold, only the decision does."""
    t = float(verdict["threshold"] if threshold is None else threshold)
    cfg = GateConfig(threshold=t, z=float(verdict["z"]))
    decision, _, _ = decide(verdict, cfg, int(verdict["n_cases"]))
    return [
        verdict["n_cases"],
        verdict["k_used"],
        fmt(t),
        fmt(verdict["mean"], 4),
        fmt(verdict["noise_se"], 4),
        fmt(verdict["margin"], 4),
        "pass" if verdict["mean"] >= t else "fail",
        decision,
    ]


def _gate_table(runs: Sequence[StudyRun]) -> str:
    rows = [[f"`{r.run_id}`", *gate_cells(r.gate)] for r in runs if r.gate]
    return _table(["run", *GATE_HEAD], rows) if rows else ""


def study_markdown(runs: Sequence[StudyRun], figure: str | None = None) -> str:
    """The study section of docs/studies/judge-study.md from loaded runs."""
    judge_runs = [r for r in runs if r.kind == "judge"]
    parts: list[str] = []
    if judge_runs:
        parts.append("### Overview\n\n" + overview_table(judge_runs))
        if figure:
            parts.append(f"\n![Accuracy by slot with 95% Wilson intervals]({figure})\n")
    parts.append(
        "\n### Processors\n\nThe units (a judge run's parts: one item's placements; a ranking's "
        "items; a noise run's parts) each processor computed, from `unit_costs.jsonl` (lines from "
        "before units named their processor take the processor of the invocation before "
        "them):\n\n" + _processor_table(runs)
    )
    by_set: dict[str, list[StudyRun]] = defaultdict(list)
    for r in judge_runs:
        by_set[r.set_name].append(r)
    for name, rs in by_set.items():
        parts.append(f"\n### `{name}`\n")
        for r in rs:
            parts.append(
                f"\n#### `{r.run_id}` ({r.judge_class} judge)\n\n" + sweep_markdown(r.summary)
            )
        for a, b in _pairs(rs):
            parts.append(
                f"\n#### `{a.run_id}` (A) vs `{b.run_id}` (B), paired\n\n" + paired_markdown(a, b)
            )
    gate = _gate_table(judge_runs)
    if gate:
        parts.append("\n### The gate\n\n" + gate)
    for r in runs:
        if r.kind == "rank":
            parts.append(f"\n### Response ranking `{r.run_id}`\n\n" + ranking_markdown(r.summary))
        elif r.kind == "noise":
            parts.append(
                f"\n### Rerun noise against load `{r.run_id}`\n\n" + noise_markdown(r.summary)
            )
            if r.summary.get("paired_tests"):
                parts.append(
                    "\nPaired tests, run 0 of each condition against run 0 of the first "
                    "(failure = 0):\n\n" + paired_tests_markdown(r.summary)
                )
    return "".join(parts)


def slot_accuracy_png(runs: Sequence[StudyRun]) -> bytes:
    """Accuracy by slot of the correct response, with Wilson intervals, one panel per set."""
    plt = _plt()
    by_set: dict[str, list[StudyRun]] = defaultdict(list)
    for r in runs:
        if r.kind == "judge":
            by_set[r.set_name].append(r)
    n_sets = max(1, len(by_set))
    cols, rows = min(2, n_sets), (n_sets + 1) // 2  # two panels a row
    fig, grid = plt.subplots(rows, cols, figsize=(3.4 * cols, 3.4 * rows), squeeze=False)
    axes = [ax for row in grid for ax in row]
    for ax in axes[len(by_set) :]:
        ax.set_visible(False)
    for ax, (name, rs) in zip(axes, by_set.items(), strict=False):
        width = 0.8 / len(rs)
        for k, r in enumerate(rs):
            slots = r.summary["slots"]
            xs = [i + (k - (len(rs) - 1) / 2) * width for i in range(len(slots))]
            acc = [s["accuracy"] for s in slots]
            err = [
                [a - s["ci_low"] for a, s in zip(acc, slots, strict=True)],
                [s["ci_high"] - a for a, s in zip(acc, slots, strict=True)],
            ]
            label = f"{r.run_id} ({r.summary['items']} items)"
            ax.errorbar(xs, acc, yerr=err, fmt="o", capsize=3, label=label)
        n = len(rs[0].summary["slots"])
        ax.axhline(1 / n, color="grey", linewidth=0.8, linestyle=":")
        ax.set_xticks(range(n), [s["slot"] for s in rs[0].summary["slots"]])
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("slot of the correct response", fontsize=8)
        # below the panel: inside, it hides the points near 1 of a judge that prefers one slot
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    for row in grid:
        row[0].set_ylabel("accuracy (failure = 0)", fontsize=8)
    fig.tight_layout()
    return _png(fig)
