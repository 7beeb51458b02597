"""paired_comparison: the bootstrap and the permutation test from one named stream."""

from __future__ import annotations

import pytest

from presentation_dependence.metrics import (
    paired_bootstrap,
    paired_comparison,
    paired_permutation_test,
)
from presentation_dependence.seeding import rng_from


def test_exact_permutation_p_and_constant_difference_by_hand():
    # d = (1, 1, 1, 4), mean 1.75: of the 16 sign patterns only all + and all − reach |1.75|.
    got = paired_comparison([1, 2, 3, 5], [0, 1, 2, 1], stream=(0, "x"), n_resamples=99)
    assert got["mean_diff"] == pytest.approx(1.75)
    assert got["permutation_p"] == pytest.approx(2 / 16)
    assert list(got) == ["mean_diff", "ci_low", "ci_high", "p_value", "permutation_p"]
    # constant d = 1: the CI is (1, 1) and no recentred resample reaches |1|, so p = 1/(B+1)
    const = paired_comparison([1, 2, 3], [0, 1, 2], stream=(0, "x"), n_resamples=99)
    assert (const["ci_low"], const["ci_high"], const["p_value"]) == (1.0, 1.0, 1 / 100)


def test_streams_are_the_named_stream_with_its_tags():
    a, b = [0.9, 0.1, 0.5, 0.7, 0.3, 0.8], [0.2, 0.4, 0.1, 0.6, 0.3, 0.1]
    got = paired_comparison(a, b, stream=(3, "m"), n_resamples=200, n_permutations=50)
    boot = paired_bootstrap(a, b, rng=rng_from(3, "m"), n_resamples=200)
    perm = paired_permutation_test(a, b, rng=rng_from(3, "m", 1), n_resamples=50)
    assert got == {**boot, "permutation_p": perm["p_value"]}
    tagged = paired_comparison(a, b, stream=(3, "m"), n_resamples=200, tags=(("boot",), ("perm",)))
    boot = paired_bootstrap(a, b, rng=rng_from(3, "m", "boot"), n_resamples=200)
    perm = paired_permutation_test(a, b, rng=rng_from(3, "m", "perm"))
    assert tagged == {**boot, "permutation_p": perm["p_value"]}
