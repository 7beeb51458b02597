"""CapCalGradeReranker: the expected-grade readout with content-free (placeholder) calibration.

Listwise readouts have a *slot prior*: even with nothing to judge, the model prefers some
grades at some slots (the filler's copy pull grows with the slot index, docs/SCORING.md 1.4).
CapCal (Lv et al., ACL 2026, "Learning from Emptiness", github.com/USTC-StarTeam/CapCal)
estimates that prior with a second pass in which every passage body is replaced by a
placeholder, the query and the passage identifiers kept, and subtracts its excess over uniform:

    S(d) = P(d | x) - alpha * (P(d | x_empty) - 1/|C|)          (CapCal, over candidate ids)

Here the readout distribution at a slot is over the 4 grades, so for every slot s of a chunk

    method "capcal":  P'(g) = max(0, P(g) - alpha * (P_cf(g | s) - 1/4)),  renormalised
    method "divide":  P'(g) ∝ P(g) * P_cf(g | s) ** (-alpha)     (alpha = 1: contextual
                      calibration, Zhao et al. 2021, W = diag(P_cf)^-1, b = 0)

and the score is E[g] under P'. Before clipping the "capcal" vector already sums to 1 (the
correction sums to 0), so the clip only bites where the prior would push a grade negative.
P_cf(. | s) comes from one prompt with ``len(chunk)`` placeholder passages; it depends on the
query text and the chunk length only, so it is computed once per (query, chunk length) within a
:meth:`rank` call (a top-45 list at B=20 costs 3 + 2 passes). ``alpha = 0`` gives back the
plain readout's scores (the extra passes are still made and counted).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import checked_options, opt
from presentation_dependence.readout.prompt import get_template
from presentation_dependence.records import Candidate, Cost, Query, RankResult
from presentation_dependence.rerankers.base import RERANKERS, Paradigm, RerankerOptions
from presentation_dependence.rerankers.grade import (
    GradeReranker,
    GradeRerankerOptions,
    readout_result,
)

if TYPE_CHECKING:
    from presentation_dependence.readout.backend import ForwardStats
    from presentation_dependence.readout.prompt import BuiltPrompt

__all__ = ["CapCalGradeOptions", "CapCalGradeReranker", "calibrate"]

logger = logging.getLogger(__name__)

_METHODS = ("capcal", "divide")


def calibrate(
    p: np.ndarray, p_cf: np.ndarray, *, alpha: float, method: str = "capcal"
) -> np.ndarray:
    """Correct grade distributions ``p`` (rows) by content-free priors ``p_cf`` (same shape).

    ``capcal``: clip(P - alpha (P_cf - 1/G), 0) renormalised; ``divide``: P * P_cf**-alpha
    renormalised. Every output row sums to 1; ``alpha == 0`` returns ``p`` unchanged.
    """
    p = np.asarray(p, dtype=np.float64)
    p_cf = np.asarray(p_cf, dtype=np.float64)
    if p.shape != p_cf.shape:
        raise ValueError(f"P has shape {p.shape}, P_cf {p_cf.shape}")
    g = p.shape[-1]
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    if alpha == 0:
        # no correction, exactly: renormalising would move float32-softmax rows by ~1e-7
        return p.copy()
    if method == "capcal":
        out = np.clip(p - alpha * (p_cf - 1.0 / g), 0.0, None)
    else:  # divide
        # a softmax output is > 0, but float underflow can give 0: keep the division finite
        out = p * np.power(np.maximum(p_cf, np.finfo(np.float64).tiny), -alpha)
    total = out.sum(axis=-1, keepdims=True)
    # capcal: the unclipped row sums to 1, so its positive part sums to >= 1; divide: > 0
    # unless every P(g) is 0. Fall back to P itself for a degenerate row.
    bad = ~(np.isfinite(total) & (total > 0))
    if bad.any():
        out = np.where(bad, p, out)
        total = out.sum(axis=-1, keepdims=True)
    result: np.ndarray = out / total
    return result


@dataclass(frozen=True)
class CapCalGradeOptions(GradeRerankerOptions):
    """The readout's options plus the content-free calibration (see capcal.py)."""

    alpha: float = opt(
        1.0,
        "calibration strength: capcal subtracts alpha*(P_cf - 1/4); divide uses P/P_cf**alpha; "
        "0 = no correction",
    )
    method: Literal["capcal", "divide"] = opt(
        "capcal",
        "capcal: P' = clip(P - alpha(P_cf - 1/4), 0) renormalised (Lv et al. 2026); divide: "
        "P' ∝ P / P_cf**alpha (contextual calibration, Zhao et al. 2021)",
    )
    placeholder: str = opt(
        "N/A",
        "the passage body of the content-free pass (query and [i] tags kept)",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        a = self.alpha
        if isinstance(a, bool) or not isinstance(a, (int, float)) or not math.isfinite(a) or a < 0:
            raise ConfigError(f"alpha must be a finite number >= 0, got {a!r}")
        object.__setattr__(self, "alpha", float(a))
        if self.method not in _METHODS:
            raise ConfigError(f"method must be one of {_METHODS}, got {self.method!r}")
        if not isinstance(self.placeholder, str):
            raise ConfigError(f"placeholder must be a string, got {self.placeholder!r}")


@RERANKERS.register()
class CapCalGradeReranker(GradeReranker):
    """The listwise readout calibrated by a content-free (placeholder) pass per chunk length."""

    paradigm: ClassVar[Paradigm] = Paradigm.MITIGATION
    config_cls: ClassVar[type[RerankerOptions]] = CapCalGradeOptions

    def __init__(self, options: RerankerOptions | None = None) -> None:
        super().__init__(options)
        self.cal = checked_options(self, options, CapCalGradeOptions)

    def rank(self, query: Query, candidates: Sequence[Candidate]) -> RankResult:
        opts = self.cal
        template = get_template(opts.template)
        details: dict[str, Any] = {
            "template": template.template_id,
            "batch_mode": self.batch_mode,
            "calibration": {
                "method": opts.method,
                "alpha": opts.alpha,
                "placeholder": opts.placeholder,
            },
        }
        if not candidates:
            return RankResult.from_scores(query, candidates, [], details=details, cost=Cost())
        _, builder = self._ensure_loaded()
        groups = self._chunk_indices(len(candidates))
        prompts = [builder.build(query.text, [candidates[i].text for i in g]) for g in groups]
        probs, stats = self._grade_probs(prompts)
        content_free, cf_stats = self._content_free(query.text, groups)
        calibrated, item_details = self._calibrated(groups, probs, content_free, len(candidates))
        details.update(
            content_free_passes=cf_stats.forward_passes,
            content_free_prompt_tokens=cf_stats.prompt_tokens,
            chunks=len(groups),
            token_truncated_passages=sum(pr.token_truncated for pr in prompts),
        )
        logger.debug(
            "query %s: %d candidates, %d chunks, %d + %d content-free passes, %.2f s",
            query.qid,
            len(candidates),
            len(groups),
            stats.forward_passes,
            cf_stats.forward_passes,
            stats.seconds + cf_stats.seconds,
        )
        cost = Cost(
            stats.forward_passes + cf_stats.forward_passes,
            stats.prompt_tokens + cf_stats.prompt_tokens,
        )
        return readout_result(
            query,
            candidates,
            groups,
            calibrated,
            template.num_grades,
            details=details,
            cost=cost,
            item_details=item_details,
        )

    def _grade_probs(self, prompts: Sequence[BuiltPrompt]) -> tuple[list[np.ndarray], ForwardStats]:
        """P(g) at every slot of each prompt, and what the passes cost."""
        backend, builder = self._ensure_loaded()
        opts = self.cal
        return backend.grade_probs(
            prompts,
            builder.grade_token_ids,
            batch_size=opts.batch_size,
            one_at_a_time=opts.one_at_a_time,
            num_threads=opts.num_threads,
            compile=self._compiled(backend),
        )

    def _content_free(
        self, query_text: str, groups: Sequence[Sequence[int]]
    ) -> tuple[dict[int, np.ndarray], ForwardStats]:
        """P_cf(g | s) by chunk length: one content-free prompt per (query text, chunk length),
        made within this call."""
        _, builder = self._ensure_loaded()
        lengths = list(dict.fromkeys(len(g) for g in groups))
        cf_prompts = [builder.build(query_text, [self.cal.placeholder] * k) for k in lengths]
        cf_probs, cf_stats = self._grade_probs(cf_prompts)
        return dict(zip(lengths, cf_probs, strict=True)), cf_stats

    def _calibrated(
        self,
        groups: Sequence[Sequence[int]],
        probs: Sequence[np.ndarray],
        content_free: dict[int, np.ndarray],
        n: int,
    ) -> tuple[list[np.ndarray], list[dict[str, Any]]]:
        """Each chunk's calibrated P'(g), and every candidate's raw and content-free P(g)."""
        opts = self.cal
        num_grades = get_template(opts.template).num_grades
        calibrated: list[np.ndarray] = []
        item_details: list[dict[str, Any]] = [{} for _ in range(n)]
        for c_idx, (group, p) in enumerate(zip(groups, probs, strict=True)):
            if p.shape != (len(group), num_grades):
                raise RuntimeError(f"backend returned P(g) of shape {p.shape} for chunk {c_idx}")
            p_cf = content_free[len(group)]
            calibrated.append(calibrate(p, p_cf, alpha=opts.alpha, method=opts.method))
            for slot, i in enumerate(group, start=1):
                item_details[i] = {
                    "grade_probs_raw": [float(x) for x in p[slot - 1]],
                    "grade_probs_content_free": [float(x) for x in p_cf[slot - 1]],
                }
        return calibrated, item_details
