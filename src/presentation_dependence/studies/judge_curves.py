"""The trained judges' held-out curves (issue 37), read from their committed points.

A judge arm measures every checkpoint on the held-out HH-RLHF items in both orders and caches
each point in ``<output_dir>/curve/step-<N>.json`` (``training/judge_heldout.py``); early stopping
keeps the best (``early_stopping.json``). An arm is read from its archive
``<trained>/<arm>/`` once it has one, else from the copy of its unfinished run under
``<trained>/in-progress/<arm>/`` (docs/results/judge-train/in-progress/README.md), so the curve of
an arm still training is on the page as far as it has gone. The dtype column is the one the
point was served in (``presdep train-judge --continue-in`` serves the points after a resume in
the new one), else the arm's frozen ``judge.dtype``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import yaml

from presentation_dependence.judge.report import _table, fmt, fmt_ci
from presentation_dependence.report.figures import _plt, _png
from presentation_dependence.training.early_stop import EARLY_STOPPING_FILE
from presentation_dependence.training.progress import TRAIN_LOG

__all__ = ["GOALS", "CurvePoint", "JudgeCurve", "curves_markdown", "curves_png", "load_curves"]

# Issue 37's goal on the held-out HH-RLHF pairs, drawn on the figure: (accuracy at least,
# share of items flipping at most, slot spread at most).
GOALS = (0.60, 0.20, 0.10)


@dataclasses.dataclass(frozen=True)
class CurvePoint:
    """One checkpoint on the held-out items: accuracy over both orders with its interval, the
    share of items whose verdict changes with the order, the slot spread, its CPU seconds."""

    step: int
    accuracy: float
    accuracy_ci: tuple[float, float]
    flip_share: float
    slot_spread: float
    num_items: int
    cpu_s: float | None
    dtype: str | None  # served in (points before 2026-12-07 do not say: the arm's dtype)
    # how far P(verdict) moves with the order, how decided it is (judge/scoring/agreement.py;
    # points measured before 2026-12-07 do not have them)
    consistency: float | None = None
    median_margin: float | None = None
    # the training loss's terms over the steps since the point before (train_log.jsonl's
    # logged means; None where the log is not kept)
    train_fit: float | None = None
    train_consistency: float | None = None
    # the share of items right in both orders (points before 2026-12-07: derived, see _point)
    consistent_accuracy: float | None = None


@dataclasses.dataclass(frozen=True)
class JudgeCurve:
    arm: str
    source: Path  # the folder the points were read from
    dtype: str
    points: tuple[CurvePoint, ...]
    best_step: int | None  # early stopping's choice so far
    stopped: bool  # early stopping has ended the run


def _point(path: Path) -> CurvePoint:
    p = json.loads(path.read_text(encoding="utf-8"))["point"]
    low, high = p["accuracy_ci"]
    both = p.get("consistent_accuracy")
    if both is None:  # a pair judged in both orders, never unparsed (a readout): exact
        both = float(p["accuracy"]) - float(p["flip_share"]) / 2
    return CurvePoint(
        int(p["step"]),
        float(p["accuracy"]),
        (float(low), float(high)),
        float(p["flip_share"]),
        float(p["slot_spread"]),
        int(p["num_items"]),
        None if p.get("cpu_s") is None else float(p["cpu_s"]),
        p.get("dtype"),
        p.get("consistency"),
        p.get("median_margin"),
        consistent_accuracy=float(both),
    )


def _with_train_terms(points: Sequence[CurvePoint], log: Path) -> tuple[CurvePoint, ...]:
    """Each point with the mean of the logged fit and consistency terms over the training
    steps since the point before it (a resume drops the lines after its checkpoint; a step
    logged twice counts once, the later line)."""
    if not log.is_file():
        return tuple(points)
    terms: dict[int, tuple[float, float]] = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if "fit" in entry and "consistency" in entry:
            terms[int(entry["step"])] = (float(entry["fit"]), float(entry["consistency"]))
    out, before = [], 0
    for p in points:
        window = [v for step, v in terms.items() if before < step <= p.step]
        before = p.step
        if window:
            fit = sum(v[0] for v in window) / len(window)
            cons = sum(v[1] for v in window) / len(window)
            p = dataclasses.replace(p, train_fit=fit, train_consistency=cons)
        out.append(p)
    return tuple(out)


def _curve(arm: str, folder: Path) -> JudgeCurve | None:
    files = sorted((folder / "curve").glob("step-*.json"))
    if not files:
        return None
    config = folder / "resolved_config.yaml"
    judge = (
        yaml.safe_load(config.read_text(encoding="utf-8")).get("judge", {})
        if config.is_file()
        else {}
    )
    stop_file = folder / EARLY_STOPPING_FILE
    stop = json.loads(stop_file.read_text(encoding="utf-8")) if stop_file.is_file() else {}
    points = _with_train_terms(
        sorted((_point(f) for f in files), key=lambda p: p.step), folder / TRAIN_LOG
    )
    return JudgeCurve(
        arm,
        folder,
        str(judge.get("dtype", "n/a")),
        points,
        stop.get("best_step"),
        bool(stop.get("stop")),
    )


def load_curves(trained: Path, arms: Sequence[str]) -> list[JudgeCurve]:
    """Each arm's curve, from its archive when it has one, else from its in-progress copy."""
    curves = []
    for arm in arms:
        for folder in (trained / arm, trained / "in-progress" / arm):
            curve = _curve(arm, folder)
            if curve is not None:
                curves.append(curve)
                break
    return curves


def curves_markdown(curves: Sequence[JudgeCurve]) -> str:
    """One table of every arm's held-out points; the best so far in bold."""
    if not curves:
        return ""
    rows = []
    for c in curves:
        state = "stopped" if c.stopped else "training"
        for p in c.points:
            best = p.step == c.best_step
            acc = fmt_ci(p.accuracy, *p.accuracy_ci)
            rows.append(
                [
                    f"`{c.arm}`",
                    p.dtype or c.dtype,
                    f"**{p.step}**" if best else p.step,
                    p.num_items,
                    f"**{acc}**" if best else acc,
                    fmt(p.flip_share),
                    fmt(p.slot_spread),
                    fmt(p.consistent_accuracy),
                    fmt(p.consistency, 4),
                    fmt(p.median_margin),
                    fmt(p.train_fit),
                    fmt(p.train_consistency, 4),
                    fmt(p.cpu_s, 0),
                    state,
                ]
            )
    head = ["arm", "dtype", "step", "items", "accuracy [95% CI]", "items flipping", "slot spread"]
    head += [
        "right in both orders",
        "P consistency",
        "median P margin",
        "train fit",
        "train consistency",
        "CPU s",
    ]
    head += ["run"]
    return (
        "Held-out HH-RLHF (never a test item), both orders of each item; the best step so far "
        "(early stopping's choice) in bold. Points of an arm still training are read from its "
        "committed in-progress copy. *Right in both orders*: the share of items judged "
        "correctly in both (`early_stopping.criterion: consistent_accuracy`); for a pair judged "
        "in both orders it is accuracy − flips / 2, which is how it is shown for points measured "
        "before it was recorded (2026-12-07). *P consistency*: mean over items of mean_d (P_AB(d) − "
        "P_BA(d))², the squared consistency term on the verdict probabilities of the two orders; "
        "*median P margin*: the median over calls of P(chosen) − P(other); both from the "
        "probabilities, where the flips and the spread read the argmax (n/a: a point measured "
        "before they were recorded). *Train fit* and *train consistency*: the training loss's "
        "two terms (−log P(correct) and the consistency term, whatever λ weighs it), mean of "
        "the logged values over the steps since the point before (ln 2 = 0.693 is a pair judged "
        "at P = 1/2).\n\n" + _table(head, rows)
    )


def curves_png(curves: Sequence[JudgeCurve]) -> bytes:
    """Three panels against the training step, one line per arm: held-out accuracy with its
    95% interval, the share of items whose verdict flips with the order, the slot spread; the
    issue's goals dotted, early stopping's best step ringed."""
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(10.5, 3.2))
    panels = (
        ("accuracy over both orders", GOALS[0], lambda p: p.accuracy),
        ("items whose verdict flips", GOALS[1], lambda p: p.flip_share),
        ("slot spread", GOALS[2], lambda p: p.slot_spread),
    )
    for c in curves:
        steps = [p.step for p in c.points]
        for k, (ax, (_, _, value)) in enumerate(zip(axes, panels, strict=True)):
            ys = [value(p) for p in c.points]
            if k == 0:
                err = [
                    [p.accuracy - p.accuracy_ci[0] for p in c.points],
                    [p.accuracy_ci[1] - p.accuracy for p in c.points],
                ]
                line = ax.errorbar(
                    steps, ys, yerr=err, marker="o", markersize=3, capsize=2, label=c.arm
                )[0]
            else:
                line = ax.plot(steps, ys, marker="o", markersize=3, label=c.arm)[0]
            best = [p for p in c.points if p.step == c.best_step]
            if best:
                ax.plot(
                    [best[0].step],
                    [value(best[0])],
                    marker="o",
                    markersize=9,
                    fillstyle="none",
                    color=line.get_color(),
                    linestyle="none",
                )
    for ax, (label, goal, _) in zip(axes, panels, strict=True):
        ax.axhline(goal, color="grey", linestyle=":", linewidth=1)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("training step", fontsize=8)
        ax.set_ylabel(label, fontsize=8)
    axes[0].axhline(0.5, color="grey", linewidth=0.6)  # chance for pairs
    axes[0].legend(fontsize=7)
    fig.suptitle(
        "Held-out HH-RLHF, both orders (dotted: the goal; ringed: early stopping's best)",
        fontsize=9,
    )
    fig.tight_layout()
    return _png(fig)
