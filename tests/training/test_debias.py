"""DebiasFirst pieces: slot propensities, inverse-propensity weights, balanced views."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from presentation_dependence.errors import ConfigError
from presentation_dependence.training.debias import (
    balanced_views,
    ips_weights,
    propensities_from_psi,
    slot_propensities,
    weights_for_slots,
)


def test_propensity_is_the_slot_mean_over_the_overall_mean() -> None:
    slots = np.array([0, 0, 1, 1, 2, 2])
    scores = np.array([2.0, 2.0, 1.0, 1.0, 0.0, 0.0])
    p = slot_propensities(slots, scores, 3)
    np.testing.assert_allclose(p, [2.0, 1.0, 0.0])
    with pytest.raises(ValueError, match="no score observed at slot"):
        slot_propensities(np.array([0, 1]), np.array([1.0, 1.0]), 3)
    with pytest.raises(ValueError, match="positive mean"):
        slot_propensities(np.array([0, 1]), np.array([0.0, 0.0]), 2)


def test_ips_weights_invert_clip_and_keep_mean_one() -> None:
    w = ips_weights(np.array([2.0, 1.0, 0.5]), clip=5.0)
    assert w.mean() == pytest.approx(1.0)
    assert w[0] < w[1] < w[2]
    assert w[2] / w[0] == pytest.approx(4.0)
    clipped = ips_weights(np.array([100.0, 1.0, 0.01]), clip=2.0)
    assert clipped[2] / clipped[0] == pytest.approx(4.0)  # 2 / (1/2)
    with pytest.raises(ValueError):
        ips_weights(np.array([1.0, 0.0]))


def test_weights_map_slots_by_relative_position() -> None:
    w = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(weights_for_slots(w, np.arange(4), 4), w)
    np.testing.assert_array_equal(weights_for_slots(w, np.arange(2), 2), [1.0, 3.0])
    np.testing.assert_array_equal(weights_for_slots(w, np.arange(8), 8), np.repeat(w, 2))


def test_balanced_views_visit_evenly_spaced_slot_regions() -> None:
    v = balanced_views(10, 2, seed=0, key="q1", epoch=0)
    assert v.shape == (2, 10)
    for row in v:
        assert sorted(row.tolist()) == list(range(10))
    pos = {int(c): [int(np.flatnonzero(row == c)[0]) for row in v] for c in range(10)}
    assert all((b - a) % 10 == 5 for a, b in pos.values())  # shifted by n/V
    again = balanced_views(10, 2, seed=0, key="q1", epoch=0)
    np.testing.assert_array_equal(v, again)
    assert not np.array_equal(v, balanced_views(10, 2, seed=0, key="q1", epoch=1))
    v5 = balanced_views(20, 5, seed=3, key="q", epoch=0)
    for c in range(20):
        slots = sorted(int(np.flatnonzero(row == c)[0]) for row in v5)
        assert len({s // 4 for s in slots}) == 5  # one visit per region of 4 slots


def test_propensities_from_a_psi_folder(tmp_path: Path) -> None:
    psi = tmp_path / "run" / "psi"
    psi.mkdir(parents=True)
    slot = np.array([1, 2, 1, 2, 1, 2])
    np.savez(
        psi / "grade_distributions.npz",
        variant=np.array(["random_shuffle"] * 4 + ["same_order"] * 2),
        slot=slot,
        chunk=np.zeros(6, dtype=int),
        score=np.array([2.0, 1.0, 2.0, 1.0, 9.0, 9.0]),
    )
    np.testing.assert_allclose(propensities_from_psi(tmp_path / "run"), [4 / 3, 2 / 3])
    with pytest.raises(ConfigError, match="grade_distributions"):
        propensities_from_psi(tmp_path / "missing")
