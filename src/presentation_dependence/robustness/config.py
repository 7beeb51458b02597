"""The ``robustness`` block of an experiment config: how presentations are drawn and measured."""

from __future__ import annotations

from dataclasses import dataclass, field

from presentation_dependence.errors import ConfigError

__all__ = ["RobustnessConfig"]


@dataclass(frozen=True)
class RobustnessConfig:
    """Re-score each query under M presentations of the same candidates (``presdep psi``)."""

    perturbations: list[str] = field(
        default_factory=lambda: ["random_shuffle"],
        metadata={
            "help": "Named perturbations: random_shuffle, reverse, cyclic_shift, "
            "middle_injection, pool_perturbation"
        },
    )
    num_presentations: int = field(
        default=10, metadata={"help": "M: presentations per query and perturbation"}
    )
    null_repeats: int | None = field(
        default=None,
        metadata={
            "help": "Times the given order is scored again for the same-order null "
            "(null = M). On CPU with one prompt per pass repeats are bit-identical"
        },
    )
    seed: int | None = field(
        default=None, metadata={"help": "Seed of the presentations (null = the experiment's seed)"}
    )
    ndcg_k: int = field(default=10, metadata={"help": "Cutoff of the nDCG figures"})
    retain_top_k: int | None = field(
        default=10, metadata={"help": "Decision: keep the top-k by score (null = off)"}
    )
    retain_threshold: float | None = field(
        default=1.5,
        metadata={"help": "Decision: keep candidates scoring >= this expected grade (null = off)"},
    )
    relevant_grade: int = field(
        default=1,
        metadata={"help": "Minimum qrels grade counted relevant (middle_injection, Zeng buckets)"},
    )
    bootstrap_resamples: int = field(
        default=2000, metadata={"help": "Resamples of the bootstrap intervals over queries"}
    )
    confidence: float = field(default=0.95, metadata={"help": "Level of every interval"})

    def __post_init__(self) -> None:
        from presentation_dependence.presentations import PERTURBATIONS

        if not self.perturbations:
            raise ConfigError("robustness.perturbations must name at least one perturbation")
        for name in self.perturbations:
            PERTURBATIONS.get(name)  # raises with a did-you-mean
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
