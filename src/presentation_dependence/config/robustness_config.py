"""The ``robustness`` block of an experiment config: how presentations are drawn and measured."""

from __future__ import annotations

from dataclasses import dataclass, field

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import opt
from presentation_dependence.presentations import PERTURBATIONS

__all__ = ["RobustnessConfig"]


@dataclass(frozen=True)
class RobustnessConfig:
    """Re-score each query under M presentations of the same candidates (``presdep psi``)."""

    perturbations: list[str] = field(
        default_factory=lambda: ["random_shuffle"],
        metadata={"help": f"Named perturbations: {', '.join(PERTURBATIONS.names())}"},
    )
    num_presentations: int = opt(10, "M: presentations per query and perturbation")
    null_repeats: int | None = opt(
        None,
        "Times the given order is scored again for the same-order null "
        "(null = M). On CPU with one prompt per pass repeats are bit-identical",
    )
    seed: int | None = opt(None, "Seed of the presentations (null = the experiment's seed)")
    ndcg_k: int = opt(10, "Cutoff of the nDCG figures")
    retain_top_k: int | None = opt(10, "Decision: keep the top-k by score (null = off)")
    retain_threshold: float | None = opt(
        1.5, "Decision: keep candidates scoring >= this expected grade (null = off)"
    )
    relevant_grade: int = opt(
        1, "Minimum qrels grade counted relevant (middle_injection, Zeng buckets)"
    )
    bootstrap_resamples: int = opt(2000, "Resamples of the bootstrap intervals over queries")
    confidence: float = opt(0.95, "Level of every interval")

    def __post_init__(self) -> None:
        if not self.perturbations:
            raise ConfigError("robustness.perturbations must name at least one perturbation")
        for i, name in enumerate(self.perturbations):  # with a did-you-mean
            PERTURBATIONS.get(name, key=f"robustness.perturbations[{i}]")
        if len(set(self.perturbations)) != len(self.perturbations):
            raise ConfigError(f"robustness.perturbations repeats a name: {self.perturbations}")
        if self.num_presentations < 2:
            raise ConfigError("robustness.num_presentations must be >= 2 (M presentations)")
        if self.null_repeats is not None and self.null_repeats < 2:
            raise ConfigError("robustness.null_repeats must be >= 2 or null")
        if self.ndcg_k < 1:
            raise ConfigError("robustness.ndcg_k must be >= 1")
        if self.retain_top_k is not None and self.retain_top_k < 1:
            raise ConfigError("robustness.retain_top_k must be >= 1 or null")
        if not 0.5 <= self.confidence < 1:
            raise ConfigError("robustness.confidence must be in [0.5, 1)")
        if self.bootstrap_resamples < 100:
            raise ConfigError("robustness.bootstrap_resamples must be >= 100")
