"""Multiple-testing control: Holm (familywise) and Benjamini–Hochberg (false discovery).

Seed 000 registers "four primary tests controlled with Holm's familywise
correction" (board and legal-list main effects for each of two models).
Adjusted p-values follow Holm (1979) and Benjamini & Hochberg (1995); a
hypothesis is rejected when its adjusted p-value is at most alpha.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rungbench.errors import InputError
from rungbench.stats._checks import FloatArray, check_alpha, check_pvalues


def bonferroni_adjust(pvalues: Sequence[float]) -> list[float]:
    """Bonferroni adjusted p-values: min(1, m·p)."""
    p = check_pvalues(pvalues)
    return [float(x) for x in np.minimum(1.0, p * p.size)]


def holm_adjust(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values, in the input order.

    With p sorted ascending, p̃(i) = max_{j<=i} min(1, (m - j + 1)·p(j)).
    """
    p = check_pvalues(pvalues)
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = (m - np.arange(m)) * p[order]
    adjusted_sorted = np.minimum(1.0, np.maximum.accumulate(scaled))
    return _unsort(adjusted_sorted, order)


def benjamini_hochberg_adjust(pvalues: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg step-up adjusted p-values (q-values), in the input order.

    With p sorted ascending, q(i) = min_{j>=i} min(1, m·p(j)/j).
    """
    p = check_pvalues(pvalues)
    m = p.size
    order = np.argsort(p, kind="stable")
    # (m / j) · p rather than m · p / j: the factor is exactly 1 at j = m, so q >= p holds.
    scaled = (m / np.arange(1, m + 1)) * p[order]
    adjusted_sorted = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    return _unsort(adjusted_sorted, order)


def bonferroni(pvalues: Sequence[float], alpha: float = 0.05) -> list[bool]:
    """Rejections under Bonferroni at familywise level ``alpha``."""
    return _reject(bonferroni_adjust(pvalues), alpha)


def holm(pvalues: Sequence[float], alpha: float = 0.05) -> list[bool]:
    """Rejections under Holm's step-down procedure at familywise level ``alpha``."""
    return _reject(holm_adjust(pvalues), alpha)


def benjamini_hochberg(pvalues: Sequence[float], alpha: float = 0.05) -> list[bool]:
    """Rejections under Benjamini–Hochberg at false-discovery rate ``alpha``."""
    return _reject(benjamini_hochberg_adjust(pvalues), alpha)


def _reject(adjusted: list[float], alpha: float) -> list[bool]:
    alpha = check_alpha(alpha)
    return [q <= alpha for q in adjusted]


def _unsort(sorted_values: FloatArray, order: np.ndarray) -> list[float]:
    out = np.empty_like(sorted_values)
    out[order] = sorted_values
    return [float(x) for x in out]


ADJUSTMENTS = {"holm": holm_adjust, "bonferroni": bonferroni_adjust,
               "benjamini_hochberg": benjamini_hochberg_adjust}
"""Each registered multiplicity method and its adjusted-p function."""


def adjust(method: str, pvalues: Sequence[float]) -> list[float]:
    """``pvalues`` adjusted by the registered ``method`` (:data:`ADJUSTMENTS`)."""
    if method not in ADJUSTMENTS:
        raise InputError(f"unknown multiplicity method {method!r}; known: "
                         f"{', '.join(ADJUSTMENTS)}", field="multiplicity")
    return ADJUSTMENTS[method](pvalues) if pvalues else []
