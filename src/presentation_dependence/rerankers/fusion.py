"""ScoreFusionReranker: a weighted sum of order-free scorers' per-query normalised scores.

Two bi-encoders that err differently rank better together than either alone (on DL19's BM25
top-100, E5 0.661 and MiniLM 0.642 nDCG@10, their per-query min-max sum 0.676:
``../shared/MACHINE-NOTES.md``). As a teacher for students (``silver.teacher``), the fused
score is then mapped to grades by one calibration fitted on the fused scores
(``silver.calibration``), like a single teacher's.

Per query, each member ``m`` scores the candidates (``members``: reranker blocks) and its scores
are normalised over the query's candidates (``normalize``):

* ``minmax``: ``(s − min) / (max − min)`` (0 for every candidate when all tie), the CombSUM of
  min-max normalised scores (Fox and Shaw, TREC-2 1994; Lee, SIGIR 1997);
* ``zscore``: ``(s − mean) / std`` (0 when all tie);
* ``none``: the raw scores (members on one scale).

The score is ``Σ_m w_m · norm_m(s)`` with ``weights`` (default 1 each). Members must be
order-free by construction (paradigm pointwise): a normalisation over the query's candidates
depends on which candidates are there, never on their order, so the fusion is order-free too
and a silver file scores it once per query. A listwise member is refused: fuse its BSC
average's run instead, outside the teacher.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import checked_options, opt
from presentation_dependence.records import Candidate, Cost, Query, RankResult
from presentation_dependence.rerankers.base import (
    RERANKERS,
    Paradigm,
    Reranker,
    RerankerConfig,
    RerankerOptions,
    build_reranker,
    reranker_block,
)

__all__ = ["ScoreFusionOptions", "ScoreFusionReranker", "normalise_scores"]

NORMALISATIONS = ("minmax", "zscore", "none")


def normalise_scores(scores: np.ndarray, how: str) -> np.ndarray:
    """One member's scores over a query's candidates, normalised (module docstring)."""
    s = np.asarray(scores, dtype=np.float64)
    if how == "none" or s.size == 0:
        return s
    if how == "minmax":
        span = float(s.max() - s.min())
        return (s - s.min()) / span if span > 0 else np.zeros_like(s)
    if how == "zscore":
        std = float(s.std())
        return (s - s.mean()) / std if std > 0 else np.zeros_like(s)
    raise ConfigError(f"normalize must be one of {', '.join(NORMALISATIONS)}, got {how!r}")


@dataclass(frozen=True)
class ScoreFusionOptions(RerankerOptions):
    """Options of ScoreFusionReranker (see fusion.py)."""

    members: list[dict[str, Any]] = field(
        default_factory=list,
        metadata={"help": "the order-free scorers fused: a list of reranker blocks (two or more)"},
    )
    normalize: Literal["minmax", "zscore", "none"] = opt(
        "minmax", "per-query normalisation of each member's scores before the weighted sum"
    )
    weights: list[float] | None = opt(None, "one weight per member; null = 1 each")

    def __post_init__(self) -> None:
        if not isinstance(self.members, list) or len(self.members) < 2:
            raise ConfigError(
                f"members: fusion needs a list of two or more reranker blocks, got "
                f"{self.members!r}",
                key="members",
            )
        blocks = [reranker_block(m, f"members[{i}]") for i, m in enumerate(self.members)]
        for i, block in enumerate(blocks):
            paradigm = RERANKERS.get(block["reranker_class"]).paradigm
            if paradigm != Paradigm.POINTWISE:
                raise ConfigError(
                    f"members[{i}]: {block['reranker_class']} is {paradigm.value}, not "
                    "pointwise; fusion takes order-free scorers only (its scores would "
                    "otherwise depend on the presentation)",
                    key=f"members[{i}]",
                )
        object.__setattr__(self, "members", blocks)
        w = self.weights
        if w is not None and (
            len(w) != len(blocks) or any(not isinstance(x, int | float) or x < 0 for x in w)
        ):
            raise ConfigError(
                f"weights: one non-negative number per member ({len(blocks)}), got {w!r}",
                key="weights",
            )


@RERANKERS.register()
class ScoreFusionReranker:
    """Scores every candidate by the weighted sum of its members' normalised scores."""

    paradigm: ClassVar[Paradigm] = Paradigm.POINTWISE
    config_cls: ClassVar[type[RerankerOptions]] = ScoreFusionOptions
    backend: ClassVar[str] = "its members' (a normalised weighted sum of their scores)"
    requires: ClassVar[str] = "what its members require"

    def __init__(self, options: RerankerOptions | None = None) -> None:
        self.options = opts = checked_options(self, options, ScoreFusionOptions)
        self.members: list[Reranker] = []
        for block in opts.members:
            cfg = RerankerConfig.from_raw(block)
            self.members.append(build_reranker(cfg.reranker_class, cfg.options))
        self.weights = [float(x) for x in opts.weights or [1.0] * len(self.members)]

    def rank(self, query: Query, candidates: Sequence[Candidate]) -> RankResult:
        fused = np.zeros(len(candidates))
        member_scores, costs = [], []
        for member, weight in zip(self.members, self.weights, strict=True):
            result = member.rank(query, candidates)
            raw = np.array([c.score for c in result.items])  # input order (the contract)
            fused += weight * normalise_scores(raw, self.options.normalize)
            member_scores.append(raw)
            costs.append(result.cost)
        known = [c for c in costs if c is not None]
        cost = (
            Cost(sum(c.forward_passes for c in known), sum(c.prompt_tokens for c in known))
            if known
            else None
        )
        item_details = [
            {"member_scores": [float(s[i]) for s in member_scores]} for i in range(len(fused))
        ]
        return RankResult.from_scores(
            query,
            candidates,
            fused,
            item_details=item_details,
            details={"normalize": self.options.normalize, "weights": self.weights},
            cost=cost,
        )

    def describe(self) -> dict[str, Any]:
        members = [m.describe() for m in self.members]
        names = [f"{d.get('reranker_class')}:{d.get('model_name', '')}" for d in members]
        return {
            "reranker_class": "ScoreFusionReranker",
            "model_name": f"{self.options.normalize}(" + " + ".join(names) + ")",
            "normalize": self.options.normalize,
            "weights": self.weights,
            "members": members,
        }
