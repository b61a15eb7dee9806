"""Confidence intervals for a binomial proportion k/n.

Seed 003 ("Why the existing numbers settle nothing") reports exact 95 %
Clopper–Pearson bounds for the tiny control samples (0/40, 5/5, 2/5); Wilson is
the score interval, better centred for moderate n. Both are two-sided with
coverage 1 − alpha.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from rungbench.errors import InputError
from rungbench.stats._checks import check_alpha, check_count


def _check_binomial(k: int, n: int) -> tuple[int, int]:
    """Return (k, n) after checking 0 <= k <= n and n >= 1."""
    n = check_count(n, field="n", minimum=1)
    k = check_count(k, field="k", minimum=0)
    if k > n:
        raise InputError(f"k must not exceed n, got k={k} > n={n}", field="k")
    return k, n


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Exact (Clopper & Pearson 1934) interval for k successes in n trials.

    Bounds are Beta quantiles: lower = B(alpha/2; k, n-k+1), upper =
    B(1-alpha/2; k+1, n-k), with 0 and 1 at the edges k = 0 and k = n.
    """
    from scipy.special import betaincinv  # lazy: keeps `rungbench` start-up light

    k, n = _check_binomial(k, n)
    alpha = check_alpha(alpha)
    # betaincinv(a, b, q) is the Beta(a, b) quantile, i.e. scipy.stats.beta.ppf(q, a, b).
    low = 0.0 if k == 0 else float(betaincinv(k, n - k + 1, alpha / 2))
    high = 1.0 if k == n else float(betaincinv(k + 1, n - k, 1 - alpha / 2))
    return low, high


def wilson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson (1927) score interval for k successes in n trials.

    centre = (p + z²/2n) / (1 + z²/n), half-width = z·sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n).
    """
    from scipy.special import ndtri  # standard normal quantile; lazy import

    k, n = _check_binomial(k, n)
    alpha = check_alpha(alpha)
    z = float(ndtri(1 - alpha / 2))
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / denominator
    # Clip rounding dust so the interval always lies in [0, 1] and contains k/n.
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


@dataclass(frozen=True)
class BinomialIntervals:
    """Both two-sided intervals for k successes in n trials."""

    k: int
    """Successes."""
    n: int
    """Trials."""
    alpha: float
    """Two-sided error rate (coverage 1 − alpha)."""
    proportion: float
    """k / n."""
    clopper_pearson: tuple[float, float]
    """Exact Clopper–Pearson (low, high)."""
    wilson: tuple[float, float]
    """Wilson score (low, high)."""

    def to_json(self) -> dict[str, Any]:
        """Return both intervals as a JSON-ready mapping (intervals as [low, high])."""
        out = asdict(self)
        out["clopper_pearson"] = list(self.clopper_pearson)
        out["wilson"] = list(self.wilson)
        return out


def binomial_intervals(k: int, n: int, alpha: float = 0.05) -> BinomialIntervals:
    """Clopper–Pearson and Wilson intervals for k successes in n trials."""
    cp = clopper_pearson(k, n, alpha)
    return BinomialIntervals(k=k, n=n, alpha=alpha, proportion=k / n, clopper_pearson=cp,
                             wilson=wilson(k, n, alpha))


PROPORTION_INTERVALS = {"wilson": wilson, "clopper_pearson": clopper_pearson}
"""Each registered proportion-interval method."""


def proportion_interval(method: str, k: int, n: int, alpha: float = 0.05,
                        ) -> tuple[float, float]:
    """The two-sided ``1 - alpha`` interval of ``k / n`` by the registered ``method``."""
    if method not in PROPORTION_INTERVALS:
        raise InputError(f"unknown interval method {method!r}; known: "
                         f"{', '.join(PROPORTION_INTERVALS)}", field="interval")
    return PROPORTION_INTERVALS[method](k, n, alpha)
