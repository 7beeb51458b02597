"""What the score stage takes from a task's config, resolved once into one typed record."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from presentation_dependence.seeding import named_rng

__all__ = ["ScoringSettings"]


@dataclass(frozen=True)
class ScoringSettings:
    """The seed every bootstrap draw comes from (each on its own named stream, :meth:`rng`), the
    bootstrap resamples and the confidence level of every interval (a judge config's ``seed``,
    ``bootstrap_resamples`` and ``confidence``)."""

    seed: int = 0
    n_resamples: int = 2000
    confidence: float = 0.95

    def rng(self, stream: str) -> np.random.Generator:
        """The generator of the named stream ``stream`` (:func:`~presentation_dependence.seeding.named_rng`)."""
        return named_rng(self.seed, stream)
