"""Tests of the shared-resample cluster-bootstrap tests and ratio draws."""

from __future__ import annotations

import numpy as np
import pytest

from rungbench.errors import InputError
from rungbench.stats import (
    bootstrap_pvalue,
    cluster_ratio_draws,
    cluster_tests,
    nan_interval,
    paired_cluster_bootstrap,
)


def test_pvalue_matches_the_hand_formula() -> None:
    """Draws [-1, 1, 2, 3] give p = 2·min(1+1, 1+3)/5 = 0.8; all-positive draws give 2/(B+1)."""
    assert bootstrap_pvalue(np.array([-1.0, 1.0, 2.0, 3.0])) == pytest.approx(0.8)
    assert bootstrap_pvalue(np.ones(999)) == pytest.approx(2 / 1000)
    assert bootstrap_pvalue(np.zeros(9)) == 1.0


def test_cluster_tests_reproduce_the_paired_bootstrap_on_the_same_seed() -> None:
    """A single contrast a − b gives the same mean and interval as paired_cluster_bootstrap."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(0.3, 1, 80), rng.normal(0, 1, 80)
    clusters = np.arange(80) % 20
    ref = paired_cluster_bootstrap(a, b, clusters, n_boot=500, rng=4)
    got = cluster_tests({"d": a - b}, clusters, n_boot=500, rng=4)["d"]
    assert (got.mean, got.low, got.high) == pytest.approx((ref.mean, ref.low, ref.high))
    assert got.n_clusters == 20 and got.sd == pytest.approx(float(np.std(a - b, ddof=1)))


def test_shared_resamples_keep_linear_contrasts_consistent() -> None:
    """Contrasts share resamples: the p of x and of 2x agree exactly, as do scaled bounds."""
    x = np.random.default_rng(1).normal(0.2, 1, 60)
    tests = cluster_tests({"x": x, "2x": 2 * x}, np.arange(60) % 15, n_boot=400, rng=2)
    assert tests["x"].p == tests["2x"].p
    assert tests["2x"].low == pytest.approx(2 * tests["x"].low)


def test_strong_effect_has_small_p_and_an_interval_excluding_zero() -> None:
    """A mean of 1 with unit noise over 30 clusters: p at its floor, interval above 0."""
    x = np.random.default_rng(3).normal(1.0, 1, 90)
    t = cluster_tests({"x": x}, np.arange(90) % 30, n_boot=999, rng=1)["x"]
    assert t.p == pytest.approx(2 / 1000) and t.excludes_zero() and t.low > 0


def test_ratio_draws_estimate_sums_and_mark_empty_resamples() -> None:
    """Σnum/Σden is the estimate; a resample without a denominator is NaN and dropped."""
    num = np.array([1.0, 0.0, 1.0, 1.0])
    den = np.array([1.0, 0.0, 1.0, 2.0])
    est, draws = cluster_ratio_draws({"r": (num, den)}, ["a", "b", "c", "d"], n_boot=400,
                                     rng=0)
    assert est["r"] == pytest.approx(3 / 4)
    assert np.isnan(draws["r"]).any()
    low, high, dropped = nan_interval(draws["r"])
    assert dropped == int(np.isnan(draws["r"]).sum()) and 0.0 <= low <= high <= 1.0


def test_bad_inputs_name_their_field() -> None:
    """Unequal contrasts and a zero denominator are input errors."""
    with pytest.raises(InputError, match="units"):
        cluster_tests({"a": [1.0, 2.0], "b": [1.0]}, [0, 1], n_boot=100, rng=0)
    with pytest.raises(InputError, match="zero denominator"):
        cluster_ratio_draws({"r": ([0.0, 0.0], [0.0, 0.0])}, [0, 1], n_boot=100, rng=0)
