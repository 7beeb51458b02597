"""What the ``run``, ``psi`` and ``qa`` commands share around their stage (:mod:`.stage`): the
config, the run folder, the reranker and the presentations of the ``robustness`` block."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from presentation_dependence.config import ExperimentConfig
from presentation_dependence.presentations import (
    NULL,
    PerturbationContext,
    draw_presentations,
    same_order,
)
from presentation_dependence.records import RerankRequest
from presentation_dependence.rerankers import Reranker, build_reranker
from presentation_dependence.runners.readback import recorded_dtype
from presentation_dependence.runners.run_folder import RunFolder

__all__ = ["StageCommand", "pin_auto_dtype"]

log = logging.getLogger(__name__)


def pin_auto_dtype(options: Any, folder: RunFolder) -> Any:
    """``options`` with ``dtype: auto`` resolved as ``folder``'s earlier commands resolved it.

    ``auto`` depends on the processor (bfloat16 where it is native, float32 elsewhere:
    readout/backend.py), and a run folder is resumed wherever a session finds a machine. Left
    alone, a folder begun on an AVX2-only CPU (float32) and resumed on an AMX one would mix
    float32 and bfloat16 queries under one frozen config. So ``auto`` resolves once, when a
    folder first scores, and every later command keeps that dtype (``provenance.json`` records
    it per command). Options without a dtype, an explicit dtype, or a new folder pass through.
    """
    if getattr(options, "dtype", None) != "auto":
        return options
    pinned = recorded_dtype(folder.path)
    if pinned is None:
        return options
    log.info("dtype auto -> %s, as this run folder's first scoring command resolved it", pinned)
    return dataclasses.replace(options, dtype=pinned)


class StageCommand:
    """What the ``run``, ``psi`` and ``qa`` commands share: the config, the run folder, the
    shard, the command line, ``recompute_changed``, the reranker (built on first use) and the
    presentations of the ``robustness`` block."""

    def __init__(
        self,
        cfg: ExperimentConfig,
        run_dir: str | Path,
        *,
        shard: tuple[int, int] | None = None,
        argv: Sequence[str] | None = None,
        reranker: Reranker | None = None,
        recompute_changed: bool = False,
    ) -> None:
        self.cfg = cfg
        self.folder = RunFolder(run_dir)
        self.shard = shard
        self.argv = argv
        self._reranker = reranker
        self.recompute_changed = recompute_changed
        rob = cfg.robustness  # the seed of the presentations below
        self.presentation_seed = rob.seed if rob.seed is not None else cfg.seed

    @property
    def reranker(self) -> Reranker:
        if self._reranker is None:
            rc = self.cfg.reranker
            self._reranker = build_reranker(
                rc.reranker_class, pin_auto_dtype(rc.options, self.folder)
            )
        return self._reranker

    def presentations(self, req: RerankRequest, grades: np.ndarray) -> dict[str, np.ndarray]:
        """What ``psi`` and ``qa`` score for ``req`` (``grades``: each candidate's qrels grade):
        every perturbation of the ``robustness`` block, and the same-order null."""
        rob = self.cfg.robustness
        b = getattr(self.cfg.reranker.options, "chunk_size", None)
        ctx = PerturbationContext(grades, rob.relevant_grade, b if isinstance(b, int) else None)
        n, m, seed = len(req.candidates), rob.num_presentations, self.presentation_seed
        out = {k: draw_presentations(k, n, m, seed, req.query.qid, ctx) for k in rob.perturbations}
        out[NULL] = same_order(n, rob.null_repeats or m)
        return out
