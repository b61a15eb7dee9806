"""Paired summaries and the seeded cluster bootstrap (seeds 000 and 003: cluster by source)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.contingency_tables import mcnemar

from rungbench.errors import InputError
from rungbench.stats import PairedDelta, paired_cluster_bootstrap, paired_summary
from rungbench.stats.paired import bootstrap_means, cluster_codes, resample_cluster_counts


def _clustered(seed: int, n_clusters: int = 40, size: int = 3,
               shift: float = 0.1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Paired data where most variance of a − b is shared within a cluster."""
    rng = np.random.default_rng(seed)
    clusters = np.repeat(np.arange(n_clusters), size)
    cluster_effect = rng.normal(scale=1.0, size=n_clusters)[clusters]
    b = rng.normal(size=clusters.size)
    a = b + shift + cluster_effect + rng.normal(scale=0.1, size=clusters.size)
    return a, b, clusters


def test_same_seed_gives_identical_delta() -> None:
    """The bootstrap is deterministic: an int seed or an equal Generator give the same result."""
    a, b, clusters = _clustered(1)
    first = paired_cluster_bootstrap(a, b, clusters, n_boot=500, rng=7)
    again = paired_cluster_bootstrap(a, b, clusters, n_boot=500, rng=7)
    from_generator = paired_cluster_bootstrap(a, b, clusters, n_boot=500,
                                              rng=np.random.default_rng(7))
    assert first == again == from_generator


def test_different_seed_moves_the_interval() -> None:
    """A different seed draws different resamples, so the bounds change but the mean does not."""
    a, b, clusters = _clustered(1)
    one = paired_cluster_bootstrap(a, b, clusters, n_boot=500, rng=7)
    two = paired_cluster_bootstrap(a, b, clusters, n_boot=500, rng=8)
    assert one.mean == two.mean
    assert (one.low, one.high) != (two.low, two.high)


def test_delta_reports_mean_difference_and_counts() -> None:
    """mean is mean(a − b); n, n_clusters, n_boot and alpha are reported as given."""
    a, b, clusters = _clustered(2, n_clusters=25, size=4)
    delta = paired_cluster_bootstrap(a, b, clusters, n_boot=300, alpha=0.1, rng=1)
    assert delta.mean == pytest.approx(float(np.mean(a - b)))
    assert (delta.n, delta.n_clusters, delta.n_boot, delta.alpha) == (100, 25, 300, 0.1)
    assert delta.low < delta.mean < delta.high


def test_whole_clusters_are_resampled() -> None:
    """With two equal clusters of constant difference 0 and 1, resample means are 0, ½ or 1."""
    diff = np.array([0.0] * 5 + [1.0] * 5)
    codes, n_clusters = cluster_codes(["g1"] * 5 + ["g2"] * 5, 10)
    counts = resample_cluster_counts(n_clusters, 1000, np.random.default_rng(0))
    means = bootstrap_means(diff, codes, n_clusters, counts, "unit")
    assert set(np.round(means, 12)) == {0.0, 0.5, 1.0}
    delta = paired_cluster_bootstrap(diff, np.zeros(10), ["g1"] * 5 + ["g2"] * 5,
                                     n_boot=2000, rng=0)
    assert (delta.low, delta.high) == (0.0, 1.0)


def test_clustering_widens_interval_for_correlated_units() -> None:
    """Clustering at the source widens the interval versus treating units as independent."""
    a, b, clusters = _clustered(3)
    clustered = paired_cluster_bootstrap(a, b, clusters, n_boot=1000, rng=5)
    naive = paired_cluster_bootstrap(a, b, np.arange(a.size), n_boot=1000, rng=5)
    assert clustered.high - clustered.low > 1.4 * (naive.high - naive.low)


def test_iid_interval_matches_normal_theory() -> None:
    """For iid differences (one unit per cluster) the width is close to 2·1.96·SD/√n."""
    rng = np.random.default_rng(11)
    diff = rng.normal(0.2, 1.0, size=400)
    delta = paired_cluster_bootstrap(diff, np.zeros(400), np.arange(400), n_boot=4000, rng=2)
    expected = 2 * 1.959964 * diff.std(ddof=1) / np.sqrt(400)
    assert delta.high - delta.low == pytest.approx(expected, rel=0.08)


def test_cluster_weighting_gives_each_cluster_equal_weight() -> None:
    """Unequal clusters: unit weighting averages units, cluster weighting averages clusters."""
    a = [1.0, 0.0, 0.0, 0.0]
    b = [0.0, 0.0, 0.0, 0.0]
    clusters = ["solo", "trio", "trio", "trio"]
    unit = paired_cluster_bootstrap(a, b, clusters, n_boot=200, rng=0)
    per_cluster = paired_cluster_bootstrap(a, b, clusters, n_boot=200, rng=0,
                                           weighting="cluster")
    assert unit.mean == pytest.approx(0.25)
    assert per_cluster.mean == pytest.approx(0.5)
    assert per_cluster.weighting == "cluster"


@settings(max_examples=30, deadline=None)
@given(data=st.lists(st.tuples(st.floats(-5, 5), st.floats(-5, 5), st.integers(0, 6)),
                     min_size=2, max_size=40), seed=st.integers(0, 2**32 - 1))
def test_interval_lies_within_range_of_differences(
    data: list[tuple[float, float, int]], seed: int
) -> None:
    """Bootstrap bounds are ordered and lie within the range of the unit differences."""
    a, b, clusters = (list(x) for x in zip(*data, strict=True))
    if len(set(clusters)) < 2:
        clusters[0] = 99
    delta = paired_cluster_bootstrap(a, b, clusters, n_boot=100, rng=seed)
    diff = np.subtract(a, b)
    assert diff.min() - 1e-9 <= delta.low <= delta.high <= diff.max() + 1e-9


def test_to_json_and_excludes_zero() -> None:
    """excludes_zero is true only when the interval avoids zero; to_json keeps every field."""
    assert PairedDelta(0.2, 0.1, 0.3, 10, 5, 100).excludes_zero()
    assert not PairedDelta(0.2, -0.1, 0.3, 10, 5, 100).excludes_zero()
    assert PairedDelta(0.2, 0.1, 0.3, 10, 5, 100).to_json()["n_clusters"] == 5


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"b": [1.0, 2.0]}, "b"),
     ({"a": [1.0, float("nan"), 0.0]}, "a"),
     ({"clusters": ["x", "x", "x"]}, "clusters"),
     ({"clusters": ["x", "y"]}, "clusters"),
     ({"n_boot": 10}, "n_boot"),
     ({"alpha": 1.5}, "alpha"),
     ({"weighting": "source"}, "weighting"),
     ({"rng": "seven"}, "rng")],
)
def test_bad_input_raises_input_error_naming_field(kwargs: dict[str, object], field: str) -> None:
    """Mismatched lengths, NaN, one cluster, few resamples, bad alpha/weighting/rng are refused."""
    args: dict[str, object] = {"a": [1.0, 0.0, 1.0], "b": [0.0, 0.0, 1.0],
                               "clusters": ["x", "y", "y"], "rng": 0, **kwargs}
    with pytest.raises(InputError) as info:
        paired_cluster_bootstrap(**args)  # type: ignore[arg-type]
    assert info.value.field == field


def test_binary_summary_counts_discordance() -> None:
    """0/1 outcomes: discordance, one-sided counts and mean/SD of the differences by hand."""
    summary = paired_summary([1, 0, 1, 1, 0], [0, 0, 1, 0, 1])
    assert summary.is_binary
    assert (summary.a_only, summary.b_only, summary.discordance) == (2, 1, 0.6)
    assert summary.mean_diff == pytest.approx(0.2)
    assert summary.sd_diff == pytest.approx(np.std([1, 0, 0, 1, -1], ddof=1))


def test_binary_summary_mcnemar_matches_statsmodels() -> None:
    """The exact McNemar p-value equals statsmodels' mcnemar(exact=True)."""
    rng = np.random.default_rng(4)
    a = rng.integers(0, 2, size=120)
    b = np.where(rng.random(120) < 0.3, 1 - a, a)
    b[:15] = 0
    a[:15] = 1
    summary = paired_summary(a.tolist(), b.tolist())
    table = [[int(np.sum((a == 1) & (b == 1))), summary.a_only],
             [summary.b_only, int(np.sum((a == 0) & (b == 0)))]]
    assert summary.mcnemar_p == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-9)


def test_continuous_summary_has_no_discordance() -> None:
    """Non-binary outcomes report mean and SD only; one pair has no SD."""
    summary = paired_summary([0.5, 0.1], [0.2, 0.3])
    assert not summary.is_binary
    assert summary.discordance is None and summary.mcnemar_p is None
    assert paired_summary([0.5], [0.2]).sd_diff is None


def test_cluster_weighted_resample_means_by_hand() -> None:
    """Clusters {0,0,0} and {1}: drawing each once averages ½ per cluster and ¼ per unit."""
    values = np.array([0.0, 0.0, 0.0, 1.0])
    codes = np.array([0, 0, 0, 1])
    counts = np.array([[1, 1], [2, 0], [0, 2], [1, 3]])
    np.testing.assert_allclose(
        bootstrap_means(values, codes, 2, counts, "cluster"), [0.5, 0.0, 1.0, 0.75])
    np.testing.assert_allclose(
        bootstrap_means(values, codes, 2, counts, "unit"), [0.25, 0.0, 1.0, 0.5])


def test_wholly_negative_interval_excludes_zero() -> None:
    """An interval below zero (−0.3, −0.1) excludes zero; one ending exactly at 0 does not."""
    assert PairedDelta(-0.2, -0.3, -0.1, 10, 5, 100).excludes_zero()
    assert not PairedDelta(-0.2, -0.3, 0.0, 10, 5, 100).excludes_zero()
