"""Known-answer tests of seed 002's class and stability rules on constructed WDL lists.

Expectations are in half-per-mille units ``2W + D``: 2000 = a certain win, 1000 = a
certain draw or an even W/L split. Each case states the hand-computed answer.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rungbench.chess.labels.stability import (
    PassView,
    best_gap,
    classify,
    expectation_units,
    jaccard_at_least,
    near_best_count,
    stability_reasons,
)

MOVES = ("e2e4", "d2d4", "g1f3", "c2c4", "b1c3", "f2f4", "g2g3", "b2b3", "a2a3", "h2h3")


def view(exps: list[int], *, mate: int | None = None, forcing: bool = False,
         moves: tuple[str, ...] = MOVES) -> PassView:
    """Build a pass view from expectation units."""
    return PassView(moves=moves[: len(exps)], expectations=tuple(exps), best_mate=mate,
                    best_forcing=forcing)


FLAT = [1000] * 10


def test_expectation_units_known_answers() -> None:
    """W=300 D=500 L=200 gives 2·300+500 = 1100 half-per-mille (0.55)."""
    assert expectation_units(300, 500, 200) == 1100
    assert expectation_units(1000, 0, 0) == 2000
    assert expectation_units(0, 1000, 0) == 1000


def test_expectation_units_rejects_bad_wdl() -> None:
    """A WDL triple not summing to 1000 is rejected, not normalized."""
    with pytest.raises(ValueError):
        expectation_units(500, 500, 1)


def test_tactical_at_exactly_gap_0_20() -> None:
    """Best 1400 vs second 1000 is a gap of exactly 0.20: tactical (≥ is inclusive)."""
    assert classify(view([1400, 1000, *FLAT[2:]])) == "tactical"


def test_gap_just_below_0_20_is_not_tactical() -> None:
    """Gap 399 units (0.1995) from a quiet move is quiet, not tactical."""
    assert classify(view([1399, 1000, 900, 800, 700, *FLAT[5:]])) == "quiet"


def test_winning_mate_is_tactical_even_with_tied_wdl() -> None:
    """A winning mate is tactical although best and second tie at a certain win."""
    assert classify(view([2000, 2000, 2000, 2000, 2000, *FLAT[5:]], mate=3)) == "tactical"


def test_tied_certain_wins_without_mate_are_ambiguous() -> None:
    """Five tied certain wins and no mate score: gap 0, five near best → ambiguous."""
    assert classify(view([2000] * 5 + FLAT[5:])) == "ambiguous"


def test_losing_mate_is_not_tactical() -> None:
    """Being mated (negative mate) with all moves at 0 is a tie: ambiguous, not tactical."""
    assert classify(view([0] * 10, mate=-2)) == "ambiguous"


def test_ambiguous_counts_the_best_itself() -> None:
    """Best 1000, rank 2 at 960 and rank 3 at exactly 940 (0.03 below): three within → ambiguous."""
    assert classify(view([1000, 960, 940, 500, 400, *FLAT[5:]])) == "ambiguous"


def test_two_near_best_is_not_ambiguous() -> None:
    """Best plus one within 0.03 is only two of five; gap 20 units is below quiet's floor."""
    assert classify(view([1000, 980, 900, 800, 700, *FLAT[5:]])) == "unclassified"


def test_quiet_needs_gap_strictly_above_0_03() -> None:
    """Gap of exactly 60 units (0.03) is not quiet; 61 units is."""
    assert classify(view([1060, 1000, 900, 800, 700, *FLAT[5:]])) == "unclassified"
    assert classify(view([1061, 1000, 900, 800, 700, *FLAT[5:]])) == "quiet"


def test_forcing_best_move_is_not_quiet() -> None:
    """The same gap with a capture or check as best move is unclassified."""
    assert classify(view([1100, 1000, 900, 800, 700, *FLAT[5:]], forcing=True)) == "unclassified"


def test_ambiguous_takes_precedence_over_quiet_under_inversion() -> None:
    """Rank 2 at 900 (gap 0.05) but ranks 3-4 within 0.03 of best: ambiguous is checked first."""
    assert classify(view([1000, 900, 990, 995, 100, *FLAT[5:]])) == "ambiguous"


def test_inverted_gap_is_negative_and_unclassified() -> None:
    """Rank 2 scoring above rank 1 gives a negative gap: never tactical or quiet."""
    exps = [1000, 1100, 500, 400, 300, *FLAT[5:]]
    assert best_gap(exps) == -100
    assert near_best_count(exps) == 2
    assert classify(view(exps)) == "unclassified"


def stable_pair() -> tuple[PassView, PassView]:
    """Two identical quiet passes."""
    exps = [1100, 1000, 900, 800, 700, 600, 500, 400, 300, 200]
    return view(exps), view(exps)


def test_identical_passes_are_stable() -> None:
    """Identical passes fail no rule."""
    assert stability_reasons(*stable_pair()) == []


def test_fewer_than_ten_lines_is_excluded() -> None:
    """A pass with nine lines is excluded before any comparison."""
    a, _ = stable_pair()
    short = view(list(a.expectations[:9]))
    assert stability_reasons(a, short) == ["fewer_than_ten_lines"]


def test_duplicate_root_moves_are_excluded() -> None:
    """Ten lines with a repeated root move are not ten unique moves."""
    a, _ = stable_pair()
    dup = view(list(a.expectations), moves=(*MOVES[:9], MOVES[0]))
    assert stability_reasons(dup, a) == ["duplicate_root_moves"]


def test_top_move_change_is_excluded() -> None:
    """Swapping ranks 1 and 2 changes the top move and ranks 1–6."""
    a, _ = stable_pair()
    swapped = view(list(a.expectations), moves=(MOVES[1], MOVES[0], *MOVES[2:]))
    assert stability_reasons(a, swapped) == ["top_move_changed", "ranks_1_6_changed"]


def test_rank_six_change_only() -> None:
    """Swapping ranks 6 and 7 keeps the top move and the top-10 set: only ranks 1–6 fail."""
    a, _ = stable_pair()
    moves = (*MOVES[:5], MOVES[6], MOVES[5], *MOVES[7:])
    assert stability_reasons(a, view(list(a.expectations), moves=moves)) == ["ranks_1_6_changed"]


def test_swapping_ranks_seven_and_eight_is_stable() -> None:
    """Ranks 7–10 may reorder: same set, ranks 1–6 intact."""
    a, _ = stable_pair()
    moves = (*MOVES[:6], MOVES[7], MOVES[6], *MOVES[8:])
    assert stability_reasons(a, view(list(a.expectations), moves=moves)) == []


def test_jaccard_two_replacements_fails() -> None:
    """Replacing two of ten moves: |∩|=8, |∪|=12, Jaccard 0.667 < 0.80."""
    a, _ = stable_pair()
    moves = (*MOVES[:8], "h2h4", "a2a4")
    assert stability_reasons(a, view(list(a.expectations), moves=moves)) == [
        "top10_jaccard_below_0_80"]


def test_jaccard_one_replacement_passes() -> None:
    """Replacing one move: |∩|=9, |∪|=11, Jaccard 0.818 ≥ 0.80."""
    a, _ = stable_pair()
    moves = (*MOVES[:9], "h2h4")
    assert stability_reasons(a, view(list(a.expectations), moves=moves)) == []


def test_jaccard_boundary_is_inclusive() -> None:
    """Exactly 4/5 passes and just under fails (exact integer comparison)."""
    assert jaccard_at_least(list("abcd"), list("abcde"), 4, 5)
    assert not jaccard_at_least(list("abc"), list("abcd"), 4, 5)


def test_gap_drift_boundary() -> None:
    """Gap 100 vs 140 units is a drift of exactly 0.02 (kept); 141 units drifts 0.0205."""
    base = [1100, 1000, 900, 800, 700, 600, 500, 400, 300, 200]
    same = view([1140, *base[1:]])
    assert stability_reasons(view(base), same) == []
    over = view([1141, *base[1:]])
    assert stability_reasons(view(base), over) == ["gap_drift_above_0_02"]


def test_class_change_is_excluded() -> None:
    """Same moves, gap within drift, but quiet vs ambiguous: class_changed."""
    quiet = view([1070, 1000, 990, 500, 400, 300, 200, 100, 50, 0])
    ambiguous = view([1060, 1000, 1000, 500, 400, 300, 200, 100, 50, 0])
    assert classify(quiet) == "quiet" and classify(ambiguous) == "ambiguous"
    assert stability_reasons(quiet, ambiguous) == ["class_changed"]


@given(st.lists(st.integers(0, 2000), min_size=10, max_size=10), st.booleans(),
       st.one_of(st.none(), st.integers(-20, 20)))
def test_a_pass_is_always_stable_against_itself(exps: list[int], forcing: bool,
                                               mate: int | None) -> None:
    """Invariant: any pass compared with an identical copy fails no stability rule."""
    v = view(exps, mate=mate, forcing=forcing)
    assert stability_reasons(v, v) == []
    assert classify(v) in ("tactical", "ambiguous", "quiet", "unclassified")


def test_negative_wdl_component_is_refused() -> None:
    """A per-mille WDL summing to 1000 but with a negative part is rejected."""
    with pytest.raises(ValueError, match="invalid per-mille WDL"):
        expectation_units(1100, -100, 0)
