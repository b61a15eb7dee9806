"""Holm and Benjamini–Hochberg: hand answers, statsmodels cross-check, nesting properties."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from rungbench.errors import InputError
from rungbench.stats import (
    benjamini_hochberg,
    benjamini_hochberg_adjust,
    bonferroni,
    holm,
    holm_adjust,
)

PVALUES = st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=40)
ALPHAS = st.floats(0.001, 0.5, allow_nan=False)


def test_holm_adjusted_known_answer() -> None:
    """Holm on (0.01, 0.04, 0.03, 0.005): adjusted (0.03, 0.06, 0.06, 0.02), by hand."""
    assert holm_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.01, 0.04, 0.03, 0.005], 0.05) == [True, False, False, True]


def test_bh_adjusted_known_answer() -> None:
    """BH on (0.01, 0.04, 0.03, 0.005): adjusted (0.02, 0.04, 0.04, 0.02), by hand."""
    assert benjamini_hochberg_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx(
        [0.02, 0.04, 0.04, 0.02])
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.005], 0.05) == [True] * 4


@settings(deadline=None, max_examples=50)
@given(pvalues=PVALUES, alpha=ALPHAS)
def test_holm_and_bh_match_statsmodels(pvalues: list[float], alpha: float) -> None:
    """Rejections and adjusted p-values equal statsmodels' multipletests (holm, fdr_bh)."""
    for ours_reject, ours_adjust, method in ((holm, holm_adjust, "holm"),
                                             (benjamini_hochberg, benjamini_hochberg_adjust,
                                              "fdr_bh")):
        reject, adjusted, _, _ = multipletests(pvalues, alpha=alpha, method=method)
        assert ours_adjust(pvalues) == pytest.approx(list(adjusted), abs=1e-12)
        # Rejection can differ only for a p-value exactly on the boundary (float dust).
        agree = [a == bool(b) or abs(q - alpha) < 1e-12
                 for a, b, q in zip(ours_reject(pvalues, alpha), reject, adjusted, strict=True)]
        assert all(agree)


@settings(deadline=None)
@given(pvalues=PVALUES, alpha=ALPHAS)
def test_rejection_sets_nest_bonferroni_holm_bh(pvalues: list[float], alpha: float) -> None:
    """Bonferroni's rejections ⊆ Holm's ⊆ Benjamini–Hochberg's."""
    bonf, hol, bh = (f(pvalues, alpha) for f in (bonferroni, holm, benjamini_hochberg))
    assert all(h for b, h in zip(bonf, hol, strict=True) if b)
    assert all(q for h, q in zip(hol, bh, strict=True) if h)


@settings(deadline=None)
@given(pvalues=PVALUES)
def test_adjusted_pvalues_are_valid_and_order_preserving(pvalues: list[float]) -> None:
    """Adjusted p-values lie in [p, 1] and keep the order of the raw p-values."""
    for adjusted in (holm_adjust(pvalues), benjamini_hochberg_adjust(pvalues)):
        assert all(p <= q <= 1.0 for p, q in zip(pvalues, adjusted, strict=True))
        pairs = sorted(zip(pvalues, adjusted, strict=True))
        assert all(a[1] <= b[1] for a, b in itertools.pairwise(pairs))


def test_bad_pvalue_raises_input_error_naming_index() -> None:
    """A p-value outside [0, 1] raises InputError naming its index and value."""
    with pytest.raises(InputError, match=r"pvalues\[1\] = 1.5"):
        holm([0.01, 1.5])


def test_empty_pvalues_raise_input_error() -> None:
    """An empty family raises InputError on the pvalues field."""
    with pytest.raises(InputError) as info:
        holm_adjust([])
    assert info.value.field == "pvalues"


def test_adjusted_pvalue_equal_to_alpha_is_rejected() -> None:
    """Rejection is inclusive (q <= alpha): (0.025, 0.05) at 0.05 as statsmodels decides."""
    p = [0.025, 0.05]
    for ours, method in ((holm, "holm"), (benjamini_hochberg, "fdr_bh"),
                         (bonferroni, "bonferroni")):
        expected = [bool(x) for x in multipletests(p, alpha=0.05, method=method)[0]]
        assert ours(p, alpha=0.05) == expected
    assert holm(p, alpha=0.05) == [True, True]
    assert bonferroni(p, alpha=0.05) == [True, False]
