"""Binomial intervals: seed 003 figures, closed forms, statsmodels cross-check, invariants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from rungbench.errors import InputError
from rungbench.stats import binomial_intervals, clopper_pearson, wilson


def test_seed_003_zero_of_forty_upper_bound_is_8_8_percent() -> None:
    """0/40 has a 95% Clopper–Pearson upper bound of 8.8% (seed 003) and lower bound 0."""
    low, high = clopper_pearson(0, 40)
    assert low == 0.0
    assert round(high, 3) == 0.088


def test_seed_003_five_of_five_lower_bound_is_48_percent() -> None:
    """5/5 has a 95% Clopper–Pearson lower bound of 48% (seed 003) and upper bound 1."""
    low, high = clopper_pearson(5, 5)
    assert round(low, 2) == 0.48
    assert high == 1.0


def test_seed_003_two_of_five_spans_5_to_85_percent() -> None:
    """2/5 has a 95% Clopper–Pearson interval from 5% to 85% (seed 003)."""
    low, high = clopper_pearson(2, 5)
    assert (round(low, 2), round(high, 2)) == (0.05, 0.85)


@pytest.mark.parametrize("n", [1, 5, 40, 1000])
def test_clopper_pearson_edges_match_closed_form(n: int) -> None:
    """At k = 0 the upper bound is 1 − (α/2)^(1/n); at k = n the lower bound is (α/2)^(1/n)."""
    assert clopper_pearson(0, n)[1] == pytest.approx(1 - 0.025 ** (1 / n), rel=1e-10)
    assert clopper_pearson(n, n)[0] == pytest.approx(0.025 ** (1 / n), rel=1e-10)


def test_wilson_known_answer_two_of_five() -> None:
    """Wilson 2/5 at 95% is (0.1176, 0.7693), computed by hand from the score formula."""
    low, high = wilson(2, 5)
    assert low == pytest.approx(0.117621, abs=1e-6)
    assert high == pytest.approx(0.769276, abs=1e-6)


@settings(deadline=None)
@given(n=st.integers(1, 2000), data=st.data(),
       alpha=st.floats(0.001, 0.5, allow_nan=False))
def test_intervals_agree_with_statsmodels(n: int, data: st.DataObject, alpha: float) -> None:
    """Both intervals equal statsmodels' proportion_confint ('beta' and 'wilson')."""
    k = data.draw(st.integers(0, n))
    for ours, method in ((clopper_pearson(k, n, alpha), "beta"), (wilson(k, n, alpha), "wilson")):
        theirs = proportion_confint(k, n, alpha=alpha, method=method)
        assert ours == pytest.approx((float(theirs[0]), float(theirs[1])), abs=1e-9)


@settings(deadline=None)
@given(n=st.integers(1, 5000), data=st.data(), alpha=st.floats(0.001, 0.5, allow_nan=False))
def test_intervals_contain_proportion_and_lie_in_unit_interval(
    n: int, data: st.DataObject, alpha: float
) -> None:
    """Each interval lies in [0, 1] and contains k/n."""
    k = data.draw(st.integers(0, n))
    for low, high in (clopper_pearson(k, n, alpha), wilson(k, n, alpha)):
        assert 0.0 <= low <= k / n <= high <= 1.0


def test_wider_coverage_gives_wider_interval() -> None:
    """A 99% Clopper–Pearson interval contains the 95% one."""
    low95, high95 = clopper_pearson(7, 30, 0.05)
    low99, high99 = clopper_pearson(7, 30, 0.01)
    assert low99 < low95 and high99 > high95


@pytest.mark.parametrize(("k", "n", "field"), [(6, 5, "k"), (-1, 5, "k"), (0, 0, "n"),
                                               (1, -3, "n")])
def test_bad_counts_raise_input_error_naming_field(k: int, n: int, field: str) -> None:
    """k > n, negative k or n <= 0 raise InputError naming the field and the value."""
    for interval in (clopper_pearson, wilson):
        with pytest.raises(InputError) as info:
            interval(k, n)
        assert info.value.field == field


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, float("nan")])
def test_bad_alpha_raises_input_error(alpha: float) -> None:
    """alpha outside (0, 1) raises InputError on the alpha field."""
    with pytest.raises(InputError) as info:
        clopper_pearson(1, 10, alpha)
    assert info.value.field == "alpha"


def test_binomial_intervals_bundles_both() -> None:
    """binomial_intervals reports k/n and both intervals, JSON-ready as lists."""
    result = binomial_intervals(2, 5)
    assert result.proportion == 0.4
    assert result.clopper_pearson == clopper_pearson(2, 5)
    assert result.to_json()["wilson"] == list(wilson(2, 5))
