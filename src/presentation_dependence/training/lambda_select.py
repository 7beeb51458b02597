"""λ selection for OC-SFT on a held-out split that no test query is in.

For every λ of ``selection.lambdas`` an OC-SFT student is trained (or reused, when its folder
holds a student trained from the same config) and scored on the held-out queries, each in its
given order and under M seeded shuffles (``random_shuffle`` draws of the PSI protocol, seed
``selection.seed``), through the ordinary reranker with ``adapter_path``. The off-the-shelf base
model is scored the same way for reference. The chosen λ maximises ``ndcg_mean`` (mean nDCG@k
over the shuffles) or minimises ``tau_psi``, per ``selection.criterion``; ties go to the smaller
λ. Before anything is trained the held-out split is checked against the test split (same qid or
same text: refused) and against the training queries (same text, or same qid in the same
source: refused). ``lambda_selection.json`` records the curve and the choice,
``lambda_curve.md`` shows it. Trained students and held-out scores are reused on a rerun when
their config, adapter and held-out set are unchanged.

``selection.at_step`` makes the selection cheaper: every λ's run trains only to that step (its
learning-rate schedule still the full run's), the snapshots of that step are compared, and the
chosen run alone trains on to the end; its final held-out scores are ``chosen_final``. The
judgement call: a λ that wins at the step is assumed to win at the end. The learning curve
(docs/studies/content-study.md) is the evidence to check that against: the gap it measures opens early.
"""

from __future__ import annotations

import gc
import json
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from presentation_dependence.errors import ConfigError
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.io.markdown import markdown_table
from presentation_dependence.provenance import collect_provenance
from presentation_dependence.readout.adapter import adapter_sha256
from presentation_dependence.rerankers.grade import clear_model_cache
from presentation_dependence.training.config import TrainingConfig
from presentation_dependence.training.heldout_curve import (
    cached,
    evaluate_heldout,
    student_reranker,
)
from presentation_dependence.training.resume import train_record
from presentation_dependence.training.silver import SilverSet, read_silver
from presentation_dependence.training.splits import (
    JudgedQuery,
    QueryRef,
    check_disjoint,
    load_queries,
    load_split,
)

__all__ = ["choose_lambda", "evaluate_heldout", "lambda_markdown", "run_lambda_selection"]


log = logging.getLogger(__name__)


def choose_lambda(curve: Sequence[dict[str, Any]], criterion: str) -> float:
    """The λ of the best row: highest ``ndcg_mean`` or lowest ``tau_psi``; ties -> smaller λ."""
    if criterion not in ("ndcg_mean", "tau_psi"):
        raise ConfigError(f"unknown selection criterion {criterion!r}")
    sign = -1.0 if criterion == "ndcg_mean" else 1.0
    best = min(curve, key=lambda row: (round(sign * float(row[criterion]), 12), row["lambda"]))
    return float(best["lambda"])


def evaluated_row(
    sub: TrainingConfig,
    adapter: Path,
    key: dict[str, Any],
    evaluate_student: Callable[[Path], dict[str, Any]],
    at_step: int | None = None,
) -> dict[str, Any]:
    """The held-out scores of ``adapter`` (the student of ``sub``, or its snapshot of step
    ``at_step``), cached in the student's folder under the adapter's hash."""
    name = "heldout_eval.json" if at_step is None else f"heldout_eval_step-{at_step:06d}.json"
    prov = train_record(sub.resolved_output_dir) or {}
    evaluated = cached(
        sub.resolved_output_dir / name,
        {**key, "adapter_sha256": adapter_sha256(adapter)},
        "result",
        partial(evaluate_student, adapter),
    )
    return {
        "adapter": str(adapter),
        "step": prov.get("global_step") if at_step is None else at_step,
        "train_loss": prov.get("train_loss") if at_step is None else None,
        **evaluated,
    }


def _lambda_row(
    sub: TrainingConfig,
    trained: Any,
    key: dict[str, Any],
    evaluate_student: Callable[[Path], dict[str, Any]],
    at: int | None,
) -> dict[str, Any]:
    """One point of the λ curve: the student of ``sub`` (trained, or paused at ``at``) scored
    on the held-out queries."""
    if not trained.skipped:
        gc.collect()
    row = {
        "lambda": sub.lambda_,
        **evaluated_row(sub, trained.adapter_dir, key, evaluate_student, at),
    }
    clear_model_cache()
    log.info("λ=%g: nDCG shuffled %.4f, τ-PSI %.4f", sub.lambda_, row["ndcg_mean"], row["tau_psi"])
    return row


def _check_config(cfg: TrainingConfig, choose_only: bool) -> None:
    """Refuse a config λ selection cannot run, before anything is loaded."""
    sel = cfg.selection
    if cfg.variant != "oc_sft":
        raise ConfigError(
            f"λ selection tunes the OC-SFT consistency weight; {cfg.id} is {cfg.variant}"
        )
    if choose_only and sel.at_step is None:
        raise ConfigError(
            "choose-only stops before the chosen run trains on from selection.at_step, and "
            "selection.at_step is not set. Fix: set selection.at_step, or drop --choose-only"
        )
    if not cfg.splits.heldout:
        raise ConfigError("splits.heldout is empty: λ is selected on held-out queries only")
    if not cfg.splits.test:
        raise ConfigError("splits.test is empty: name the test queries so overlap can be refused")
    if sel.at_step is not None and (
        not cfg.train.keep_snapshots or sel.at_step % cfg.train.save_steps
    ):
        raise ConfigError(
            f"selection.at_step {sel.at_step} compares the snapshots of that step. Fix: set "
            f"train.keep_snapshots: true and pick a multiple of train.save_steps "
            f"({cfg.train.save_steps})"
        )


def _check_training_split(
    cfg: TrainingConfig, silver: SilverSet, heldout: Sequence[Any], refs: Sequence[Any]
) -> None:
    """Held-out queries apart from the training queries, judged where the criterion needs it."""
    train_refs = [(q.source, q.qid, q.query) for q in silver.queries]
    check_disjoint("held-out queries", refs, "training", train_refs, qid_scope="source")
    if cfg.selection.criterion == "ndcg_mean" and any(not qrels for _, _, qrels in heldout):
        raise ConfigError("criterion ndcg_mean needs judgements for every held-out query")


def lambda_markdown(result: dict[str, Any]) -> str:
    head = ["λ", "step", "nDCG@k given", "nDCG@k shuffled (mean)", "τ-PSI", "ΔnDCG"]
    head += ["score var across presentations", "train loss"]
    table = []
    rows = [result["base"], *result["curve"]]
    final = result.get("chosen_final")
    if result.get("at_step") is not None and final is not None:
        rows.append({**final, "final": True})
    for row in rows:
        lam = "base (no adapter)" if row["lambda"] is None else f"{row['lambda']:g}"
        if row.get("lambda") == result["chosen_lambda"]:
            lam = f"**{lam}** ({'chosen, trained to the end' if row.get('final') else 'chosen'})"
        loss, step = row.get("train_loss"), row.get("step")
        table.append(
            [lam, "—" if step is None else step]
            + [f"{row[k]:.4f}" for k in ("ndcg_given", "ndcg_mean", "tau_psi", "delta_ndcg")]
            + [f"{row.get('score_var', float('nan')):.4f}", "—" if loss is None else f"{loss:.4f}"]
        )
    lines = [f"λ selection ({result['config_id']}, criterion {result['criterion']}):", ""]
    lines += markdown_table(head, table)
    note = f"{result['heldout_queries']} held-out queries, M={result['num_presentations']}."
    if result.get("at_step") is not None:
        note += (
            f" λ compared at step {result['at_step']} of each run (its schedule the full "
            "run's); "
            + (
                "the chosen run then trained to the end."
                if final is not None
                else "the chosen run has not trained to the end yet (`select-lambda` without "
                "`--choose-only` trains it on)."
            )
        )
    lines += ["", note]
    return "\n".join(lines) + "\n"


def run_lambda_selection(
    cfg: TrainingConfig,
    *,
    out_dir: str | Path,
    argv: Sequence[str] | None = None,
    silver: SilverSet | None = None,
    choose_only: bool = False,
) -> dict[str, Any]:
    """Check the splits, train one OC-SFT student per λ, score them on held-out, choose.

    The student at the config's own ``lambda_`` is the config's student in its ``output_dir``
    (reused when finished); every other λ trains into ``<out_dir>/lambda-<λ>/``. With
    ``selection.at_step`` the students are compared at that step's snapshot, each run paused
    there (:func:`~.trainer.train_student`'s ``pause_at``), and only the chosen one trains on
    to the end (``chosen_final``). ``choose_only`` (needs ``at_step``) stops after the choice:
    it writes ``lambda_choice.json`` (``chosen_final`` null) and the curve, not
    ``lambda_selection.json``, which a later run without it completes."""
    # The train extra (peft, accelerate) is needed to train, not to score (curve.py, the CLI).
    from presentation_dependence.training.trainer import train_student

    sel = cfg.selection
    _check_config(cfg, choose_only)
    heldout, refs, test, silver = _checked_splits(cfg, silver)
    out = Path(out_dir)
    evaluate = {"num_presentations": sel.num_presentations, "seed": sel.seed, "ndcg_k": sel.ndcg_k}
    key = {**evaluate, "heldout": [f"{s}/{q}" for s, q, _ in refs], "student": cfg.student}

    def evaluate_student(adapter: Path | None = None) -> dict[str, Any]:
        return evaluate_heldout(student_reranker(cfg, adapter), heldout, **evaluate)

    base_result = cached(out / "base_heldout_eval.json", key, "result", evaluate_student)
    base = {"lambda": None, **base_result}
    clear_model_cache()
    at = sel.at_step
    subs = _lambda_configs(cfg, out)
    train = partial(train_student, argv=argv, silver=silver)
    curve = [
        _lambda_row(sub, train(sub, pause_at=at), key, evaluate_student, at)
        for sub in subs.values()
    ]
    chosen = choose_lambda(curve, sel.criterion)
    final = None
    if not choose_only:
        final = _chosen_final(subs, chosen, curve, at, train, key, evaluate_student)
    result = {
        "config_id": cfg.id,
        "criterion": sel.criterion,
        "chosen_lambda": chosen,
        "chosen_adapter": None if final is None else final["adapter"],
        "at_step": at,
        "curve": curve,
        "chosen_final": final,
        "base": base,
        "heldout_queries": len(heldout),
        "heldout": [f"{s}/{q}" for s, q, _ in refs],
        "test_queries_checked": len(test),
        **evaluate,
        "config": cfg.to_plain(),
        "provenance": collect_provenance(
            argv=argv, seeds={"seed": cfg.seed, "selection": sel.seed}
        ),
    }
    _write_selection(out, result, choose_only)
    return result


def _chosen_final(
    subs: dict[float, TrainingConfig],
    chosen: float,
    curve: Sequence[dict[str, Any]],
    at: int | None,
    train: Callable[[TrainingConfig], Any],
    key: dict[str, Any],
    evaluate_student: Callable[[Path], dict[str, Any]],
) -> dict[str, Any]:
    """The chosen student's held-out row: its point of the curve, or with ``at`` its run
    trained on from the step-``at`` checkpoint to the end and scored."""
    if at is None:
        return next(r for r in curve if math.isclose(r["lambda"], chosen))
    sub = subs[chosen]
    trained = train(sub)
    final = {"lambda": chosen, **evaluated_row(sub, trained.adapter_dir, key, evaluate_student)}
    clear_model_cache()
    return final


def _checked_splits(
    cfg: TrainingConfig, silver: SilverSet | None
) -> tuple[list[JudgedQuery], list[QueryRef], list[QueryRef], SilverSet]:
    """The held-out queries (and their refs), checked apart from the test split before the
    silver labels are read, then apart from the training queries; the test refs and the silver
    labels."""
    heldout = load_queries(cfg.splits.heldout, "splits.heldout")
    refs = [(s, r.query.qid, r.query.text) for s, r, _ in heldout]
    test = load_split(cfg.splits.test, "splits.test")
    check_disjoint("held-out queries", refs, "test", test)  # before the silver file is read
    silver = silver if silver is not None else read_silver(cfg.silver.path)
    _check_training_split(cfg, silver, heldout, refs)
    return heldout, refs, test, silver


def _lambda_configs(cfg: TrainingConfig, out: Path) -> dict[float, TrainingConfig]:
    """The training config of each λ: the config's own λ is the config's own student, not a
    second copy; every other trains into ``<out>/lambda-<λ>/``."""
    return {
        float(lam): (
            cfg
            if math.isclose(float(lam), cfg.lambda_)
            else replace(cfg, lambda_=float(lam), output_dir=str(out / f"lambda-{lam:g}"))
        )
        for lam in cfg.selection.lambdas
    }


def _write_selection(out: Path, result: dict[str, Any], choose_only: bool) -> None:
    """Write the choice (``lambda_choice.json``) or the selection, and the curve."""
    name = "lambda_choice.json" if choose_only else "lambda_selection.json"
    atomic_write_text(out / name, json.dumps(result, indent=1, default=str) + "\n")
    atomic_write_text(out / "lambda_curve.md", lambda_markdown(result))
    log.info("chose λ=%g (%s); wrote %s", result["chosen_lambda"], result["criterion"], out / name)
