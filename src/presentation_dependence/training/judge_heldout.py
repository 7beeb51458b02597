"""A trained judge's checkpoints on the held-out split: the points early stopping selects by.

The judge of each snapshot (``<output_dir>/snapshots/step-<N>/``: the readout judge block with
``adapter_path`` set to it) judges the first ``max_items`` held-out items of each trained set
(``presdep judge-splits``' ``heldout`` split, never the test items) under every placement of
``early_stopping.placements``; the point is the judge study's summary of those records
(:func:`~presentation_dependence.judge.scoring.summary.summarise_records`): accuracy over the
placements (a parse failure scores 0, as ``score_fail0``), the share of items whose verdict
flips with the placement, and the slot spread; and, from the verdict probabilities, how far
they move with the placement and how decided they are
(:func:`~presentation_dependence.judge.scoring.agreement.probability_agreement`). Points are cached in ``curve/step-<N>.json``
with the key they were made from (the adapter's sha256, the items, the placements, the seed),
as a student's learning-curve points are, so a resumed run decides from the same numbers.
"""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Any

from presentation_dependence.judge.items.records import ResponseItem
from presentation_dependence.judge.judges.base import build_judge
from presentation_dependence.judge.judges.generation import release_adapter_generators
from presentation_dependence.judge.placement import make_requests
from presentation_dependence.judge.scoring.agreement import probability_agreement
from presentation_dependence.judge.scoring.settings import ScoringSettings
from presentation_dependence.judge.scoring.summary import (
    correct_in_every_placement,
    summarise_records,
)
from presentation_dependence.readout.adapter import adapter_sha256
from presentation_dependence.training.early_stop import HeldoutEarlyStopping
from presentation_dependence.training.heldout_curve import cached
from presentation_dependence.training.judge_config import JudgeTrainingConfig
from presentation_dependence.training.judge_splits import load_split_items

__all__ = ["JudgePoints", "heldout_items", "judge_early_stopping"]


def heldout_items(cfg: JudgeTrainingConfig) -> list[ResponseItem]:
    """The first ``early_stopping.max_items`` held-out items of each trained set."""
    items = load_split_items(cfg.splits, "heldout", cfg.sets)
    cap = cfg.early_stopping.max_items
    if cap is None:
        return items
    out: list[ResponseItem] = []
    count: dict[str, int] = {}
    for it in items:
        if count.get(it.source, 0) < cap:
            out.append(it)
            count[it.source] = count.get(it.source, 0) + 1
    return out


class JudgePoints:
    """A trained judge's checkpoints judged on the held-out items (module docstring)."""

    def __init__(self, cfg: JudgeTrainingConfig, dtype: str | None = None) -> None:
        self.cfg, self.out, self.opts = cfg, cfg.resolved_output_dir, cfg.early_stopping
        # the dtype the snapshots are served in: judge.dtype's, or a continued run's
        self.serving = {} if dtype is None else {"dtype": dtype}
        self._items: list[ResponseItem] | None = None

    @property
    def items(self) -> list[ResponseItem]:
        if self._items is None:
            self._items = heldout_items(self.cfg)
        return self._items

    def point(self, step: int, snapshot: Path) -> dict[str, Any]:
        key = {
            "adapter_sha256": adapter_sha256(snapshot),
            "items": [it.item_id for it in self.items],
            "placements": self.opts.placements,
            "seed": self.cfg.seed,
        }
        path = self.out / "curve" / f"step-{step:06d}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        point: dict[str, Any] = cached(path, key, "point", lambda: self._measure(step, snapshot))
        return point

    def _measure(self, step: int, snapshot: Path) -> dict[str, Any]:
        cpu0 = time.process_time()
        options = self.cfg.judge_options_with(adapter_path=str(snapshot), **self.serving)
        judge = build_judge("readout", options)
        requests = make_requests(self.items, self.opts.placements, self.cfg.seed)
        records = judge.judge(requests)
        del judge
        release_adapter_generators(str(snapshot))
        gc.collect()
        summary = summarise_records(records, ScoringSettings(seed=self.cfg.seed))
        return {
            "step": step,
            "dtype": options.dtype,
            "accuracy": summary["score_fail0"]["mean"],
            "accuracy_ci": [summary["score_fail0"]["ci_low"], summary["score_fail0"]["ci_high"]],
            "flip_share": 1.0 - summary["consistent_items"],
            "slot_spread": summary["slot_spread"]["spread"],
            "consistent_accuracy": correct_in_every_placement(records),  # since 2026-12-07
            **probability_agreement(records),  # consistency, median_margin (since 2026-12-07)
            "num_items": summary["items"],
            "records": summary["records"],
            "cpu_s": round(time.process_time() - cpu0, 3),
        }

    def settings(self) -> dict[str, Any]:
        return {
            "placements": self.opts.placements,
            "seed": self.cfg.seed,
            "heldout_items": len(self.items),
        }


def judge_early_stopping(
    cfg: JudgeTrainingConfig, *, dtype: str | None = None
) -> HeldoutEarlyStopping | None:
    """The early-stopping callback of a judge's training config (None when it is off), its
    snapshots served in ``dtype`` when given (a run continued in another dtype)."""
    if not cfg.early_stopping.enabled:
        return None
    return HeldoutEarlyStopping(JudgePoints(cfg, dtype), cfg.early_stopping, cfg.id)
