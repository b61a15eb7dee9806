"""Every statistical figure the seeds print, recomputed from this package.

Each ``SeedFigure`` holds the seed's printed value, the value computed here and
the rounding rule under which they must agree (the printed precision).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

from rungbench.stats.intervals import clopper_pearson
from rungbench.stats.power import mcnemar_sample_size, mde

Rounding = Literal["decimals", "significant"]
"""``decimals``: round to ``digits`` places; ``significant``: to ``digits`` significant figures."""


@dataclass(frozen=True)
class SeedFigure:
    """One printed seed number next to its recomputation."""

    key: str
    """Stable identifier, e.g. ``cp_0_of_40_upper``."""
    seed: str
    """Seed file number (``000``…``003``)."""
    section: str
    """Where in the seed the figure is printed."""
    quantity: str
    """What the number is, in words."""
    printed: float
    """The value as the seed prints it (percentages as fractions)."""
    computed: float
    """The value computed by rungbench.stats."""
    rounding: Rounding
    """How ``computed`` is rounded before comparing with ``printed``."""
    digits: int
    """Decimal places or significant figures, per ``rounding``."""

    @property
    def rounded(self) -> float:
        """``computed`` rounded to the seed's printed precision."""
        if self.rounding == "decimals":
            return round(self.computed, self.digits)
        magnitude = math.floor(math.log10(abs(self.computed)))
        return round(self.computed, self.digits - 1 - magnitude)

    @property
    def match(self) -> bool:
        """Whether the rounded computation equals the printed value."""
        return math.isclose(self.rounded, self.printed, rel_tol=0, abs_tol=1e-12)

    def to_json(self) -> dict[str, Any]:
        """Return the figure, its rounding and whether it matches, JSON-ready."""
        return {**asdict(self), "rounded": self.rounded, "match": self.match}


_SEED_003_SUMMARY = "003 Status and summary (why the existing numbers settle nothing)"
_SEED_000_MDE = "000 planning audit (MDE envelope)"
_SEED_003_P2 = "003 ranked upgrades, P2 (power)"


def _cp_figures() -> list[SeedFigure]:
    low_2_5, high_2_5 = clopper_pearson(2, 5)
    return [
        SeedFigure("cp_0_of_40_upper", "003", _SEED_003_SUMMARY,
                   "95% Clopper–Pearson upper bound, 0/40", 0.088,
                   clopper_pearson(0, 40)[1], "decimals", 3),
        SeedFigure("cp_5_of_5_lower", "003", _SEED_003_SUMMARY,
                   "95% Clopper–Pearson lower bound, 5/5", 0.48,
                   clopper_pearson(5, 5)[0], "decimals", 2),
        SeedFigure("cp_2_of_5_lower", "003", _SEED_003_SUMMARY,
                   "95% Clopper–Pearson lower bound, 2/5", 0.05, low_2_5, "decimals", 2),
        SeedFigure("cp_2_of_5_upper", "003", _SEED_003_SUMMARY,
                   "95% Clopper–Pearson upper bound, 2/5", 0.85, high_2_5, "decimals", 2),
    ]


def _mde_figures() -> list[SeedFigure]:
    out = []
    for denominator, clusters, printed in ((150, None, (0.0273, 0.1091)),
                                           (75, 75, (0.0386, 0.1542))):
        for sd, value in zip((0.10, 0.40), printed, strict=True):
            unit = "positions" if clusters is None else "game clusters"
            out.append(SeedFigure(
                f"mde_sd{sd:.2f}_d{denominator}", "000", _SEED_000_MDE,
                f"MDE, paired SD {sd:.2f}, {denominator} {unit} (4 Holm tests, power 0.8)",
                value, mde(150, sd, tests=4, power=0.8, alpha=0.05, clusters=clusters).mde,
                "decimals", 4))
    return out


def _mcnemar_figures() -> list[SeedFigure]:
    return [SeedFigure(
        "mcnemar_worlds", "003", _SEED_003_P2,
        "McNemar worlds, 10-point paired gain at 25% discordance",
        200, mcnemar_sample_size(0.10, 0.25, alpha=0.05, power=0.8).n, "significant", 1)]


def seed_figure_list() -> list[SeedFigure]:
    """Every seed figure, in a stable order."""
    return [*_cp_figures(), *_mde_figures(), *_mcnemar_figures()]


def seed_figures() -> dict[str, dict[str, Any]]:
    """Every seed figure keyed by ``SeedFigure.key``, each JSON-ready with ``match``."""
    return {figure.key: figure.to_json() for figure in seed_figure_list()}
