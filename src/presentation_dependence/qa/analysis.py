"""From per-question QA records to ``qa/qa_metrics.json`` (no model call).

For each variant (every perturbation and the ``same_order`` null) and question, with S the
(M, n) matrix of paragraph scores over its M presentations:

* ranking: ``tau_psi``, ``mean_tau``, ``ndcg_mean`` (QA nDCG@k, gold paragraphs relevant),
  ``delta_ndcg``, ``ndcg_std``, ``score_var``, ``rank_var``
  (:func:`~presentation_dependence.robustness.analysis.query_metrics`);
* retained paragraphs: ``jaccard_retained`` (mean pairwise Jaccard of the M retained sets),
  ``retained_changed`` (1 if any presentation retains another set than the first),
  ``gold_recall`` (share of gold paragraphs retained, mean over presentations);
* answers: ``answer_flip`` (1 if the normalised answers of the M presentations are not all the
  same; its mean over questions is the answer flip rate), ``distinct_answers``, ``em`` and
  ``f1`` (means over presentations);
* flip direction against the given-order answer (the null's first presentation):
  ``right_to_wrong`` / ``wrong_to_right`` (share of presentations) and ``any_right_to_wrong`` /
  ``any_wrong_to_right`` (0/1).

Means over questions carry seeded percentile-bootstrap intervals
(:func:`~presentation_dependence.metrics.stats.mean_with_ci`; non-finite values are dropped and
``n`` says how many counted). EM and F1 of the given order and of each variant are compared with
the all-paragraphs control, paired by question (bootstrap CI and p, permutation p).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from presentation_dependence.config.robustness_config import RobustnessConfig
from presentation_dependence.metrics.decisions import (
    answer_flip,
    mean_pairwise_jaccard,
    retained_set_changed,
)
from presentation_dependence.metrics.ranking import ndcg_at_k
from presentation_dependence.metrics.stats import (
    mean_with_ci,
    named_rng,
    paired_comparison,
)
from presentation_dependence.qa.scoring import flip_directions
from presentation_dependence.robustness.analysis import query_metrics
from presentation_dependence.robustness.store import NULL

__all__ = ["analyse_qa", "question_metrics"]

Record = Mapping[str, Any]


def _gold(rec: Record, relevant_grade: int) -> frozenset[str]:
    return frozenset(
        d for d, g in zip(rec["docids"], rec["grades"], strict=True) if g >= relevant_grade
    )


def _recall(retained: Sequence[str], gold: frozenset[str]) -> float:
    return len(gold.intersection(retained)) / len(gold) if gold else float("nan")


def question_metrics(rec: Record, variant: str, rob: RobustnessConfig) -> dict[str, float]:
    """Every per-question metric of one variant (see the module docstring)."""
    rows = rec["variants"][variant]
    scores = np.array([r["scores"] for r in rows], dtype=np.float64)
    grades = np.array(rec["grades"], dtype=np.int64)
    ideal = np.array(rec["ideal_grades"], dtype=np.int64)
    ranking_only = dataclasses.replace(rob, retain_top_k=None, retain_threshold=None)
    out = query_metrics(scores, grades, ideal, ranking_only)
    sets = [frozenset(r["retained"]) for r in rows]
    gold = _gold(rec, rob.relevant_grade)
    given_right = rec["variants"][NULL][0]["em"] == 1.0
    dirs = flip_directions(given_right, [r["em"] == 1.0 for r in rows])
    out.update(
        jaccard_retained=mean_pairwise_jaccard(sets),
        retained_changed=float(retained_set_changed(sets)),
        gold_recall=float(np.mean([_recall(r["retained"], gold) for r in rows])),
        answer_flip=float(answer_flip([r["answer"] for r in rows])),
        distinct_answers=float(len({r["normalized_answer"] for r in rows})),
        em=float(np.mean([r["em"] for r in rows])),
        f1=float(np.mean([r["f1"] for r in rows])),
        right_to_wrong=dirs.right_to_wrong,
        wrong_to_right=dirs.wrong_to_right,
        any_right_to_wrong=dirs.any_right_to_wrong,
        any_wrong_to_right=dirs.any_wrong_to_right,
    )
    return out


def _ci(values: Sequence[float], rob: RobustnessConfig, seed: int, *names: str) -> dict[str, Any]:
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return {"mean": None, "ci_low": None, "ci_high": None, "n": 0}
    return mean_with_ci(
        v,
        named_rng(seed, *names),
        n_resamples=rob.bootstrap_resamples,
        confidence=rob.confidence,
    )


def _paired(
    a: Sequence[float], b: Sequence[float], rob: RobustnessConfig, seed: int, *names: str
) -> dict[str, float]:
    """Mean of a − b over questions, its bootstrap CI and p, and the permutation-test p."""
    boot = paired_comparison(
        a,
        b,
        stream=(seed, *names),
        n_resamples=rob.bootstrap_resamples,
        confidence=rob.confidence,
        tags=(("bootstrap",), ("permutation",)),
    )
    p_boot = boot.pop("p_value")
    p_perm = boot.pop("permutation_p")
    return {**boot, "p_bootstrap": p_boot, "p_permutation": p_perm}


def _cost(records: Sequence[Record], variant: str) -> dict[str, float]:
    rows = [rec["variants"][variant] for rec in records]
    return {
        "forward_passes_per_question": float(
            np.mean([sum(r["forward_passes"] for r in rs) for rs in rows])
        ),
        "prompt_tokens_per_question": float(
            np.mean([sum(r["prompt_tokens"] for r in rs) for rs in rows])
        ),
        "reads_per_question": float(np.mean([len(rs) for rs in rows])),
        "generations_per_question": float(
            np.mean([sum(not r["cached"] for r in rs) for rs in rows])
        ),
    }


def analyse_qa(records: Sequence[Record], rob: RobustnessConfig, *, seed: int) -> dict[str, Any]:
    """``qa_metrics.json`` from the per-question records (``qa/qa_records.jsonl``)."""
    if not records:
        raise ValueError("no QA records")
    qids = [str(rec["qid"]) for rec in records]
    per_question = _per_question(records, rob)

    def column(key: str) -> list[float]:
        return [float(per_question[q][key]) for q in qids]

    variants = [v for v in records[0]["variants"] if v != NULL] + [NULL]
    given_right = [rec["variants"][NULL][0]["em"] == 1.0 for rec in records]
    return {
        "num_questions": len(records),
        "ndcg_k": rob.ndcg_k,
        "confidence": rob.confidence,
        "relevant_grade": rob.relevant_grade,
        "control": {
            "em": _ci(column("control_em"), rob, seed, "control", "em"),
            "f1": _ci(column("control_f1"), rob, seed, "control", "f1"),
        },
        "given_order": _given_order(column, rob, seed),
        "variants": {
            var: _variant(records, var, qids, given_right, column, rob, seed) for var in variants
        },
        "per_question": per_question,
        "cost": _costs(records, variants),
    }


def _per_question(records: Sequence[Record], rob: RobustnessConfig) -> dict[str, dict[str, float]]:
    """Each question's control answer and given-order reading (the null's first presentation)."""
    out = {}
    for rec in records:
        g, c = rec["variants"][NULL][0], rec["control"]
        out[str(rec["qid"])] = {
            "control_em": c["em"],
            "control_f1": c["f1"],
            "given_em": g["em"],
            "given_f1": g["f1"],
            "given_ndcg": ndcg_at_k(
                g["scores"], rec["grades"], k=rob.ndcg_k, ideal_gains=rec["ideal_grades"]
            ),
            "given_gold_recall": _recall(g["retained"], _gold(rec, rob.relevant_grade)),
        }
    return out


def _given_order(
    column: Callable[[str], list[float]], rob: RobustnessConfig, seed: int
) -> dict[str, Any]:
    """The given order's means over questions, its EM and F1 paired with the control's."""
    return {
        "ndcg": _ci(column("given_ndcg"), rob, seed, "given", "ndcg"),
        "em": _ci(column("given_em"), rob, seed, "given", "em"),
        "f1": _ci(column("given_f1"), rob, seed, "given", "f1"),
        "gold_recall": _ci(column("given_gold_recall"), rob, seed, "given", "gold_recall"),
        "vs_control": {
            m: _paired(column(f"given_{m}"), column(f"control_{m}"), rob, seed, "given", m)
            for m in ("em", "f1")
        },
    }


def _variant(
    records: Sequence[Record],
    var: str,
    qids: Sequence[str],
    given_right: Sequence[bool],
    column: Callable[[str], list[float]],
    rob: RobustnessConfig,
    seed: int,
) -> dict[str, Any]:
    """One variant: its means over questions, its EM and F1 paired with the control's, its
    flips against the given-order answer, and its per-question metrics."""
    pq = {q: question_metrics(rec, var, rob) for q, rec in zip(qids, records, strict=True)}
    names = next(iter(pq.values())).keys()
    return {
        "num_presentations": len(records[0]["variants"][var]),
        "summary": {k: _ci([pq[q][k] for q in qids], rob, seed, var, k) for k in names},
        "vs_control": {
            k: _paired([pq[q][k] for q in qids], column(f"control_{k}"), rob, seed, var, k)
            for k in ("em", "f1")
        },
        "flip_counts": _flip_counts(
            [rec["variants"][var] for rec in records], given_right, [pq[q] for q in qids]
        ),
        "per_query": pq,
    }


def _flip_counts(
    rows: Sequence[Sequence[Record]],
    given_right: Sequence[bool],
    pq: Sequence[Mapping[str, float]],
) -> dict[str, int]:
    """Presentations whose answer turned right to wrong (or back) against the given order's,
    and the questions where any did, or where the answers differ."""
    return {
        "presentations": sum(len(rs) for rs in rows),
        "right_to_wrong": sum(
            sum(r["em"] != 1.0 for r in rs) for rs, ok in zip(rows, given_right, strict=True) if ok
        ),
        "wrong_to_right": sum(
            sum(r["em"] == 1.0 for r in rs)
            for rs, ok in zip(rows, given_right, strict=True)
            if not ok
        ),
        "questions_any_right_to_wrong": int(sum(m["any_right_to_wrong"] for m in pq)),
        "questions_any_wrong_to_right": int(sum(m["any_wrong_to_right"] for m in pq)),
        "questions_answer_flip": int(sum(m["answer_flip"] for m in pq)),
    }


def _costs(records: Sequence[Record], variants: Sequence[str]) -> dict[str, Any]:
    """Each variant's cost per question, the control's, and the wall time."""
    cost: dict[str, Any] = {var: _cost(records, var) for var in variants}
    cost["control"] = {
        "reads_per_question": 1.0,
        "generations_per_question": float(np.mean([not r["control"]["cached"] for r in records])),
    }
    seconds = [float(rec.get("seconds", 0.0)) for rec in records]
    cost["seconds_per_question"] = {"mean": float(np.mean(seconds)), "total": float(sum(seconds))}
    return cost
