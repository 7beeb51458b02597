"""The teacher-to-grade calibration map: raw teacher scores -> training labels on the 0..3 scale.

A student is trained by squared error to its teacher's scores, read on the 0..3 grade scale.
A teacher whose scores already mean grades (the expected-grade readout, the gold-label
teacher) needs no map. A bi-encoder's do not: E5's cosines sit in ~0.79..0.89 (mean 0.860 for
grade-0 passages, 0.901 for grade-3 ones on DL19), so any map linear in the cosine, the
reranker's own ``1.5 * (c + 1)`` included, gives nearly flat targets and a student that learns
"score everything alike". The map is fitted once, on the training candidates' raw teacher scores
only (the silver file's, which are training candidates by construction; never a test or
held-out score), stored with the labels, and applied identically at every use. Every function
here is pure: inputs are never written, and the same scores and config give the same map.

Kinds
-----
``identity``
    ``f(s) = s``. For teachers on the grade scale; the map of every silver file made before the
    map existed.
``cdf`` (the one to use for a similarity teacher)
    ``f(s) = 3 · F(s)`` with ``F`` the training scores' empirical distribution function, stored
    as ``quantiles`` points (default 101: the 0th, 1st, ..., 100th percentile, numpy's linear
    quantiles) and interpolated linearly between them: knot ``k`` is
    ``(x_k, y_k) = (quantile(s, p_k), 3 · p_k)`` with ``p_k = k / (quantiles − 1)``. Scores
    below (above) the fitted range map to 0 (3). The labels of the training scores are spread
    evenly over 0..3 whatever the teacher's scale; only the teacher's *order* of the candidates
    is kept, across queries as well as within one.
``affine``
    ``f(s) = clip(3 · (s − q_lo) / (q_hi − q_lo), 0, 3)`` with ``q_lo``, ``q_hi`` the
    ``lo_percentile`` and ``hi_percentile`` (default 5 and 95) of the training scores: keeps the
    teacher's score differences, not only its order, at the cost of clipping the tails.

The judgement calls
-------------------
* Ties (the one for ``cdf``): where several knots share a raw score ``x`` (a point mass, e.g. a
  teacher that scores many candidates exactly alike), they become one knot at the *mean* of
  their ``y``: a tied score maps to the middle of its jump in ``3 · F``, as a mid-rank would,
  not to its top or bottom.
* Degenerate data: when every training score is equal (``cdf``) or ``q_hi == q_lo``
  (``affine``), the map is the constant 1.5, the middle of the scale: no order to teach.
* Per score, then mean: a silver file with T teacher orders is calibrated one score at a time
  and then averaged over the orders (``SilverQuery.labels``), so the T = 1 label is the map of
  one order's scores and the order mean of calibrated labels is what an order-averaged student
  sees. For an order-free teacher the two are the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import opt

__all__ = [
    "CALIBRATION_KINDS",
    "IDENTITY",
    "Calibration",
    "CalibrationConfig",
    "fit_calibration",
]

CALIBRATION_KINDS = ("identity", "cdf", "affine")
GRADE_MAX = 3.0


@dataclass(frozen=True)
class CalibrationConfig:
    """The ``silver.calibration`` block: which map, and its parameters (docstring above)."""

    kind: Literal["identity", "cdf", "affine"] = opt(
        "identity", "identity (teacher already on 0..3) | cdf (3·F_train(s)) | affine"
    )
    quantiles: int = opt(101, "cdf: stored quantile points (101 = every percentile)")
    lo_percentile: float = opt(5.0, "affine: the training percentile mapped to 0")
    hi_percentile: float = opt(95.0, "affine: the training percentile mapped to 3")

    def __post_init__(self) -> None:
        if self.kind not in CALIBRATION_KINDS:
            raise ConfigError(
                f"calibration.kind must be one of {CALIBRATION_KINDS}, got {self.kind!r}"
            )
        q = self.quantiles
        if isinstance(q, bool) or not isinstance(q, int) or q < 2:
            raise ConfigError(f"calibration.quantiles must be an integer >= 2, got {q!r}")
        lo, hi = self.lo_percentile, self.hi_percentile
        for name, v in (("lo_percentile", lo), ("hi_percentile", hi)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 100:
                raise ConfigError(f"calibration.{name} must be in [0, 100], got {v!r}")
        if not lo < hi:
            raise ConfigError(
                f"calibration.lo_percentile ({lo}) must be below hi_percentile ({hi})"
            )


@dataclass(frozen=True)
class Calibration:
    """A fitted map: piecewise linear through ``(knots_x, knots_y)``, constant outside.

    ``identity`` has no knots. ``knots_x`` is strictly increasing, ``knots_y`` non-decreasing
    in [0, 3], so the map is monotone and its values lie in [0, 3].
    """

    config: CalibrationConfig
    knots_x: tuple[float, ...] = ()
    knots_y: tuple[float, ...] = ()
    num_fitted: int = 0

    def __post_init__(self) -> None:
        x = np.asarray(self.knots_x, dtype=np.float64)
        y = np.asarray(self.knots_y, dtype=np.float64)
        if (self.config.kind == "identity") != (x.size == 0):
            raise ValueError(f"a {self.config.kind} calibration with {x.size} knots")
        if x.shape != y.shape or not (np.isfinite(x).all() and np.isfinite(y).all()):
            raise ValueError("calibration knots: x and y must be finite and of one length")
        if x.size > 1 and not (np.all(np.diff(x) > 0) and np.all(np.diff(y) >= 0)):
            raise ValueError("calibration knots: x must increase strictly, y must not decrease")
        if y.size and not (y.min() >= 0 and y.max() <= GRADE_MAX):
            raise ValueError(f"calibration knots: y must lie in [0, {GRADE_MAX:g}]")

    @property
    def kind(self) -> str:
        return self.config.kind

    def __call__(self, scores: ArrayLike) -> NDArray[np.float64]:
        """The map applied to every score (any shape); a new float64 array."""
        s = np.array(scores, dtype=np.float64)
        if self.kind == "identity":
            return s
        if not np.isfinite(s).all():
            raise ValueError("calibration: the scores must be finite")
        return np.asarray(np.interp(s, self.knots_x, self.knots_y), dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "params": {k: v for k, v in asdict(self.config).items() if k != "kind"},
            "knots_x": list(self.knots_x),
            "knots_y": list(self.knots_y),
            "num_fitted": self.num_fitted,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Calibration:
        """The inverse of :meth:`to_dict`; ``ValueError`` naming what is wrong otherwise."""
        try:
            config = CalibrationConfig(kind=d["kind"], **dict(d.get("params", {})))
            return cls(
                config,
                tuple(float(v) for v in d.get("knots_x", ())),
                tuple(float(v) for v in d.get("knots_y", ())),
                int(d.get("num_fitted", 0)),
            )
        except (KeyError, TypeError, ConfigError) as e:
            raise ValueError(f"not a calibration map ({type(e).__name__}: {e})") from None


IDENTITY = Calibration(CalibrationConfig())


def _merge_ties(x: NDArray[np.float64], y: NDArray[np.float64]) -> tuple[list[float], list[float]]:
    """One knot per distinct x, at the mean of its y (x sorted, y non-decreasing)."""
    xs, starts = np.unique(x, return_index=True)
    ends = [*starts[1:], x.size]
    return xs.tolist(), [float(np.mean(y[a:b])) for a, b in zip(starts, ends, strict=True)]


def fit_calibration(scores: ArrayLike, config: CalibrationConfig | None = None) -> Calibration:
    """Fit the map ``config`` names on ``scores`` (the training candidates' raw teacher scores).

    Only ``scores`` enter the fit. ``ValueError`` on an empty or non-finite input.

    >>> cal = fit_calibration([0.80, 0.82, 0.84, 0.86, 0.88], CalibrationConfig("cdf", quantiles=5))
    >>> cal([0.80, 0.84, 0.88, 0.95]).tolist()
    [0.0, 1.5, 3.0, 3.0]
    >>> fit_calibration([0.0, 1.0, 2.0], CalibrationConfig("affine", lo_percentile=0,
    ...                 hi_percentile=100))([1.5]).tolist()
    [2.25]
    """
    config = config or CalibrationConfig()
    s = np.asarray(scores, dtype=np.float64).ravel()
    if config.kind == "identity":
        return Calibration(config, num_fitted=int(s.size))
    if s.size == 0:
        raise ValueError("calibration: no scores to fit on")
    if not np.isfinite(s).all():
        raise ValueError("calibration: the scores to fit on must be finite")
    if config.kind == "cdf":
        p = np.linspace(0.0, 1.0, config.quantiles)
        knots = np.maximum.accumulate(np.quantile(s, p))  # monotone despite float rounding
        xs, ys = _merge_ties(knots, GRADE_MAX * p)
    else:
        lo, hi = np.percentile(s, [config.lo_percentile, config.hi_percentile])
        xs, ys = ([float(lo), float(hi)], [0.0, GRADE_MAX]) if hi > lo else ([float(lo)], [0.0])
    if len(xs) == 1:  # every training score equal (or q_lo == q_hi): no order to teach
        ys = [GRADE_MAX / 2]
    return Calibration(config, tuple(xs), tuple(ys), int(s.size))
