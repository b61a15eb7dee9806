"""Planning: the MDE envelope and McNemar sample size.

MDE (seed 000, "The planning audit also publishes an MDE envelope"): normal
approximation for a paired mean difference,

    MDE = (z_{1 − α'/2} + z_{power}) × SD / sqrt(D),

with α' = α / T, the first (most stringent) step of Holm's procedure over T
tests, and D the number of paired units or, conservatively, of independent
clusters. At T = 4, α = 0.05, power 0.8 this gives 0.0273 and 0.1091 at
D = 150 for SD 0.10 and 0.40, and 0.0386–0.1542 at D = 75 (seed 000).

McNemar (seed 003, P2 "Power: about 200 independent worlds detects a
10-point paired improvement at 25% discordance"): Connor (1987), Biometrics
43(1):207–211, for discordance ψ = p10 + p01 and effect δ = p10 − p01,

    n = [z_{1 − α/2} √ψ + z_{power} √(ψ − δ²)]² / δ².

Both planners take a target power strictly between 0.5 and 1 (``check_power``):
below one half z_{power} < 0, and the formulae stop being monotone (a lower target
would need more pairs) and can go negative (an MDE of −0.28 at power 1e-300). On that
domain the MDE is positive and rises with power, and so does n. A result no float can
hold (an effect of 1e-300, an SD of 1e308) is an InputError naming the input.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from rungbench.errors import InputError
from rungbench.stats._checks import (
    check_alpha,
    check_count,
    check_finite_result,
    check_positive,
    check_power,
)


@dataclass(frozen=True)
class MinimumDetectableEffect:
    """A normal-approximation MDE for a paired mean difference under Holm control."""

    mde: float
    """Smallest true effect detected with the stated power (outcome units)."""
    sd: float
    """SD of the paired differences."""
    n: int
    """Number of paired units."""
    clusters: int | None
    """Number of independent clusters, when it replaces n as the denominator."""
    denominator: int
    """The count under the square root: clusters when given, else n."""
    tests: int
    """Number of tests in the Holm-controlled family."""
    alpha: float
    """Two-sided familywise error rate."""
    alpha_per_test: float
    """alpha / tests: Holm's first (Bonferroni) step."""
    power: float
    """Target power."""
    z_alpha: float
    """z_{1 − alpha_per_test / 2}."""
    z_power: float
    """z_{power}."""

    def to_json(self) -> dict[str, Any]:
        """Return the MDE and its inputs as a JSON-ready mapping."""
        return asdict(self)


@dataclass(frozen=True)
class McNemarSampleSize:
    """Pairs needed for a two-sided McNemar test to detect a paired difference."""

    n: int
    """Required number of pairs, rounded up."""
    n_exact: float
    """Connor's formula before rounding."""
    effect: float
    """δ = p10 − p01, the paired difference in success rates."""
    discordance: float
    """ψ = p10 + p01, the share of discordant pairs."""
    alpha: float
    """Two-sided significance level."""
    power: float
    """Target power."""

    def to_json(self) -> dict[str, Any]:
        """Return the sample size and its inputs as a JSON-ready mapping."""
        return asdict(self)


def holm_first_step_alpha(alpha: float, tests: int) -> float:
    """alpha / tests: the level Holm applies to the smallest p-value (Bonferroni's step)."""
    return check_alpha(alpha) / check_count(tests, field="tests", minimum=1)


def mde(
    n: int,
    sd: float,
    *,
    tests: int = 1,
    power: float = 0.8,
    alpha: float = 0.05,
    clusters: int | None = None,
) -> MinimumDetectableEffect:
    """Normal-approximation MDE of a paired mean at Holm's first-step alpha (seed 000).

    ``power`` must lie strictly between 0.5 and 1 (see the module docstring); an MDE
    that overflows a float is an InputError naming ``sd``.
    """
    n = check_count(n, field="n", minimum=1)
    sd = check_positive(sd, field="sd")
    power = check_power(power)
    alpha_per_test = holm_first_step_alpha(alpha, tests)
    if clusters is not None:
        clusters = check_count(clusters, field="clusters", minimum=1)
        if clusters > n:
            raise InputError(f"clusters ({clusters}) cannot exceed n ({n})", field="clusters")
    denominator = clusters if clusters is not None else n
    z_alpha = _z(1 - alpha_per_test / 2)
    z_power = _z(power)
    value = check_finite_result((z_alpha + z_power) * sd / math.sqrt(denominator),
                                what="the MDE", field="sd")
    return MinimumDetectableEffect(
        mde=value, sd=sd, n=n, clusters=clusters,
        denominator=denominator, tests=tests, alpha=alpha, alpha_per_test=alpha_per_test,
        power=power, z_alpha=z_alpha, z_power=z_power,
    )


def mcnemar_sample_size(
    effect: float, discordance: float, *, alpha: float = 0.05, power: float = 0.8
) -> McNemarSampleSize:
    """Pairs needed to detect ``effect`` at ``discordance`` (Connor 1987, seed 003).

    ``power`` must lie strictly between 0.5 and 1 (see the module docstring); an effect
    so small that n overflows a float is an InputError naming ``effect``.
    """
    delta, psi = _check_mcnemar(effect, discordance)
    alpha = check_alpha(alpha)
    power = check_power(power)
    z_alpha = _z(1 - alpha / 2)
    z_power = _z(power)
    root_n = (z_alpha * math.sqrt(psi) + z_power * math.sqrt(psi - delta * delta)) / delta
    n_exact = check_finite_result(root_n * root_n, what="the number of pairs", field="effect")
    return McNemarSampleSize(n=math.ceil(n_exact - 1e-9), n_exact=n_exact, effect=delta,
                             discordance=psi, alpha=alpha, power=power)


def mcnemar_power(n: int, effect: float, discordance: float, *, alpha: float = 0.05) -> float:
    """Exact power of the uncorrected asymptotic McNemar test with n pairs.

    Enumerates the number of discordant pairs D ~ Bin(n, ψ) and, given D = d,
    the count b ~ Bin(d, p10/ψ); the test rejects when (b − c)²/d > z²_{1−α/2}.
    An independent check on ``mcnemar_sample_size``, which is an approximation.
    """
    n = check_count(n, field="n", minimum=1)
    delta, psi = _check_mcnemar(effect, discordance)
    z = _z(1 - check_alpha(alpha) / 2)
    d = np.arange(1, n + 1)
    share_b = (psi + delta) / (2 * psi)
    # |2b − d| > z·√d  ⇔  b > (d + z√d)/2  or  b < (d − z√d)/2.
    upper = np.floor((d + z * np.sqrt(d)) / 2)
    lower = np.ceil((d - z * np.sqrt(d)) / 2) - 1
    from scipy.stats import binom  # lazy: scipy.stats costs about a second to import

    reject = binom.sf(upper, d, share_b) + binom.cdf(lower, d, share_b)
    return float(np.sum(binom.pmf(d, n, psi) * reject))


def _z(q: float) -> float:
    """Standard normal quantile (scipy.special.ndtri, imported on first use)."""
    from scipy.special import ndtri

    return float(ndtri(q))


def _check_mcnemar(effect: float, discordance: float) -> tuple[float, float]:
    delta = check_positive(effect, field="effect")
    psi = check_positive(discordance, field="discordance")
    if psi > 1:
        raise InputError(f"discordance is a share and must be <= 1, got {psi!r}",
                         field="discordance")
    if psi < delta:
        # δ = p10 − p01 cannot exceed ψ = p10 + p01.
        raise InputError(f"discordance {psi!r} is below the effect {delta!r}",
                         field="discordance")
    return delta, psi
