"""Cluster-bootstrap tests of several contrasts on one set of resamples.

Seed 000 ("Pairing occurs within position; inference clusters at source game"): every
contrast of one analysis is a per-unit vector (one value per paired position); the
resamples draw whole clusters with replacement, and every contrast is evaluated on the
same resamples so that, e.g., a main effect's resample is the mean of its simple
effects'. The p-value is the percentile-bootstrap two-sided p,

    p = min(1, 2 · min(1 + #{b ≤ 0}, 1 + #{b ≥ 0}) / (B + 1)),

which is ≤ alpha exactly when the (1 − alpha) percentile interval excludes zero, up to
the ±1 that keeps p > 0 (Davison & Hinkley 1997, §4.4).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from rungbench.errors import InputError
from rungbench.stats._checks import FloatArray, as_finite_vector, check_alpha, check_count
from rungbench.stats.paired import (
    MIN_BOOT,
    Clusters,
    Weighting,
    as_generator,
    bootstrap_means,
    check_weighting,
    cluster_codes,
    percentile_interval,
    resample_cluster_counts,
    weighted_mean,
)
from rungbench.stats.sums import dot_rows


@dataclass(frozen=True)
class MeanTest:
    """Mean of a per-unit contrast with its cluster-bootstrap interval and two-sided p."""

    mean: float
    """Point estimate under the chosen weighting."""
    low: float
    """Lower percentile bound."""
    high: float
    """Upper percentile bound."""
    p: float
    """Two-sided percentile-bootstrap p-value against zero."""
    sd: float | None
    """Sample SD (ddof = 1) of the per-unit contrast; None with one unit."""
    n: int
    """Paired units."""
    n_clusters: int
    """Clusters resampled."""
    n_boot: int
    """Resamples."""
    alpha: float
    """Two-sided error rate of the interval."""
    weighting: Weighting
    """``unit`` (equal position) or ``cluster`` (equal cluster) weighting."""

    def excludes_zero(self) -> bool:
        """Whether the interval lies wholly on one side of zero."""
        return self.low > 0 or self.high < 0

    def to_json(self) -> dict[str, Any]:
        """Return the test as a JSON-ready mapping."""
        return asdict(self)


def bootstrap_pvalue(means: FloatArray) -> float:
    """Two-sided percentile-bootstrap p-value of zero (module docstring)."""
    b = as_finite_vector(means, field="means")
    below = 1 + int(np.sum(b <= 0))
    above = 1 + int(np.sum(b >= 0))
    return float(min(1.0, 2 * min(below, above) / (b.size + 1)))


def cluster_tests(
    contrasts: Mapping[str, Sequence[float] | FloatArray],
    clusters: Clusters,
    *,
    n_boot: int = 2000,
    alpha: float = 0.05,
    rng: np.random.Generator | int,
    weighting: Weighting = "unit",
) -> dict[str, MeanTest]:
    """Test every named per-unit contrast on one shared set of cluster resamples."""
    if not contrasts:
        raise InputError("no contrast to test", field="contrasts")
    vectors = {k: as_finite_vector(v, field=k) for k, v in contrasts.items()}
    n = next(iter(vectors.values())).size
    for name, vector in vectors.items():
        if vector.size != n:
            raise InputError(f"contrast {name!r} has {vector.size} units, expected {n}",
                             field=name)
    n_boot = check_count(n_boot, field="n_boot", minimum=MIN_BOOT)
    alpha = check_alpha(alpha)
    weighting = check_weighting(weighting)
    codes, n_clusters = cluster_codes(clusters, n)
    counts = resample_cluster_counts(n_clusters, n_boot, as_generator(rng))
    out: dict[str, MeanTest] = {}
    for name, vector in vectors.items():
        means = bootstrap_means(vector, codes, n_clusters, counts, weighting)
        low, high = percentile_interval(means, alpha)
        out[name] = MeanTest(
            mean=weighted_mean(vector, codes, n_clusters, weighting), low=low, high=high,
            p=bootstrap_pvalue(means), sd=float(vector.std(ddof=1)) if n > 1 else None,
            n=n, n_clusters=n_clusters, n_boot=n_boot, alpha=alpha, weighting=weighting)
    return out


def cluster_ratio_draws(
    ratios: Mapping[str, tuple[Sequence[float] | FloatArray, Sequence[float] | FloatArray]],
    clusters: Clusters,
    *,
    n_boot: int = 2000,
    rng: np.random.Generator | int,
) -> tuple[dict[str, float], dict[str, FloatArray]]:
    """Ratios of sums Σnum / Σden and their draws on one shared set of cluster resamples.

    Returns (estimates, draws). A resample whose denominator is zero gives NaN in that
    ratio's draws (it carries no information about the ratio); :func:`nan_interval`
    drops those and the caller reports how many. A zero full-sample denominator raises.
    """
    if not ratios:
        raise InputError("no ratio to estimate", field="ratios")
    n_boot = check_count(n_boot, field="n_boot", minimum=MIN_BOOT)
    pairs = {k: (as_finite_vector(a, field=f"{k}.numerators"),
                 as_finite_vector(b, field=f"{k}.denominators")) for k, (a, b) in ratios.items()}
    n = next(iter(pairs.values()))[0].size
    for name, (num, den) in pairs.items():
        if num.size != n or den.size != n:
            raise InputError(f"ratio {name!r} needs {n} numerators and denominators",
                             field=name)
        if den.sum() <= 0:
            raise InputError(f"ratio {name!r} has a zero denominator: no unit supports it",
                             field=name)
    codes, n_clusters = cluster_codes(clusters, n)
    counts = resample_cluster_counts(n_clusters, n_boot, as_generator(rng)).astype(np.float64)
    estimates: dict[str, float] = {}
    draws: dict[str, FloatArray] = {}
    for name, (num, den) in pairs.items():
        top = dot_rows(counts, np.bincount(codes, weights=num, minlength=n_clusters))
        bottom = dot_rows(counts, np.bincount(codes, weights=den, minlength=n_clusters))
        with np.errstate(invalid="ignore", divide="ignore"):
            draws[name] = np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), np.nan)
        estimates[name] = float(num.sum() / den.sum())
    return estimates, draws


def nan_interval(draws: FloatArray, alpha: float = 0.05) -> tuple[float, float, int]:
    """Percentile interval of the finite draws; returns (low, high, draws dropped)."""
    alpha = check_alpha(alpha)
    finite = draws[np.isfinite(draws)]
    if finite.size < MIN_BOOT // 2:
        raise InputError(f"only {finite.size} usable resamples of {draws.size}", field="draws")
    low, high = percentile_interval(finite, alpha)
    return low, high, int(draws.size - finite.size)
