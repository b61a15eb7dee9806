"""Paired differences: a plain summary and a seeded cluster bootstrap.

Seeds 000 and 003 pair outcomes within a unit (position, world) and cluster
inference at the independent source (source game, generated world): "Analyse
paired by world. Clustered bootstrap over independently generated worlds for
intervals" (seed 003, Control matrix, Rules); "Pairing occurs within position;
inference clusters at source game and must show ... weighting sensitivities"
(seed 000). The bootstrap resamples whole clusters with replacement and reports
a percentile interval for the mean of a − b.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from rungbench.errors import InputError
from rungbench.stats._checks import FloatArray, as_finite_vector, check_alpha, check_count
from rungbench.stats.sums import dot_rows

Weighting = Literal["unit", "cluster"]
"""``unit``: every paired unit weighs the same; ``cluster``: every cluster weighs the same."""

IntArray = npt.NDArray[np.int64]
Clusters = Sequence[Hashable] | npt.NDArray[Any]
"""One cluster label per unit (source game, world): any hashable values, or a numpy array."""
MIN_BOOT = 100


@dataclass(frozen=True)
class PairedDelta:
    """Mean paired difference a − b with a cluster-bootstrap percentile interval."""

    mean: float
    """Point estimate of the mean of a − b under the chosen weighting."""
    low: float
    """Lower percentile bound (alpha/2 quantile of the bootstrap means)."""
    high: float
    """Upper percentile bound (1 − alpha/2 quantile of the bootstrap means)."""
    n: int
    """Number of paired units."""
    n_clusters: int
    """Number of distinct clusters resampled."""
    n_boot: int
    """Number of bootstrap resamples."""
    alpha: float = 0.05
    """Two-sided error rate of the interval (coverage 1 − alpha)."""
    weighting: Weighting = "unit"
    """How units are weighted in the mean (see ``Weighting``)."""

    def excludes_zero(self) -> bool:
        """Whether the interval lies wholly on one side of zero."""
        return self.low > 0 or self.high < 0

    def to_json(self) -> dict[str, Any]:
        """Return the delta as a JSON-ready mapping."""
        return asdict(self)


@dataclass(frozen=True)
class PairedSummary:
    """Plain paired summary of a − b: mean, SD and, for binary outcomes, discordance."""

    n: int
    """Number of paired units."""
    mean_a: float
    """Mean of a."""
    mean_b: float
    """Mean of b."""
    mean_diff: float
    """Mean of a − b."""
    sd_diff: float | None
    """Sample SD (ddof = 1) of a − b; None when n = 1."""
    is_binary: bool
    """Whether every value of a and b is 0 or 1."""
    discordance: float | None
    """Share of units with a ≠ b (binary outcomes only)."""
    a_only: int | None
    """Units with a = 1 and b = 0 (binary outcomes only)."""
    b_only: int | None
    """Units with a = 0 and b = 1 (binary outcomes only)."""
    mcnemar_p: float | None
    """Exact two-sided McNemar p-value, binomial on the discordant pairs (binary only)."""

    def to_json(self) -> dict[str, Any]:
        """Return the summary as a JSON-ready mapping."""
        return asdict(self)


def as_generator(rng: np.random.Generator | int) -> np.random.Generator:
    """Return ``rng`` itself, or a fresh PCG64 generator seeded with the integer ``rng``."""
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, bool) or not isinstance(rng, int | np.integer):
        raise InputError(f"rng must be a numpy Generator or an int seed, got {rng!r}",
                         field="rng")
    return np.random.default_rng(int(rng))


def paired_vectors(a: Sequence[float] | FloatArray, b: Sequence[float] | FloatArray,
                   ) -> tuple[FloatArray, FloatArray]:
    """Return a and b as finite float arrays of the same length."""
    va = as_finite_vector(a, field="a")
    vb = as_finite_vector(b, field="b")
    if va.size != vb.size:
        raise InputError(f"a and b must pair up: len(a)={va.size} != len(b)={vb.size}",
                         field="b")
    return va, vb


def cluster_codes(clusters: Clusters, n: int) -> tuple[IntArray, int]:
    """Map cluster labels to codes 0..G-1 in order of first appearance; return (codes, G)."""
    labels = list(clusters)
    if len(labels) != n:
        raise InputError(f"clusters must label every unit: len(clusters)={len(labels)} != {n}",
                         field="clusters")
    index: dict[Hashable, int] = {}
    codes = np.fromiter((index.setdefault(label, len(index)) for label in labels),
                        dtype=np.int64, count=n)
    if len(index) < 2:
        raise InputError(f"a cluster bootstrap needs at least 2 clusters, got {len(index)}",
                         field="clusters")
    return codes, len(index)


def resample_cluster_counts(n_clusters: int, n_boot: int,
                            rng: np.random.Generator) -> IntArray:
    """Draw how often each cluster appears in each of ``n_boot`` resamples (rows sum to G)."""
    draws = rng.integers(0, n_clusters, size=(n_boot, n_clusters))
    counts = np.zeros((n_boot, n_clusters), dtype=np.int64)
    np.add.at(counts, (np.arange(n_boot)[:, None], draws), 1)
    return counts


def weighted_mean(values: FloatArray, codes: IntArray, n_clusters: int,
                  weighting: Weighting) -> float:
    """Mean of ``values`` giving each unit (or each cluster) equal weight."""
    sums, sizes = _cluster_totals(values, codes, n_clusters)
    if weighting == "unit":
        return float(sums.sum() / sizes.sum())
    return float(np.mean(sums / sizes))


def bootstrap_means(values: FloatArray, codes: IntArray, n_clusters: int,
                    counts: IntArray, weighting: Weighting) -> FloatArray:
    """Means of ``values`` under each resample in ``counts`` (one row per resample)."""
    sums, sizes = _cluster_totals(values, codes, n_clusters)
    weights = counts.astype(np.float64)
    if weighting == "unit":
        result: FloatArray = dot_rows(weights, sums) / dot_rows(weights, sizes)
    else:
        result = dot_rows(weights, sums / sizes) / weights.sum(axis=1)
    return result


def percentile_interval(means: FloatArray, alpha: float) -> tuple[float, float]:
    """The alpha/2 and 1 − alpha/2 quantiles of ``means``."""
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def check_weighting(weighting: str) -> Weighting:
    """Return ``weighting`` if it names a known weighting."""
    if weighting == "unit":
        return "unit"
    if weighting == "cluster":
        return "cluster"
    raise InputError(f"weighting must be 'unit' or 'cluster', got {weighting!r}",
                     field="weighting")


def paired_cluster_bootstrap(
    a: Sequence[float] | FloatArray,
    b: Sequence[float] | FloatArray,
    clusters: Clusters,
    *,
    n_boot: int = 2000,
    alpha: float = 0.05,
    rng: np.random.Generator | int,
    weighting: Weighting = "unit",
) -> PairedDelta:
    """Mean of a − b with a percentile interval from resampling whole clusters.

    Unit i's pair (a[i], b[i]) belongs to ``clusters[i]``. Each resample draws
    G clusters with replacement and keeps all their units; the same seed gives
    the same interval.
    """
    va, vb = paired_vectors(a, b)
    n_boot = check_count(n_boot, field="n_boot", minimum=MIN_BOOT)
    alpha = check_alpha(alpha)
    weighting = check_weighting(weighting)
    codes, n_clusters = cluster_codes(clusters, va.size)
    diff = va - vb
    counts = resample_cluster_counts(n_clusters, n_boot, as_generator(rng))
    low, high = percentile_interval(
        bootstrap_means(diff, codes, n_clusters, counts, weighting), alpha)
    return PairedDelta(
        mean=weighted_mean(diff, codes, n_clusters, weighting), low=low, high=high,
        n=int(va.size), n_clusters=n_clusters, n_boot=n_boot, alpha=alpha, weighting=weighting,
    )


def paired_summary(a: Sequence[float] | FloatArray,
                   b: Sequence[float] | FloatArray) -> PairedSummary:
    """Mean and SD of a − b; for 0/1 outcomes also discordance and the exact McNemar p."""
    va, vb = paired_vectors(a, b)
    diff = va - vb
    binary = bool(np.all(np.isin(va, (0.0, 1.0))) and np.all(np.isin(vb, (0.0, 1.0))))
    discord: Mapping[str, Any] = _discordance(va, vb) if binary else {
        "discordance": None, "a_only": None, "b_only": None, "mcnemar_p": None}
    return PairedSummary(
        n=int(va.size), mean_a=float(va.mean()), mean_b=float(vb.mean()),
        mean_diff=float(diff.mean()),
        sd_diff=float(diff.std(ddof=1)) if va.size > 1 else None,
        is_binary=binary, **discord,
    )


def _discordance(va: FloatArray, vb: FloatArray) -> dict[str, Any]:
    a_only = int(np.sum((va == 1) & (vb == 0)))
    b_only = int(np.sum((va == 0) & (vb == 1)))
    discordant = a_only + b_only
    from scipy.stats import binomtest  # lazy: scipy.stats costs about a second to import

    # Exact McNemar: under H0 each discordant pair falls either way with p = 1/2.
    p = 1.0 if discordant == 0 else float(binomtest(a_only, discordant, 0.5).pvalue)
    return {"discordance": discordant / va.size, "a_only": a_only, "b_only": b_only,
            "mcnemar_p": min(1.0, p)}


def _cluster_totals(values: FloatArray, codes: IntArray,
                    n_clusters: int) -> tuple[FloatArray, FloatArray]:
    sums = np.bincount(codes, weights=values, minlength=n_clusters).astype(np.float64)
    sizes = np.bincount(codes, minlength=n_clusters).astype(np.float64)
    return sums, sizes
