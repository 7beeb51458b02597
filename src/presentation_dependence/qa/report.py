"""``qa/qa_metrics.json`` as Markdown tables (``scripts/qa_doc.py`` puts them in docs/QA.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from presentation_dependence.io.markdown import markdown_table
from presentation_dependence.presentations import NULL
from presentation_dependence.report.markers import markers
from presentation_dependence.report.markers import splice as _splice

__all__ = ["END", "START", "measured_by", "render_qa_markdown", "splice"]

# (key in a variant's summary, label); shares are over presentations unless said otherwise.
_ROWS = (
    ("ndcg_mean", "QA nDCG@{k} (mean over presentations)"),
    ("delta_ndcg", "ΔnDCG@{k} (max − min over presentations)"),
    ("tau_psi", "τ-PSI"),
    ("jaccard_retained", "retained-set Jaccard (mean pairwise)"),
    ("retained_changed", "retained set changed (share of questions)"),
    ("gold_recall", "gold paragraphs retained (recall)"),
    ("answer_flip", "**answer flip rate** (share of questions)"),
    ("distinct_answers", "distinct normalised answers per question"),
    ("em", "EM (mean over presentations)"),
    ("f1", "F1 (mean over presentations)"),
    ("right_to_wrong", "right→wrong vs given order (share of presentations)"),
    ("wrong_to_right", "wrong→right vs given order (share of presentations)"),
    ("any_right_to_wrong", "questions with a right→wrong flip (share)"),
    ("any_wrong_to_right", "questions with a wrong→right flip (share)"),
)


def _ci(block: Mapping[str, Any] | None) -> str:
    if not block or block.get("mean") is None:
        return "n/a"
    return f"{block['mean']:.3f} [{block['ci_low']:.3f}, {block['ci_high']:.3f}]"


def _diff(block: Mapping[str, Any]) -> str:
    return (
        f"{block['mean_diff']:+.3f} [{block['ci_low']:+.3f}, {block['ci_high']:+.3f}], "
        f"p = {block['p_permutation']:.3g}"
    )


# (key in a variant's flip counts, label)
_FLIPS = (
    ("presentations", "presentations read"),
    ("right_to_wrong", "right→wrong presentations"),
    ("wrong_to_right", "wrong→right presentations"),
    ("questions_answer_flip", "questions whose answer flips"),
    ("questions_any_right_to_wrong", "questions with a right→wrong flip"),
    ("questions_any_wrong_to_right", "questions with a wrong→right flip"),
)


def render_qa_markdown(metrics: Mapping[str, Any]) -> str:
    """Three tables: order instability and flips per variant; EM/F1 against the control; cost."""
    variants = list(metrics["variants"])
    head = [
        f"{v} (M = {metrics['variants'][v]['num_presentations']})"
        if v != NULL
        else f"same-order null (M = {metrics['variants'][v]['num_presentations']})"
        for v in variants
    ]
    out = _setup_lines(metrics)
    rows = [
        [
            label.format(k=metrics["ndcg_k"]),
            *(_ci(metrics["variants"][v]["summary"].get(key)) for v in variants),
        ]
        for key, label in _ROWS
    ]
    out += markdown_table(["metric", *head], rows)
    out += ["", *_answers_table(metrics, variants)]
    rows = [
        [label, *(metrics["variants"][v]["flip_counts"][key] for v in variants)]
        for key, label in _FLIPS
    ]
    out += ["", *markdown_table(["flips (counts)", *head], rows)]
    out += _cost_lines(metrics.get("cost", {}), variants)
    return "\n".join(out) + "\n"


def _setup_lines(metrics: Mapping[str, Any]) -> list[str]:
    """What was measured, and the given (first-stage) order's ranking."""
    k = metrics["ndcg_k"]
    level = round(100 * metrics["confidence"])
    setup = metrics.get("setup", {})
    return [
        f"{metrics['num_questions']} questions; retention {setup.get('retention', '?')}, "
        f"reader order {setup.get('reader_order', '?')}; reader `{setup.get('reader', {}).get('name', '?')}`; "
        f"means over questions with {level}% percentile-bootstrap intervals "
        f"(seed {setup.get('presentation_seed', '?')}).",
        "",
        f"Given (first-stage) order: QA nDCG@{k} {_ci(metrics['given_order']['ndcg'])}, "
        f"gold recall of the retained paragraphs {_ci(metrics['given_order']['gold_recall'])}.",
        "",
    ]


def _answers_table(metrics: Mapping[str, Any], variants: Sequence[str]) -> list[str]:
    """EM and F1 of each reader input, against the all-paragraphs control."""
    g = metrics["given_order"]
    rows = [
        [
            "all paragraphs, given order (control)",
            _ci(metrics["control"]["em"]),
            _ci(metrics["control"]["f1"]),
            "",
            "",
        ],
        [
            "retained, given order",
            _ci(g["em"]),
            _ci(g["f1"]),
            _diff(g["vs_control"]["em"]),
            _diff(g["vs_control"]["f1"]),
        ],
    ]
    for v in variants:
        block = metrics["variants"][v]
        s = block["summary"]
        rows.append(
            [
                f"retained, {v} (mean over presentations)",
                _ci(s["em"]),
                _ci(s["f1"]),
                _diff(block["vs_control"]["em"]),
                _diff(block["vs_control"]["f1"]),
            ]
        )
    header = ["reader input", "EM", "F1", "ΔEM vs control", "ΔF1 vs control"]
    out = markdown_table(header, rows, compact_empty=True)
    return out


def _cost_lines(cost: Mapping[str, Any], variants: Sequence[str]) -> list[str]:
    """The cost per question (none when the metrics hold no cost)."""
    if not cost:
        return []
    parts = [
        f"{v}: {cost[v]['forward_passes_per_question']:.1f} scoring passes, "
        f"{cost[v]['generations_per_question']:.1f} of {cost[v]['reads_per_question']:.0f} "
        "reads generated"
        for v in variants
        if v in cost
    ]
    sec = cost.get("seconds_per_question", {})
    return [
        "",
        "Cost per question: " + "; ".join(parts) + f"; control: 1 read. "
        f"Wall time {sec.get('mean', 0.0):.1f} s per question, {sec.get('total', 0.0) / 60:.1f} min "
        "in all (the rest of the reads were answered from the prompt-hash cache).",
    ]


START, END = markers("qa-results")


def measured_by(provenance: Mapping[str, Any]) -> str:
    """One line naming the last ``presdep qa`` invocation that computed questions."""
    runs = [
        inv
        for inv in provenance.get("invocations", [])
        if inv.get("phase") == "qa" and inv.get("queries", {}).get("to_compute")
    ]
    if not runs:
        return "Measured by: (no recorded `presdep qa` invocation)."
    inv = runs[-1]
    git = inv.get("git", {})
    commit = (git.get("commit") or "?")[:12] + (" (dirty)" if git.get("dirty") else "")
    return (
        f"Measured by `{' '.join(inv.get('command', []))}` at {inv.get('time_utc', '?')}, "
        f"git {commit}, torch {inv.get('packages', {}).get('torch', '?')}, "
        f"transformers {inv.get('packages', {}).get('transformers', '?')}."
    )


def splice(doc: str, block: str) -> str:
    """``doc`` with the text between the qa-results markers replaced by ``block``."""
    return _splice(doc, block, START, END)
