"""The trained judges against the judge off the shelf and test-time averaging (issue 37).

Read from archived judge-study runs: the off-the-shelf run of each response set under
``baseline`` (``docs/results/judge-study/runs/<run id>/``, the study's readout runs) and each
trained arm's run of the same id under ``trained/<arm>/<run id>/`` (the plan
``configs/study/judge-train.yaml`` archives them there), and any checkpoint of an unfinished
run judged on the test items, under ``trained/checkpoints/<label>/<run id>/``. Per run id (a response set and judge):

* the judge study's overview row of every arm (:func:`~.judge_tables.overview_table`: accuracy
  over the placements under both failure conventions, parse failures, best and worst slot,
  spread, the items whose verdict flips, rerun noise, CPU seconds per call);
* test-time averaging of the off-the-shelf run and of every arm's, from its records (every placement judged, one
  decision per item: :func:`~presentation_dependence.judge.scoring.averaged.summarise_averaged`);
* paired tests: each OC-SFT arm (or a checkpoint of one) against placement augmentation (and
  each checkpoint of it) on their common calls (exact
  McNemar per call, paired item bootstrap: :func:`~.judge_tables.paired_markdown`), and against
  test-time averaging on the items both scored (paired item bootstrap of the arm's per-item
  accuracy over placements against the averaged decision's score, stream ``judge-arms``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from presentation_dependence.io.atomic import atomic_write_bytes
from presentation_dependence.judge.config import load_judge_config
from presentation_dependence.judge.report import _table, fmt
from presentation_dependence.judge.scoring.agreement import probability_agreement
from presentation_dependence.judge.scoring.averaged import averaged_item_scores, summarise_averaged
from presentation_dependence.judge.scoring.settings import ScoringSettings
from presentation_dependence.judge.scoring.summary import item_scores
from presentation_dependence.metrics.stats import named_rng, paired_bootstrap
from presentation_dependence.studies.judge_curves import JudgeCurve, curves_markdown, curves_png
from presentation_dependence.studies.judge_study import StudyRun, load_run
from presentation_dependence.studies.judge_tables import (
    overview_table,
    paired_markdown,
    slot_accuracy_png,
)
from presentation_dependence.training.judge_splits import read_splits

__all__ = ["ARMS", "BASELINE", "ArmFigures", "arms_markdown", "baseline_run_ids", "load_arms"]
__all__ += ["write_figures"]

BASELINE = "off-the-shelf"
ARMS = ("placement-aug", "oc-sft-squared", "oc-sft-symkl", "oc-sft-disagreement", "reward-model")
CONSISTENT = (
    "oc-sft-squared",
    "oc-sft-symkl",
    "oc-sft-disagreement",
)  # each paired against the two fixes below
AUGMENTED = "placement-aug"
# TRAINED/checkpoints/<label>/<run id>/: a checkpoint of an unfinished run judged on the test
# items (e.g. placement-aug-step-350), shown beside the arms under its folder's name
CHECKPOINTS = "checkpoints"


def load_arms(
    trained: Path,
    baseline: Path,
    arms: Sequence[str] = ARMS,
    run_ids: Sequence[str] = (),
) -> dict[str, list[StudyRun]]:
    """Per run id of ``run_ids`` or with a trained arm: the off-the-shelf run (when archived)
    then each arm's, every run relabelled by its arm, then each of ``trained/checkpoints/``
    (:data:`CHECKPOINTS`), relabelled by its folder."""
    groups: dict[str, list[StudyRun]] = {}

    def group(run_id: str) -> list[StudyRun]:
        if run_id not in groups:
            base = load_run(baseline / run_id)
            groups[run_id] = [] if base is None else [_label(base, BASELINE)]
        return groups[run_id]

    for run_id in run_ids:
        group(run_id)
    extra = trained / CHECKPOINTS
    labelled = [(arm, trained / arm) for arm in arms]
    if extra.is_dir():  # checkpoints judged before their run ended, labelled by their folder
        labelled += [(p.name, p) for p in sorted(extra.iterdir()) if p.is_dir()]
    for label, folder in labelled:
        if not folder.is_dir():
            continue
        for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
            run = load_run(sub)
            if run is not None and run.kind == "judge":
                group(run.run_id).append(_label(run, label))
    return {rid: runs for rid, runs in groups.items() if runs}


def baseline_run_ids(splits: str | Path) -> tuple[str, ...]:
    """The judge study's run ids of a splits file's test sets (each set's ``test_config``), in
    order, once each: the runs shown off the shelf before any arm has trained."""
    sets = read_splits(splits)["sets"].values()
    return tuple(dict.fromkeys(load_judge_config(s["test_config"]).id for s in sets))


@dataclasses.dataclass(frozen=True)
class ArmFigures:
    """Where the section's figures are, as the doc links them (relative to it)."""

    curves: str | None = None  # the held-out curves (:func:`~.judge_curves.curves_png`)
    slots: str | None = (
        None  # accuracy by slot of every arm (:func:`~.judge_tables.slot_accuracy_png`)
    )


def write_figures(
    groups: dict[str, list[StudyRun]], curves: Sequence[JudgeCurve], folder: Path, doc: Path
) -> ArmFigures:
    """Write the held-out curves and the accuracy-by-slot figure of the judged runs into
    ``folder`` (each only when there is something to draw); their links relative to ``doc``."""
    runs = [r for rs in groups.values() for r in rs if r.kind == "judge"]
    links: dict[str, str] = {}
    for key, name, draw, ready in (
        ("curves", "heldout_curves.png", lambda: curves_png(curves), bool(curves)),
        ("slots", "slot_accuracy.png", lambda: slot_accuracy_png(runs), _any_arm(runs)),
    ):
        if ready:
            atomic_write_bytes(folder / name, draw())
            links[key] = os.path.relpath(folder / name, doc.parent)
    return ArmFigures(**links)


def _any_arm(runs: Sequence[StudyRun]) -> bool:
    return any(r.run_id != BASELINE for r in runs)


def _label(run: StudyRun, label: str) -> StudyRun:
    return dataclasses.replace(run, run_id=label)


def _averaging(runs: Sequence[StudyRun]) -> str:
    """Test-time averaging of each run (off the shelf and every arm), from its records."""
    rows = [_averaging_row(run) for run in runs]
    head = ["fix", "items", "calls per item", "accuracy [CI]", "decision", "flips"]
    return _table([*head, "CPU s per decision"], rows)


def _probabilities(runs: Sequence[StudyRun]) -> str:
    """How far each readout run's verdict probabilities move with the placement and how decided
    they are (:func:`~presentation_dependence.judge.scoring.agreement.probability_agreement`)."""
    rows = []
    for run in runs:
        agree = probability_agreement(run.records)
        if agree["consistency"] is not None:
            rows.append(
                [f"`{run.run_id}`", fmt(agree["consistency"], 4), fmt(agree["median_margin"])]
            )
    if not rows:
        return ""
    return "\n" + _table(["run", "P consistency", "median P margin"], rows)


def _averaging_row(base: StudyRun) -> list[object]:
    s = summarise_averaged(
        [r for r in base.records if r.repeat == 0],
        ScoringSettings(0, base.summary["bootstrap_resamples"], base.summary["confidence"]),
    )
    acc = s["accuracy"]
    per_decision = base.cpu_seconds / s["items"] if base.cpu_seconds is not None else None
    return [
        f"test-time averaging of `{base.run_id}`",
        s["items"],
        fmt(s["calls_per_item"], 0),
        f"{fmt(acc['mean'])} [{fmt(acc['ci_low'])}, {fmt(acc['ci_high'])}]",
        s["method"],
        "0 (one decision per item)",
        fmt(per_decision, 2),
    ]


def _against_averaging(arm: StudyRun, base: StudyRun) -> str:
    """The arm's per-item accuracy over placements against test-time averaging's item score."""
    ids_a, acc = item_scores([r for r in arm.records if r.repeat == 0], "fail0")
    ids_b, avg, _ = averaged_item_scores([r for r in base.records if r.repeat == 0])
    common = sorted(set(ids_a) & set(ids_b))
    if not common:
        return f"`{arm.run_id}` and test-time averaging share no item: not paired.\n"
    a = np.array([acc[ids_a.index(i)] for i in common])
    b = np.array([avg[ids_b.index(i)] for i in common])
    pb = paired_bootstrap(
        a,
        b,
        rng=named_rng(0, "judge-arms", arm.run_id),
        n_resamples=base.summary["bootstrap_resamples"],
        confidence=base.summary["confidence"],
    )
    return (
        f"`{arm.run_id}` (one placement a call, accuracy over placements) − test-time averaging "
        f"(every placement, one decision) on {len(common)} items: {pb['mean_diff']:+.3f} "
        f"[{fmt(pb['ci_low'])}, {fmt(pb['ci_high'])}] (paired item bootstrap, p "
        f"{fmt(pb['p_value'])}).\n"
    )


def _of_arm(label: str, arm: str) -> bool:
    """Whether ``label`` is ``arm`` or one of its checkpoints (``<arm>-step-<N>``)."""
    return label == arm or label.startswith(f"{arm}-step-")


def _group_markdown(run_id: str, runs: Sequence[StudyRun]) -> str:
    by_label = {r.run_id: r for r in runs}
    parts = [f"### `{run_id}`\n\n", overview_table(runs), _probabilities(runs)]
    base = by_label.get(BASELINE)
    parts.append("\n" + _averaging(runs))
    augmented = [lb for lb in by_label if _of_arm(lb, AUGMENTED)]
    for label in by_label:
        if not any(_of_arm(label, arm) for arm in CONSISTENT):
            continue
        for other in augmented:
            parts.append(
                f"\n#### `{label}` (A) vs `{other}` (B), paired\n\n"
                + paired_markdown(by_label[label], by_label[other])
            )
        if base is not None:
            parts.append(f"\n{_against_averaging(by_label[label], base)}")
    return "".join(parts)


def arms_markdown(
    groups: dict[str, list[StudyRun]],
    curves: Sequence[JudgeCurve] = (),
    figures: ArmFigures | None = None,
    gates: str = "",
) -> str:
    """The section's text: the arms' held-out curves, then one part per run id (module
    docstring); before any arm is archived, the judge off the shelf and its test-time averaging,
    what every arm will be set against. With ``figures``, their links (relative to the doc);
    ``gates``: the gate section (:func:`~.judge_gates.heldout_gates_markdown`), after the curves."""
    trained = _any_arm([r for runs in groups.values() for r in runs])
    curve = "### Held-out curves\n\n" + curves_markdown(curves) + "\n" if curves else ""
    if curves and figures is not None and figures.curves:
        curve += f"![Held-out curves of the trained judges]({figures.curves})\n\n"
    if trained and figures is not None and figures.slots:
        curve += (
            "Accuracy by the slot of the correct response, every arm on every judged set, "
            f"with 95% Wilson intervals:\n\n![Accuracy by slot of each arm]({figures.slots})\n\n"
        )
    if gates:
        curve += gates + "\n"
    if not groups:
        return curve + "No trained judge has been evaluated yet.\n"
    head = (
        ""
        if trained
        else "No trained judge has been evaluated yet. The rows every arm will be set against: "
        "the judge off the shelf and test-time averaging of it.\n\n"
    )
    groups_md = "\n".join(_group_markdown(rid, runs) for rid, runs in sorted(groups.items()))
    legend = _PROBABILITIES + ("; the paired tests.\n\n" if trained else ".\n\n")
    return curve + head + legend + groups_md


# the legend of every set's probability table (_probabilities)
_PROBABILITIES = (
    "Per set: the overview row of each run; how its verdict probabilities behave (*P "
    "consistency*: mean over items of the squared difference of P(response) between placements, "
    "the term OC-SFT for judges trains on; *median P margin*: the median over calls of the top "
    "P(verdict) minus the next; the flips and the spread read the argmax, which flips on any "
    "tilt when the margin is near 0); test-time averaging"
)
