"""Early stopping on the held-out learning curve (the ``early_stopping`` block).

At every checkpoint (``train.save_steps``) the student's adapter snapshot is scored on the
held-out queries (:func:`~.heldout_curve.curve_point`: the learning curve's own point, cached in
``<output_dir>/curve/``, so the curve command later measures nothing twice). The rule
(:func:`stop_decision`) walks the checkpoints in step order: the first sets the best value; a
later one improves on it when it is better by more than ``min_delta`` (higher nDCG@10 over the
shuffles, or lower τ-PSI); training stops once ``patience`` checkpoints in a row did not. The
adapter saved as the run's is the best checkpoint's (the base model, step 0, is not a
candidate: a run ships an adapter), and ``provenance.json`` records the points, the best step
and where training stopped (``early_stopping``).

Why every decision is remade from the cached points instead of kept in memory: a run killed
and resumed decides exactly as an uninterrupted one (the points are on disk, keyed by the
adapter's sha256), including a kill after the stop was decided and before the adapter was
saved, where the rerun trains no further step (:meth:`HeldoutEarlyStopping.stopped`).
One training process only: a data-parallel run is refused (each process would measure).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from transformers import TrainerCallback

from presentation_dependence.errors import ConfigError
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.training.config import TrainingConfig
from presentation_dependence.training.heldout_curve import (
    checkpoint_adapters,
    curve_point,
    heldout_head,
)
from presentation_dependence.training.splits import JudgedQuery

__all__ = ["EARLY_STOPPING_FILE", "HeldoutEarlyStopping", "PointSource", "StopDecision"]
__all__ += ["StudentPoints", "stop_decision", "student_early_stopping"]

log = logging.getLogger(__name__)
EARLY_STOPPING_FILE = "early_stopping.json"


@dataclass(frozen=True)
class StopDecision:
    """The rule applied to the checkpoints so far: the best one, and whether to stop."""

    criterion: str
    values: tuple[tuple[int, float], ...]  # (step, criterion value) in step order
    best_step: int
    best_value: float
    since_best: int  # checkpoints after the best one, none of them an improvement
    stop: bool

    def record(self) -> dict[str, Any]:
        d = asdict(self)
        d["values"] = [{"step": s, "value": v} for s, v in self.values]
        return d


LOWER_IS_BETTER = frozenset({"tau_psi", "flip_share"})


def stop_decision(
    values: Sequence[tuple[int, float]],
    *,
    criterion: str,
    patience: int,
    min_delta: float = 0.0,
) -> StopDecision:
    """The rule of the module docstring over ``(step, value)`` pairs (any order; sorted by
    step). A criterion in :data:`LOWER_IS_BETTER` (τ-PSI, a judge's flip share) is
    lower-is-better, any other (nDCG@10 over the shuffles, a judge's accuracy) higher."""
    if not values:
        raise ValueError("no checkpoint measured yet")
    ordered = sorted((int(s), float(v)) for s, v in values)
    sign = -1.0 if criterion in LOWER_IS_BETTER else 1.0
    best_step, best = ordered[0]
    since = 0
    for step, value in ordered[1:]:
        if sign * (value - best) > min_delta:
            best_step, best, since = step, value, 0
        else:
            since += 1
    return StopDecision(criterion, tuple(ordered), best_step, best, since, stop=since >= patience)


class Rule(Protocol):
    """An ``early_stopping`` block as the rule reads it (a student's or a judge's)."""

    @property
    def patience(self) -> int | None: ...

    @property
    def min_delta(self) -> float: ...

    @property
    def criterion(self) -> str: ...


class PointSource(Protocol):
    """How one checkpoint is measured on held-out data: a student's curve point
    (:class:`StudentPoints`) or a judge's (:class:`~.judge_heldout.JudgePoints`)."""

    out: Path  # the run folder (its snapshots/ and curve/)

    def point(self, step: int, snapshot: Path) -> dict[str, Any]:
        """The point of checkpoint ``step`` (measured, or cached in ``curve/``)."""
        ...

    def settings(self) -> dict[str, Any]:
        """What provenance records about how points are measured."""
        ...


class StudentPoints:
    """A student's checkpoints scored as the learning curve scores them (:func:`curve_point`)."""

    def __init__(self, cfg: TrainingConfig) -> None:
        self.cfg, self.out, self.opts = cfg, cfg.resolved_output_dir, cfg.early_stopping
        self._heldout: list[JudgedQuery] | None = None

    @property
    def heldout(self) -> list[JudgedQuery]:
        if self._heldout is None:
            self._heldout = heldout_head(self.cfg, self.opts.max_queries)
        return self._heldout

    def point(self, step: int, snapshot: Path) -> dict[str, Any]:
        o = self.opts
        return curve_point(
            self.cfg,
            self.heldout,
            step,
            snapshot,
            num_presentations=o.num_presentations,
            seed=o.seed,
        )

    def settings(self) -> dict[str, Any]:
        o = self.opts
        return {
            "num_presentations": o.num_presentations,
            "seed": o.seed,
            "heldout_queries": len(self.heldout),
        }


class HeldoutEarlyStopping(TrainerCallback):
    """Scores each saved checkpoint on held-out data and stops training by the rule."""

    def __init__(self, source: PointSource, rule: Rule, run_id: str) -> None:
        if rule.patience is None:
            raise ConfigError(f"{run_id}: early_stopping.patience is not set")
        self.source, self.rule, self.run_id = source, rule, run_id

    def decision(self, upto: int) -> StopDecision | None:
        """The rule over every checkpoint up to step ``upto``: each snapshot's point (measured or
        cached), and the recorded point of a checkpoint whose snapshot is gone (a run resumed
        from a copy that kept only the best and the newest snapshots still counts it); None
        before the first."""
        snaps = [
            (s, p)
            for s, p in checkpoint_adapters(self.source.out)
            if s <= upto and p.parent.name == "snapshots"
        ]
        r = self.rule
        values = [(s, self._value(self.source.point(s, p), s, True)) for s, p in snaps]
        have = {s for s, _ in snaps}
        values += self._recorded(upto, skip=have)
        if not values:
            return None
        assert r.patience is not None
        return stop_decision(
            values, criterion=r.criterion, patience=r.patience, min_delta=r.min_delta
        )

    def _recorded(self, upto: int, skip: set[int]) -> list[tuple[int, float]]:
        """(step, criterion value) of the points in ``curve/`` up to step ``upto``, but for the
        steps of ``skip``."""
        found = []
        for path in sorted((self.source.out / "curve").glob("step-*.json")):
            step = int(path.stem.removeprefix("step-"))
            if step > upto or step in skip:
                continue
            point = json.loads(path.read_text(encoding="utf-8"))["point"]
            found.append((step, self._value(point, step, False)))
        return found

    def _value(self, point: dict[str, Any], step: int, has_snapshot: bool) -> float:
        """The rule's criterion in ``point``; a clear error for a point measured before the
        criterion was recorded."""
        if self.rule.criterion not in point:
            fix = (
                f"delete curve/step-{step:06d}.json so it is measured again"
                if has_snapshot
                else f"restore snapshots/step-{step:06d}"
            )
            raise ConfigError(
                f"{self.source.out}: the point of step {step} has no {self.rule.criterion!r} "
                f"(measured before it was recorded). Fix: {fix}, or stop on a criterion the "
                "point records"
            )
        return float(point[self.rule.criterion])

    def stopped(self, step: int | None) -> bool:
        """Whether the rule had already stopped training at checkpoint ``step`` (a resume);
        the record brought up to date, since a run killed while it measured the checkpoint's
        point measures it here."""
        if step is None:
            return False
        d = self.decision(step)
        if d is not None:
            self._write(d)
        return d is not None and d.stop

    def _write(self, d: StopDecision) -> None:
        path = self.source.out / EARLY_STOPPING_FILE
        atomic_write_text(path, json.dumps(d.record(), indent=1) + "\n")

    def selected(self, step: int) -> tuple[Path, dict[str, Any]] | None:
        """The best checkpoint's snapshot and the record provenance keeps, at the run's end."""
        d = self.decision(step)
        if d is None:
            return None
        settings = {"patience": self.rule.patience, "min_delta": self.rule.min_delta}
        record = {**d.record(), "stopped_at": step, **settings, **self.source.settings()}
        snapshots = dict(checkpoint_adapters(self.source.out))
        if d.best_step not in snapshots:
            raise ConfigError(
                f"{self.source.out}: the best checkpoint (step {d.best_step}) has no snapshot "
                f"to keep. Fix: restore snapshots/step-{d.best_step:06d} (a copy of a run keeps "
                "the best snapshot and the newest)"
            )
        return snapshots[d.best_step], record

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if args.world_size > 1:
            raise ConfigError(
                f"{self.run_id}: early stopping runs in one training process (each would "
                f"measure the held-out points); this run has {args.world_size}. Fix: train "
                "without accelerate launch, or unset early_stopping.patience"
            )

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        d = self.decision(int(state.global_step))
        if d is None:
            return
        self._write(d)
        log.info(
            "early stopping: step %d %s %.4f, best step %d (%.4f), %d checkpoint(s) without "
            "improvement%s",
            d.values[-1][0],
            d.criterion,
            d.values[-1][1],
            d.best_step,
            d.best_value,
            d.since_best,
            ": stopping" if d.stop else "",
        )
        if d.stop:
            control.should_training_stop = True


def student_early_stopping(cfg: TrainingConfig) -> HeldoutEarlyStopping | None:
    """The early-stopping callback of a student's config (None when it is off)."""
    if not cfg.early_stopping.enabled:
        return None
    return HeldoutEarlyStopping(StudentPoints(cfg), cfg.early_stopping, cfg.id)
