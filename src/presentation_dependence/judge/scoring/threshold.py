"""The gate's threshold chosen on held-out items, not on the test set (issue 37).

A trained judge is gated on its test cases (``presdep gate``) against a threshold; picking that
threshold after seeing the test score would make the gate pass by construction. The rule here
reads only a held-out sweep's ``summary.json`` (``presdep judge`` on the held-out slice of the
training split: items never trained on and never tested):

    T = floor(ci_low / grid) · grid

where ``ci_low`` is the lower end of the held-out accuracy's bootstrap interval over items
(``score_fail0``, failure credit 0, or ``score_fail_chance``, credit 1/N, as the gate's
``convention``) and ``grid`` the gate's quantisation step. So the gate asks "is the judge on the
test cases no worse than the held-out slice says it can be, allowing for that slice's sampling
noise?": a judge that merely matches its held-out accuracy passes, one that falls below the
held-out interval fails beyond the measured rerun noise. Rounding down keeps T on the grid the
gate quantises case scores to, and never above what the held-out interval supports. The choice
is recorded (:class:`ThresholdChoice`) beside the verdict.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from presentation_dependence.errors import ConfigError

__all__ = ["ThresholdChoice", "heldout_threshold", "read_heldout_threshold"]

_SCORE_KEY = {"fail0": "score_fail0", "chance": "score_fail_chance"}  # gate.convention


@dataclass(frozen=True)
class ThresholdChoice:
    """The threshold and what it was read from."""

    threshold: float
    heldout_summary: str
    score_key: str
    heldout_mean: float
    heldout_ci_low: float
    heldout_items: int
    grid: float
    rule: str = "floor(held-out accuracy's CI lower bound / grid) * grid"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def heldout_threshold(
    summary: dict[str, Any], *, grid: float, convention: str = "fail0", where: str = "summary"
) -> ThresholdChoice:
    """The threshold of the module's rule from a held-out sweep's ``summary`` mapping."""
    if convention not in _SCORE_KEY:
        raise ConfigError(f"convention must be one of {sorted(_SCORE_KEY)}, got {convention!r}")
    if grid < 0:
        raise ConfigError(f"grid must be >= 0, got {grid}")
    key = _SCORE_KEY[convention]
    score = summary.get(key)
    if not isinstance(score, dict) or not {"mean", "ci_low", "n"} <= set(score):
        raise ConfigError(
            f"{where}: no {key} with mean, ci_low and n. Fix: point at the summary.json of a "
            "'presdep judge' run on the held-out items"
        )
    low = float(score["ci_low"])
    threshold = math.floor(low / grid + 1e-9) * grid if grid > 0 else low
    return ThresholdChoice(
        threshold=round(threshold, 10),
        heldout_summary=where,
        score_key=key,
        heldout_mean=float(score["mean"]),
        heldout_ci_low=low,
        heldout_items=int(score["n"]),
        grid=grid,
    )


def read_heldout_threshold(
    path: str | Path, *, grid: float, convention: str = "fail0"
) -> ThresholdChoice:
    """:func:`heldout_threshold` of the ``summary.json`` at ``path``."""
    p = Path(path)
    try:
        summary = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"{p}: cannot read a held-out summary ({type(e).__name__}: {e})") from e
    return heldout_threshold(summary, grid=grid, convention=convention, where=str(p))
