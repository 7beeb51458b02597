"""What the ``run``, ``psi`` and ``qa`` commands share around their stage (:mod:`.stage`): the
config, the run folder, the reranker and the presentations of the ``robustness`` block."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

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
from presentation_dependence.runners.run_folder import RunFolder

__all__ = ["StageCommand"]


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
            self._reranker = build_reranker(rc.reranker_class, rc.options)
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
