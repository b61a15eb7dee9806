"""Estimands of a 2×2 factorial on an outcome where lower is better (seed 000, A105).

R(B, L) is the mean outcome (WDL regret in seed 000) with factor B and factor L
present (1) or masked (0). Seed 000 ("A105", registered estimands):

    main effect of B = 0.5 × ([R(0,0) − R(1,0)] + [R(0,1) − R(1,1)])
    main effect of L = 0.5 × ([R(0,0) − R(0,1)] + [R(1,0) − R(1,1)])

Each simple effect is one bracket: B's effect without L is R(0,0) − R(1,0) and
with L is R(0,1) − R(1,1). The interaction "asks whether those simple effects
agree"; here it is their difference, B-with-L minus B-without-L, which equals
L-with-B minus L-without-B. A positive effect is a benefit (regret falls); a
positive interaction means complementary factors, a negative one substitutes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from rungbench.errors import InputError
from rungbench.stats._checks import FloatArray, as_finite_vector, check_alpha, check_count
from rungbench.stats.paired import (
    MIN_BOOT,
    Clusters,
    PairedDelta,
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

CONTRASTS: dict[str, tuple[float, float, float, float]] = {
    "main_b": (0.5, 0.5, -0.5, -0.5),
    "main_l": (0.5, -0.5, 0.5, -0.5),
    "interaction": (-1.0, 1.0, 1.0, -1.0),
    "simple_b_without_l": (1.0, 0.0, -1.0, 0.0),
    "simple_b_with_l": (0.0, 1.0, 0.0, -1.0),
    "simple_l_without_b": (1.0, -1.0, 0.0, 0.0),
    "simple_l_with_b": (0.0, 0.0, 1.0, -1.0),
}
"""Coefficients on (R(0,0), R(0,1), R(1,0), R(1,1)) for each estimand (seed 000)."""


@dataclass(frozen=True)
class FactorialEstimands:
    """The seven registered contrasts of a 2×2 design (lower outcome is better)."""

    main_b: float
    """0.5 × ([R(0,0) − R(1,0)] + [R(0,1) − R(1,1)]): B's benefit averaged over L."""
    main_l: float
    """0.5 × ([R(0,0) − R(0,1)] + [R(1,0) − R(1,1)]): L's benefit averaged over B."""
    interaction: float
    """[R(0,1) − R(1,1)] − [R(0,0) − R(1,0)]: > 0 complementary, < 0 substitutable."""
    simple_b_without_l: float
    """R(0,0) − R(1,0): B's benefit when L is masked."""
    simple_b_with_l: float
    """R(0,1) − R(1,1): B's benefit when L is present."""
    simple_l_without_b: float
    """R(0,0) − R(0,1): L's benefit when B is masked."""
    simple_l_with_b: float
    """R(1,0) − R(1,1): L's benefit when B is present."""

    def b_simple_effects_agree(self) -> bool:
        """Whether B's two simple effects are nonzero and share a sign (seed 000 gate 2)."""
        return _agree(self.simple_b_without_l, self.simple_b_with_l)

    def l_simple_effects_agree(self) -> bool:
        """Whether L's two simple effects are nonzero and share a sign (seed 000 gate 2)."""
        return _agree(self.simple_l_without_b, self.simple_l_with_b)

    def to_json(self) -> dict[str, Any]:
        """Return the estimands as a JSON-ready mapping."""
        return asdict(self)


@dataclass(frozen=True)
class FactorialIntervals:
    """Each 2×2 estimand on paired per-unit data, with a cluster-bootstrap interval.

    All seven intervals come from the same cluster resamples, so they are jointly
    consistent (e.g. the main effect's resample is the mean of its simple effects').
    """

    main_b: PairedDelta
    """Main effect of B (see ``FactorialEstimands.main_b``)."""
    main_l: PairedDelta
    """Main effect of L."""
    interaction: PairedDelta
    """Difference of B's simple effects (with L minus without L)."""
    simple_b_without_l: PairedDelta
    """R(0,0) − R(1,0)."""
    simple_b_with_l: PairedDelta
    """R(0,1) − R(1,1)."""
    simple_l_without_b: PairedDelta
    """R(0,0) − R(0,1)."""
    simple_l_with_b: PairedDelta
    """R(1,0) − R(1,1)."""

    def point(self) -> FactorialEstimands:
        """The point estimates alone."""
        return FactorialEstimands(**{f.name: getattr(self, f.name).mean for f in fields(self)})

    def to_json(self) -> dict[str, Any]:
        """Return every estimand's delta as a JSON-ready mapping."""
        return {f.name: getattr(self, f.name).to_json() for f in fields(self)}


def factorial_2x2(r00: float, r01: float, r10: float, r11: float) -> FactorialEstimands:
    """The registered 2×2 estimands from the four cell means R(B, L) (seed 000)."""
    cells = as_finite_vector([r00, r01, r10, r11], field="r")
    return FactorialEstimands(
        **{name: float(dot_rows(cells, np.asarray(coef, dtype=np.float64)))
           for name, coef in CONTRASTS.items()})


def factorial_2x2_paired(
    r00: Sequence[float] | FloatArray,
    r01: Sequence[float] | FloatArray,
    r10: Sequence[float] | FloatArray,
    r11: Sequence[float] | FloatArray,
    clusters: Clusters,
    *,
    n_boot: int = 2000,
    alpha: float = 0.05,
    rng: np.random.Generator | int,
    weighting: Weighting = "unit",
) -> FactorialIntervals:
    """2×2 estimands on per-unit outcomes (unit i observed in all four cells).

    Each estimand is the mean of its per-unit contrast; intervals resample whole
    clusters (e.g. source games) with replacement, as in ``paired_cluster_bootstrap``.
    """
    cells = _cell_matrix(r00, r01, r10, r11)
    n_boot = check_count(n_boot, field="n_boot", minimum=MIN_BOOT)
    alpha = check_alpha(alpha)
    weighting = check_weighting(weighting)
    codes, n_clusters = cluster_codes(clusters, cells.shape[1])
    counts = resample_cluster_counts(n_clusters, n_boot, as_generator(rng))
    out: dict[str, PairedDelta] = {}
    for name, coef in CONTRASTS.items():
        contrast = dot_rows(cells.T, np.asarray(coef, dtype=np.float64))
        low, high = percentile_interval(
            bootstrap_means(contrast, codes, n_clusters, counts, weighting), alpha)
        out[name] = PairedDelta(
            mean=weighted_mean(contrast, codes, n_clusters, weighting), low=low, high=high,
            n=int(cells.shape[1]), n_clusters=n_clusters, n_boot=n_boot, alpha=alpha,
            weighting=weighting)
    return FactorialIntervals(**out)


def _cell_matrix(*cells: Sequence[float] | FloatArray) -> FloatArray:
    names = ("r00", "r01", "r10", "r11")
    vectors = [as_finite_vector(c, field=name) for c, name in zip(cells, names, strict=True)]
    for vector, name in zip(vectors[1:], names[1:], strict=True):
        if vector.size != vectors[0].size:
            raise InputError(
                f"every unit needs all four cells: len({name})={vector.size} != "
                f"len(r00)={vectors[0].size}", field=name)
    return np.vstack(vectors)


def _agree(x: float, y: float) -> bool:
    return (x > 0 and y > 0) or (x < 0 and y < 0)
