"""The blocks of a training config that say what the student learns and how a checkpoint is
chosen: ``loss``, ``propensity`` (DebiasFirst), ``splits``, ``selection`` (λ) and
``early_stopping``. :mod:`.config` gathers them into :class:`~.config.TrainingConfig`, which
re-exports them; docs/TRAINING-RUNS.md documents every key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from presentation_dependence.data.config import DataConfig
from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import opt, opt_factory

__all__ = [
    "EarlyStoppingOptions",
    "LossOptions",
    "PropensityOptions",
    "SelectionOptions",
    "SplitsConfig",
    "StoppingRule",
    "positive",
]


def positive(name: str, value: Any, *, minimum: float = 1, allow_none: bool = False) -> None:
    """Refuse ``value`` unless it is a number >= ``minimum`` (or None with ``allow_none``)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
        raise ConfigError(
            f"{name} must be >= {minimum}{' or null' if allow_none else ''}, got {value!r}"
        )


@dataclass(frozen=True)
class LossOptions:
    """The ``loss`` block: the fit term and an optional listwise ranking term."""

    fit: Literal["mse", "ce"] = opt(
        "mse",
        "mse: squared error of E[g] to the label; ce: cross-entropy of P(g) against the label's "
        "two-point grade distribution (no vanishing gradient once P(g) is peaked)",
    )
    rank_weight: float = opt(0.0, "weight of the ranking term over a query's candidates")
    rank_temperature: float = opt(1.0, "ranking-term temperature τ (on the 0–3 scale)")
    rank_loss: Literal["listnet", "listmle"] = opt(
        "listnet",
        "listnet: cross-entropy to softmax(label/τ), the teacher as a distribution; listmle: "
        "Plackett–Luce likelihood of the teacher's ordering of the list (ties: input order)",
    )
    fit_weight: float = opt(
        1.0, "weight of the fit term; 0 trains on the ranking term (and λ) alone"
    )
    rank_target: Literal["label", "raw"] = opt(
        "label",
        "what the ranking term follows: label, the calibrated labels (the 0–3 scale); raw, the "
        "teacher's uncalibrated scores, on their own scale (set rank_temperature to match it)",
    )

    def __post_init__(self) -> None:
        if self.rank_weight < 0:
            raise ConfigError(f"loss.rank_weight must be >= 0, got {self.rank_weight}")
        if not self.rank_temperature > 0:
            raise ConfigError(f"loss.rank_temperature must be > 0, got {self.rank_temperature}")
        if self.fit_weight < 0:
            raise ConfigError(f"loss.fit_weight must be >= 0, got {self.fit_weight}")
        if self.fit_weight == 0 and self.rank_weight == 0:
            raise ConfigError(
                "loss.fit_weight and loss.rank_weight are both 0: nothing ties the scores to "
                "the teacher (only consistency would remain, which constant scores satisfy). "
                "Fix: give one of them a positive weight"
            )


@dataclass(frozen=True)
class PropensityOptions:
    """The ``propensity`` block of ``debias_first``: where the slot propensities come from."""

    psi_dir: str = opt(
        "",
        "a PSI run folder of the off-the-shelf scorer (its psi/grade_distributions.npz) on "
        "non-test queries; the propensity of slot j is its mean score over shuffled "
        "presentations divided by the mean over all slots",
    )
    clip: float = opt(5.0, "inverse-propensity weights are clipped to [1/clip, clip]")

    def __post_init__(self) -> None:
        if not self.clip >= 1:
            raise ConfigError(f"propensity.clip must be >= 1, got {self.clip}")


@dataclass(frozen=True)
class SplitsConfig:
    """Query sets that must stay apart from training (docs/EVAL-PROTOCOL.md, λ selection)."""

    test: list[DataConfig] = opt_factory(list, "the test queries (never trained or selected on)")
    heldout: list[DataConfig] = opt_factory(list, "the held-out queries λ is selected on")


@dataclass(frozen=True)
class StoppingRule:
    """The stopping rule of an ``early_stopping`` block (:mod:`.early_stop`); a student's
    (:class:`EarlyStoppingOptions`) and a trained judge's block add their ``criterion`` and
    how a checkpoint is measured."""

    patience: int | None = opt(
        None,
        "stop after this many checkpoints (train.save_steps apart) without an improvement of "
        "the criterion; the saved adapter is the best checkpoint's. null = off",
    )
    min_delta: float = opt(0.0, "an improvement must exceed this to count")

    def __post_init__(self) -> None:
        if self.patience is not None:
            positive("early_stopping.patience", self.patience)
        if self.min_delta < 0:
            raise ConfigError(f"early_stopping.min_delta must be >= 0, got {self.min_delta}")

    @property
    def enabled(self) -> bool:
        return self.patience is not None


@dataclass(frozen=True)
class EarlyStoppingOptions(StoppingRule):
    """A student's ``early_stopping`` block: stop when the held-out curve stops improving
    (every checkpoint's point is the learning curve's, cached)."""

    criterion: Literal["ndcg_mean", "tau_psi"] = opt(
        "ndcg_mean", "ndcg_mean: higher nDCG@10 over the shuffles is better; tau_psi: lower"
    )
    max_queries: int | None = opt(40, "held-out queries per point (stratified by source)")
    num_presentations: int = opt(4, "M shuffled presentations per held-out query")
    seed: int = opt(0, "seed of the held-out presentations")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_queries is not None:
            positive("early_stopping.max_queries", self.max_queries)
        positive("early_stopping.num_presentations", self.num_presentations)


@dataclass(frozen=True)
class SelectionOptions:
    """The ``selection`` block: the λ grid and how one is chosen (``select_lambda.py``)."""

    lambdas: list[float] = opt_factory(lambda: [0.3, 1.0, 3.0], "the λ grid (each > 0)")
    criterion: Literal["ndcg_mean", "tau_psi"] = opt(
        "ndcg_mean",
        "ndcg_mean: highest mean nDCG@k over shuffled presentations; tau_psi: lowest τ-PSI",
    )
    num_presentations: int = opt(5, "M shuffled presentations per held-out query")
    seed: int = opt(0, "seed of the held-out presentations")
    ndcg_k: int = opt(10, "nDCG cutoff")
    at_step: int | None = opt(
        None,
        "compare the λ students at this step of their runs (each trained that far, its schedule "
        "the full run's; the chosen one then trained to the end); null: each trained in full",
    )

    def __post_init__(self) -> None:
        if not self.lambdas or any(lam <= 0 for lam in self.lambdas):
            raise ConfigError(
                f"selection.lambdas must be a non-empty list of λ > 0, got {self.lambdas}"
            )
        if len(set(self.lambdas)) != len(self.lambdas):
            raise ConfigError(f"selection.lambdas repeats a value: {self.lambdas}")
        positive("selection.num_presentations", self.num_presentations, minimum=2)
        positive("selection.ndcg_k", self.ndcg_k)
        positive("selection.at_step", self.at_step, allow_none=True)
