"""The teacher-to-grade calibration map (training/calibration.py) as pure functions."""

from __future__ import annotations

import json

import numpy as np
import pytest

from presentation_dependence.errors import ConfigError
from presentation_dependence.training.calibration import (
    IDENTITY,
    Calibration,
    CalibrationConfig,
    fit_calibration,
)

CDF = CalibrationConfig("cdf")
AFFINE = CalibrationConfig("affine", lo_percentile=10, hi_percentile=90)


def compressed_scores(n: int = 400, seed: int = 0) -> np.ndarray:
    """E5-like cosines: everything between ~0.79 and ~0.91."""
    return np.random.default_rng(seed).normal(0.86, 0.02, size=n).clip(0.79, 0.91)


@pytest.mark.parametrize("config", [CDF, AFFINE], ids=["cdf", "affine"])
def test_monotone_and_in_grade_range(config):
    train = compressed_scores()
    cal = fit_calibration(train, config)
    grid = np.linspace(0.5, 1.2, 2001)  # far beyond the fitted range on both sides
    out = cal(grid)
    assert np.all(np.diff(out) >= 0)
    assert out.min() == 0.0 and out.max() == 3.0
    assert cal([train.min() - 1.0]).tolist() == [0.0] and cal([train.max() + 1.0]).tolist() == [3.0]


def test_cdf_spreads_compressed_scores_evenly():
    train = compressed_scores()
    labels = fit_calibration(train, CDF)(train)
    naive = 1.5 * (train + 1.0)  # the bi-encoders' own monotone map onto 0..3
    assert naive.std() < 0.05
    assert labels.std() > 0.8  # uniform on [0, 3] has std 0.87
    # 3 * F: the share of training scores below each label's score, times 3
    ranks = (np.argsort(np.argsort(train)) + 0.5) / train.size
    np.testing.assert_allclose(labels, 3 * ranks, atol=0.05)
    # the teacher's order is kept (no ties in these scores)
    assert np.array_equal(np.argsort(labels, kind="stable"), np.argsort(train, kind="stable"))


def test_affine_is_the_documented_formula():
    train = compressed_scores()
    lo, hi = np.percentile(train, [10, 90])
    probe = np.linspace(0.75, 0.95, 41)
    expected = np.clip(3 * (probe - lo) / (hi - lo), 0, 3)
    np.testing.assert_allclose(fit_calibration(train, AFFINE)(probe), expected, atol=1e-12)


def test_identity_passes_scores_through_and_is_the_default():
    s = np.array([[0.0, 2.5], [3.0, 1.25]])
    assert fit_calibration(s).kind == "identity"
    np.testing.assert_array_equal(IDENTITY(s), s)
    np.testing.assert_array_equal(fit_calibration(s)(s), s)


@pytest.mark.parametrize("config", [CDF, AFFINE, CalibrationConfig()], ids=["cdf", "affine", "id"])
def test_round_trip_through_json(config):
    cal = fit_calibration(compressed_scores(), config)
    back = Calibration.from_dict(json.loads(json.dumps(cal.to_dict())))
    assert back == cal
    probe = np.linspace(0.7, 1.0, 31)
    np.testing.assert_array_equal(back(probe), cal(probe))


def test_fit_uses_only_the_scores_it_is_given():
    train, other = compressed_scores(seed=1), compressed_scores(seed=2) + 0.02
    before = train.copy()
    cal = fit_calibration(train, CDF)
    np.testing.assert_array_equal(train, before)  # input not written
    assert cal.num_fitted == train.size
    assert fit_calibration(train.copy(), CDF) == cal  # same scores, same map
    assert fit_calibration(other, CDF) != cal
    # applying the map to other scores does not change it
    cal(other)
    assert fit_calibration(train, CDF) == cal


def test_ties_map_to_the_middle_of_their_jump():
    # 3 of 4 training scores are tied at 0.5: F jumps from 0 to 0.75 there
    cal = fit_calibration([0.5, 0.5, 0.5, 0.9], CalibrationConfig("cdf", quantiles=5))
    assert cal.knots_x[0] == 0.5 and cal.knots_x[1] > 0.5  # the three tied knots merged
    tied = float(cal([0.5])[0])
    assert 0.0 < tied < 3 * 0.75
    assert cal([0.9]).tolist() == [3.0]


@pytest.mark.parametrize("config", [CDF, AFFINE], ids=["cdf", "affine"])
def test_constant_scores_map_to_the_middle(config):
    cal = fit_calibration([0.8] * 5, config)
    assert cal([0.0, 0.8, 1.0]).tolist() == [1.5, 1.5, 1.5]


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="no scores"):
        fit_calibration([], CDF)
    with pytest.raises(ValueError, match="finite"):
        fit_calibration([0.1, float("nan")], CDF)
    with pytest.raises(ConfigError, match="kind"):
        CalibrationConfig("linear")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="quantiles"):
        CalibrationConfig("cdf", quantiles=1)
    with pytest.raises(ConfigError, match="below"):
        CalibrationConfig("affine", lo_percentile=90, hi_percentile=10)
    good = fit_calibration(compressed_scores(), CDF).to_dict()
    for broken in (
        {**good, "knots_y": good["knots_y"][::-1]},  # decreasing
        {**good, "knots_y": [v * 2 for v in good["knots_y"]]},  # beyond 3
        {**good, "kind": "identity"},  # identity with knots
        {k: v for k, v in good.items() if k != "kind"},
    ):
        with pytest.raises(ValueError):
            Calibration.from_dict(broken)
