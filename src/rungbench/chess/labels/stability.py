"""Class and stability rules of the two-pass label stage.

Seed 002, "Two passes, one narrow question".

All comparisons are exact integer arithmetic on the engine's own WDL report, in
*half-per-mille* expectation units: ``e = 2·wins + draws`` for the root player, so
``e / 2000`` is the WDL expectation in [0, 1]. The seed's thresholds are then
integers: 0.20 → 400, 0.03 → 60, 0.02 → 40. A threshold is never crossed by
rounding, and ties are equalities, not near-misses.

Ties and inversions are handled explicitly. "Best" is the engine's rank-1 move and
"second" its rank-2 move; MultiPV lines come from different depths, so the gap
``e₁ − e₂`` can be zero (a tie) or negative (an inversion). A zero or negative gap is
never tactical by gap and never quiet. A move counts as "within 0.03 of the best"
when ``e₁ − eᵢ ≤ 60``, so a tied or better-scored move is within.

Classes (checked in this order):

* ``tactical`` — the best move is a winning mate, or ``gap ≥ 0.20``;
* ``ambiguous`` — at least three of ranks 1–5 (the best counts itself) within 0.03
  of the best; a winning mate is tactical first;
* ``quiet`` — the best move is non-forcing (no capture, check or promotion) and
  ``0.03 < gap < 0.20``, both strict;
* ``unclassified`` — everything else.

Stability (pass A vs pass B): both passes return ten unique root moves; the same
top move; ranks 1–6 identical; top-10 Jaccard ≥ 0.80; ``|gap_A − gap_B| ≤ 0.02``;
the same class. Any failure is an exclusion with its reason — never a third pass,
a vote, a larger budget, or pass B's list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

LabelClass = Literal["tactical", "ambiguous", "quiet", "unclassified"]
"""Registered operational strata."""

CLASSES: tuple[LabelClass, ...] = ("tactical", "ambiguous", "quiet", "unclassified")
"""Every class, in report order."""

TACTICAL_GAP = 400
"""0.20 in half-per-mille units (seed 002: best-vs-second gap ≥ 0.20 is tactical)."""
NEAR_BEST = 60
"""0.03 in half-per-mille units (within 0.03 of the best; quiet lower bound)."""
GAP_DRIFT = 40
"""0.02 in half-per-mille units (maximum drift of the gap between passes)."""
MIN_LINES = 10
"""Both passes must return ten unique root moves."""
SAME_RANKS = 6
"""Ranks 1–6 must be identical."""
AMBIGUOUS_TOP = 5
"""Ambiguity counts near-best moves among the top five ..."""
AMBIGUOUS_COUNT = 3
"""... and needs at least three of them."""

EXCLUSION_CODES = (
    "fewer_than_ten_lines", "duplicate_root_moves", "top_move_changed", "ranks_1_6_changed",
    "top10_jaccard_below_0_80", "gap_drift_above_0_02", "class_changed",
)
"""Every registered exclusion reason, in the order the rules check them."""


@dataclass(frozen=True)
class PassView:
    """What the rules need from one pass: ranked moves and their WDL expectations."""

    moves: tuple[str, ...]
    """Root moves (UCI) in engine rank order."""
    expectations: tuple[int, ...]
    """Root-player WDL expectation of each move, half-per-mille (``2·W + D``)."""
    best_mate: int | None
    """Mate distance of the best move's score from the root player's view (None: no mate)."""
    best_forcing: bool
    """Whether the best move is a capture, a check or a promotion."""


def expectation_units(wins: int, draws: int, losses: int) -> int:
    """Return ``2·W + D`` for a per-mille WDL triple, checking it sums to 1000."""
    if wins + draws + losses != 1000 or min(wins, draws, losses) < 0:
        raise ValueError(f"invalid per-mille WDL {(wins, draws, losses)!r}")
    return 2 * wins + draws


def best_gap(expectations: Sequence[int]) -> int:
    """Return ``e₁ − e₂`` (may be zero for a tie or negative for an inversion)."""
    if len(expectations) < 2:
        raise ValueError("the best-vs-second gap needs at least two moves")
    return expectations[0] - expectations[1]


def near_best_count(expectations: Sequence[int]) -> int:
    """Return how many of the top five are within 0.03 of the best (the best included)."""
    best = expectations[0]
    return sum(1 for e in expectations[:AMBIGUOUS_TOP] if best - e <= NEAR_BEST)


def is_winning_mate(mate: int | None) -> bool:
    """Return whether a mate score is a mate for the root player."""
    return mate is not None and mate > 0


def classify(view: PassView) -> LabelClass:
    """Return the class of one pass by the seed's rules, in their registered order."""
    gap = best_gap(view.expectations)
    if is_winning_mate(view.best_mate) or gap >= TACTICAL_GAP:
        return "tactical"
    if near_best_count(view.expectations) >= AMBIGUOUS_COUNT:
        return "ambiguous"
    if not view.best_forcing and NEAR_BEST < gap < TACTICAL_GAP:
        return "quiet"
    return "unclassified"


def jaccard_at_least(a: Sequence[str], b: Sequence[str], num: int, den: int) -> bool:
    """Return whether ``|A∩B| / |A∪B| ≥ num/den``, exactly (no float)."""
    sa, sb = set(a), set(b)
    return den * len(sa & sb) >= num * len(sa | sb)


def _lines_reason(view: PassView) -> str | None:
    if len(view.moves) < MIN_LINES:
        return "fewer_than_ten_lines"
    if len(set(view.moves[:MIN_LINES])) < MIN_LINES:
        return "duplicate_root_moves"
    return None


def stability_reasons(a: PassView, b: PassView) -> list[str]:
    """Return every failed stability rule for passes A and B, in check order (empty: stable)."""
    for view in (a, b):
        reason = _lines_reason(view)
        if reason is not None:
            return [reason]
    top_a, top_b = a.moves[:MIN_LINES], b.moves[:MIN_LINES]
    reasons: list[str] = []
    if top_a[0] != top_b[0]:
        reasons.append("top_move_changed")
    if top_a[:SAME_RANKS] != top_b[:SAME_RANKS]:
        reasons.append("ranks_1_6_changed")
    if not jaccard_at_least(top_a, top_b, 4, 5):
        reasons.append("top10_jaccard_below_0_80")
    if abs(best_gap(a.expectations) - best_gap(b.expectations)) > GAP_DRIFT:
        reasons.append("gap_drift_above_0_02")
    if classify(a) != classify(b):
        reasons.append("class_changed")
    return reasons
