"""Scorers compared on the same QA questions: one ``qa_metrics.json`` per scorer (off the shelf,
BSC, trained students, ...), each run by ``presdep qa`` with the same data, robustness and reader
blocks and only the ``reranker`` block changed.

:func:`compare_qa` tabulates every scorer's means over questions for one variant (default
``random_shuffle``) and pairs each scorer with the first one (the reference, off the shelf) per
question: mean difference, seeded paired-bootstrap interval and paired permutation-test p
(:mod:`presentation_dependence.metrics.stats`). ``exclude`` drops questions from every figure,
e.g. those a trained student saw in training or λ selection, so the comparison is on unseen
questions only; the table says how many counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from presentation_dependence.io.markdown import markdown_table
from presentation_dependence.metrics.stats import (
    mean_with_ci,
    named_rng,
    paired_comparison,
)

__all__ = ["COMPARED", "compare_qa", "render_comparison"]

# (per-question metric, label); higher is better for ndcg_mean, em, f1, jaccard_retained.
COMPARED = (
    ("ndcg_mean", "QA nDCG@10 (mean over presentations)"),
    ("tau_psi", "τ-PSI"),
    ("score_spread", "score spread"),
    ("jaccard_retained", "retained-set Jaccard"),
    ("answer_flip", "answer flip rate"),
    ("em", "EM"),
    ("f1", "F1"),
)


def compare_qa(
    metrics: Mapping[str, Mapping[str, Any]],
    *,
    variant: str = "random_shuffle",
    exclude: frozenset[str] = frozenset(),
    seed: int = 0,
    n_resamples: int = 2000,
) -> dict[str, Any]:
    """``{label: qa_metrics.json}`` (the first label is the reference) -> summary and paired
    differences over the questions every scorer answered, minus ``exclude``."""
    if not metrics:
        raise ValueError("no QA runs to compare")
    labels = list(metrics)
    for label in labels:
        if variant not in metrics[label]["variants"]:
            raise ValueError(f"{label}: no variant {variant!r} in its qa_metrics.json")
    per = {lab: metrics[lab]["variants"][variant]["per_query"] for lab in labels}
    common = set.intersection(*(set(p) for p in per.values())) - set(exclude)
    qids = [q for q in per[labels[0]] if q in common]  # data order of the reference
    if not qids:
        raise ValueError("the runs share no question outside the excluded ones")
    keys = [k for k, _ in COMPARED if all(k in per[lab][qids[0]] for lab in labels)]
    out: dict[str, Any] = {
        "variant": variant,
        "reference": labels[0],
        "num_questions": len(qids),
        "excluded": sorted(set(exclude) & set().union(*(set(p) for p in per.values()))),
        "scorers": {},
    }
    for lab in labels:
        col = {k: np.array([per[lab][q][k] for q in qids], dtype=np.float64) for k in keys}
        block: dict[str, Any] = {
            "num_presentations": metrics[lab]["variants"][variant]["num_presentations"],
            "summary": {
                k: mean_with_ci(col[k], named_rng(seed, lab, k), n_resamples=n_resamples)
                for k in keys
            },
        }
        if lab != labels[0]:
            ref = {k: np.array([per[labels[0]][q][k] for q in qids]) for k in keys}
            block["vs_reference"] = {}
            for k in keys:
                boot = paired_comparison(
                    col[k],
                    ref[k],
                    stream=(seed, lab, k),
                    n_resamples=n_resamples,
                    tags=(("boot",), ("perm",)),
                )
                boot["p_permutation"] = boot.pop("permutation_p")
                block["vs_reference"][k] = boot
        out["scorers"][lab] = block
    return out


def render_comparison(comparison: Mapping[str, Any], descriptions: Sequence[str] = ()) -> str:
    """Markdown: one row per scorer, then the paired differences against the reference."""
    keys = [k for k, _ in COMPARED if k in next(iter(comparison["scorers"].values()))["summary"]]
    names = dict(COMPARED)
    head = ["scorer", "M", *(names[k] for k in keys)]
    lines = [
        f"{comparison['num_questions']} questions ({len(comparison['excluded'])} excluded), "
        f"variant `{comparison['variant']}`; means over questions with 95% percentile-bootstrap "
        "intervals.",
        "",
    ]
    rows = []
    for lab, block in comparison["scorers"].items():
        cells = [
            f"{block['summary'][k]['mean']:.3f} [{block['summary'][k]['ci_low']:.3f}, "
            f"{block['summary'][k]['ci_high']:.3f}]"
            for k in keys
        ]
        rows.append([lab, block["num_presentations"], *cells])
    ref = comparison["reference"]
    lines += markdown_table(head, rows)
    lines += [
        "",
        f"Paired by question, scorer − {ref} (mean difference [95% paired-bootstrap CI], "
        "permutation p):",
        "",
    ]
    rows = []
    for lab, block in comparison["scorers"].items():
        if lab == ref:
            continue
        cells = [
            f"{d['mean_diff']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}], "
            f"p = {d['p_permutation']:.2g}"
            for d in (block["vs_reference"][k] for k in keys)
        ]
        rows.append([lab, *cells])
    lines += markdown_table(["scorer", *(names[k] for k in keys)], rows)
    if descriptions:
        lines += ["", *descriptions]
    return "\n".join(lines) + "\n"
