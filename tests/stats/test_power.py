"""Planning: the MDE envelope (seed 000) and McNemar sample size (seed 003)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.power import NormalIndPower

from rungbench.errors import InputError
from rungbench.stats import holm_first_step_alpha, mcnemar_power, mcnemar_sample_size, mde


@pytest.mark.parametrize(("sd", "clusters", "printed"), [
    (0.10, None, 0.0273), (0.40, None, 0.1091), (0.10, 75, 0.0386), (0.40, 75, 0.1542)])
def test_seed_000_mde_envelope(sd: float, clusters: int | None, printed: float) -> None:
    """Seed 000: n = 150, 4 Holm tests, power 0.8, α = 0.05 → 0.0273/0.1091; 75 clusters →
    0.0386/0.1542. Formula: (z_{1−α/8} + z_{0.8}) · SD / √D with D = 150 or 75."""
    result = mde(150, sd, tests=4, power=0.8, alpha=0.05, clusters=clusters)
    assert round(result.mde, 4) == printed
    assert result.alpha_per_test == 0.0125
    assert result.denominator == (clusters or 150)


def test_mde_matches_statsmodels_one_sample_power() -> None:
    """MDE/SD equals statsmodels' NormalIndPower one-sample effect size at α/T (to 1e-6)."""
    effect = NormalIndPower().solve_power(effect_size=None, nobs1=150, alpha=0.05 / 4,
                                          power=0.8, ratio=0, alternative="two-sided")
    assert mde(150, 1.0, tests=4).mde == pytest.approx(effect, abs=1e-6)


def test_mde_monotone_in_n_and_tests() -> None:
    """More units shrink the MDE; more tests in the family grow it."""
    assert mde(300, 0.2, tests=4).mde < mde(150, 0.2, tests=4).mde
    assert mde(150, 0.2, tests=8).mde > mde(150, 0.2, tests=4).mde > mde(150, 0.2).mde


def test_holm_first_step_is_bonferroni() -> None:
    """Holm's first-step alpha over T tests is α/T."""
    assert holm_first_step_alpha(0.05, 4) == 0.0125


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"sd": -0.4}, "sd"), ({"sd": 0.0}, "sd"), ({"tests": 0}, "tests"),
    ({"clusters": 151}, "clusters"), ({"clusters": 0}, "clusters"),
    ({"power": 1.0}, "power"), ({"n": 0}, "n"), ({"alpha": 0.0}, "alpha")])
def test_mde_bad_input(kwargs: dict[str, object], field: str) -> None:
    """Non-positive SD, no tests, clusters outside [1, n], power 1, n 0, alpha 0 are refused."""
    args: dict[str, object] = {"n": 150, "sd": 0.1, "tests": 4, **kwargs}
    with pytest.raises(InputError) as info:
        mde(**args)  # type: ignore[arg-type]
    assert info.value.field == field


def test_seed_003_mcnemar_about_200_worlds() -> None:
    """Seed 003: 10-point paired improvement at 25% discordance, α = 0.05, power 0.8 needs
    about 200 worlds. Connor (1987), n = [z_{.975}√ψ + z_{.8}√(ψ − δ²)]² / δ² with
    ψ = 0.25, δ = 0.10 gives 193.85 → 194 pairs."""
    result = mcnemar_sample_size(0.10, 0.25, alpha=0.05, power=0.8)
    assert result.n_exact == pytest.approx(193.847, abs=1e-3)
    assert result.n == 194
    assert round(result.n, -2) == 200


def test_connor_n_reaches_target_power_exactly() -> None:
    """The exact power of the uncorrected McNemar test at Connor's n is ≥ 0.8 but not far above,
    and falls below 0.8 twenty pairs earlier."""
    assert 0.80 <= mcnemar_power(194, 0.10, 0.25) < 0.83
    assert mcnemar_power(174, 0.10, 0.25) < 0.80


def test_mcnemar_power_agrees_with_statsmodels_simulation() -> None:
    """Exact enumeration agrees with a seeded simulation using statsmodels' mcnemar test."""
    rng = np.random.default_rng(2026)
    n, delta, psi = 194, 0.10, 0.25
    p10, p01 = (psi + delta) / 2, (psi - delta) / 2
    draws = rng.multinomial(n, [p10, p01, 1 - psi], size=1500)
    rejected = [mcnemar([[0, b], [c, n - b - c]], exact=False, correction=False).pvalue < 0.05
                for b, c, _ in draws]
    simulated = float(np.mean(rejected))
    # Simulation SE ≈ √(0.8·0.2/1500) ≈ 0.010; allow four SEs.
    assert simulated == pytest.approx(mcnemar_power(n, delta, psi), abs=0.042)


@pytest.mark.parametrize(("effect", "discordance", "field"), [
    (0.3, 0.25, "discordance"), (0.1, 1.2, "discordance"), (0.0, 0.25, "effect"),
    (-0.1, 0.25, "effect")])
def test_mcnemar_bad_input(effect: float, discordance: float, field: str) -> None:
    """Discordance below the effect or above 1, or a non-positive effect, raise InputError."""
    with pytest.raises(InputError) as info:
        mcnemar_sample_size(effect, discordance)
    assert info.value.field == field


def test_mcnemar_n_grows_as_effect_shrinks() -> None:
    """Halving the effect roughly quadruples the pairs needed."""
    ratio = mcnemar_sample_size(0.05, 0.25).n_exact / mcnemar_sample_size(0.10, 0.25).n_exact
    assert 3.8 < ratio < 4.2


def test_mcnemar_power_equals_multinomial_enumeration() -> None:
    """Power for n = 25, p10 = 0.2, p01 = 0.1 equals summing the trinomial over (b, c) with
    (b − c)² / (b + c) > z²: an independent enumeration of the rejection region."""
    from scipy.stats import multinomial, norm

    n, p10, p01 = 25, 0.2, 0.1
    z2 = norm.ppf(0.975) ** 2
    expected = 0.0
    for b in range(n + 1):
        for c in range(n + 1 - b):
            if b + c > 0 and (b - c) ** 2 / (b + c) > z2:
                expected += multinomial.pmf([b, c, n - b - c], n, [p10, p01, 1 - p10 - p01])
    assert mcnemar_power(n, p10 - p01, p10 + p01) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("power", [1e-300, 0.01, 0.05, 0.3, 0.5])
def test_power_at_or_below_half_is_refused(power: float) -> None:
    """Power ≤ 0.5 is refused by both planners, naming the field power."""
    with pytest.raises(InputError, match="power"):
        mde(150, 0.1, tests=4, power=power)
    with pytest.raises(InputError, match="power"):
        mcnemar_sample_size(0.10, 0.25, power=power)


@settings(max_examples=300, deadline=None)
@given(st.floats(0.0, 1.0, exclude_min=True, exclude_max=True),
       st.floats(0.0, 1.0, exclude_min=True, exclude_max=True))
def test_planners_monotone_in_power_and_non_negative(p1: float, p2: float) -> None:
    """Wherever power is accepted, MDE and McNemar n are non-negative and rise with power."""
    low, high = sorted((p1, p2))
    mdes = [_accepted(lambda p=p: mde(150, 0.1, tests=4, power=p).mde) for p in (low, high)]
    ns = [_accepted(lambda p=p: mcnemar_sample_size(0.1, 0.25, power=p).n_exact)
          for p in (low, high)]
    for pair in (mdes, ns):
        accepted = [v for v in pair if v is not None]
        assert all(v >= 0 for v in accepted)
        if len(accepted) == 2:
            assert accepted[0] <= accepted[1]


def _accepted(compute: Callable[[], float]) -> float | None:
    try:
        return compute()
    except InputError:
        return None


@pytest.mark.parametrize(("call", "field"), [
    (lambda: mcnemar_sample_size(1e-300, 0.25), "effect"),
    (lambda: mde(1, 1e308), "sd"),
    (lambda: mde(2**60, 0.1), "n"),
])
def test_results_out_of_float_range_are_input_errors(call: Callable[[], object],
                                                     field: str) -> None:
    """A tiny effect or a huge SD or count gives an InputError naming the field, not a crash."""
    with pytest.raises(InputError, match=field):
        call()
