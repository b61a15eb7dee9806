"""The outcome-blind E020/E021 ladder and E022 falsifier audit (seed 001), and the cell count."""

from __future__ import annotations

import itertools

import pytest
from tests.chess.studies import study_fixtures as fx

from rungbench.chess.studies import ladder
from rungbench.chess.studies.ladder_audit import (
    bound_positions,
    ladder_audit,
    registered_cells,
    slot_balance,
    synthetic_list,
)
from rungbench.design.registry import load_design
from rungbench.errors import InputError

TOP5 = 'name = "oracle_top5"\nkind = "oracle"\nwidth = 5'


@pytest.fixture(scope="module")
def e020() -> dict[str, object]:
    """The audit of the registered E020/E021 preset, as JSON."""
    return ladder_audit(load_design("e020_e021")).to_json()


def test_registered_ladder_passes_every_check(e020: dict[str, object]) -> None:
    """600 positions × (5 arms + a listed and an empty choice): nested, no leak, balanced."""
    assert e020["ok"] and e020["failed"] == [], e020["failed"]
    detail = e020["detail"]
    assert detail["rendered_cells"] == 600 * 7  # type: ignore[index]
    assert "empty_shortlist_is_the_unaided_prompt" in e020["checks"]  # type: ignore[operator]
    balance = detail["rank1_slot_balance"]  # type: ignore[index]
    assert set(balance) == {"oracle_top2", "oracle_top5", "oracle_top10",
                            "self_shortlist_choice:first_listed"}
    assert balance["oracle_top2"]["counts"] == [305, 295]
    assert balance["oracle_top2"]["chi_square"] == pytest.approx(50 / 300)
    assert all(sum(b["counts"]) == 600 and b["p"] >= 0.001 for b in balance.values())


def test_registered_falsifiers_pass_every_check() -> None:
    """E022: 300 positions, the three arms share the control's five moves and order."""
    report = ladder_audit(load_design("e022"))
    assert report.ok, report.failed()
    assert report.detail["rendered_cells"] == 300 * 3
    assert "successor_fen_is_the_position_after" in report.checks
    assert "best_omitted_drops_every_tie_and_only_ties" not in report.checks
    counts = {n: b["counts"] for n, b in report.detail["rank1_slot_balance"].items()}
    assert counts["oracle_top5"] == counts["successor_top5"] == counts["reply_top5"]


def test_non_nested_widths_fail_the_audit() -> None:
    """A preset whose top-5 shows one move breaks the top-2 ⊂ top-5 ⊂ top-10 chain."""
    broken = fx.variant("e020_e021", {TOP5: TOP5.replace("width = 5", "width = 1")},
                        name="e020_broken")
    report = ladder_audit(broken, positions=30)
    assert not report.ok and "oracle_lists_nest" in report.failed()
    assert report.detail["violations"]["oracle_lists_nest"] == 30


def test_falsifier_off_the_control_width_fails() -> None:
    """An E022 successor arm of width 4 no longer shows the control's list."""
    broken = fx.variant("e022", {'name = "successor_top5"\nkind = "successor"\nwidth = 5':
                                 'name = "successor_top5"\nkind = "successor"\nwidth = 4'},
                        name="e022_broken")
    report = ladder_audit(broken, positions=12)
    assert "falsifiers_at_the_control_width" in report.failed()


def test_a_leaked_score_fails_the_audit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A renderer that appends an engine score to each candidate line fails two checks."""
    honest = ladder._pairs
    monkeypatch.setattr(ladder, "_pairs", lambda lst, ucis: [
        f"{line} score +0.31" for line in honest(lst, ucis)])
    report = ladder_audit(load_design("e020_e021"), positions=12)
    assert {"lines_follow_the_grammar", "no_score_or_rank_text"} <= set(report.failed())


def test_a_rank_ordered_display_fails_the_balance_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """Showing every list in pass A order (rank 1 always first) fails the chi-square check."""
    monkeypatch.setattr(ladder, "shown_moves", lambda arm, lst, order: (
        [] if arm["kind"] == "unaided" else
        [c.uci for c in lst.candidates[:int(arm["width"])]
         if arm["kind"] != "omitted" or c.uci not in ladder.best_set(lst)]))
    import rungbench.chess.studies.ladder_audit as la

    monkeypatch.setattr(la, "shown_moves", ladder.shown_moves)
    report = ladder_audit(load_design("e020_e021"), positions=60)
    assert "rank1_slot_balanced" in report.failed()
    assert report.detail["rank1_slot_balance"]["oracle_top5"]["counts"] == [60, 0, 0, 0, 0]


def test_synthetic_lists_exercise_ties() -> None:
    """Position p's synthetic list has p mod 3 moves tied with rank 1, all legal."""
    fen = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"
    for p in range(3):
        lst = synthetic_list(fen, p)
        assert len(ladder.best_set(lst)) == 1 + p and len(lst.candidates) == 10


def test_slot_balance_is_pearsons_chi_square() -> None:
    """Counts [30, 10] against uniform: statistic (10² + 10²)/20 = 10."""
    counts, stat, p = slot_balance([0] * 30 + [1] * 10, 2)
    assert counts == [30, 10] and stat == pytest.approx(10.0) and p == pytest.approx(0.001565,
                                                                                     abs=1e-5)


def test_registered_cells_make_up() -> None:
    """E020/E021: 600 × 2 models × (5 arms + probe + choice) = 8,400, as its [cells] states."""
    reg = load_design("e020_e021")
    cells = registered_cells(reg)
    print(cells)
    assert cells == {"positions": 600, "models": 2, "move_choice_arms": 5, "probes": 1,
                     "move_choice": 6000, "probe_calls": 1200, "choice_calls": 1200,
                     "total": 8400}
    assert reg.section("cells") == {"move_choice": 6000, "probes": 1200, "choice": 1200,
                                    "total": 8400}
    e022 = registered_cells(load_design("e022"))
    assert e022["total"] == load_design("e022").section("cells")["total"] == 1800
    assert bound_positions(load_design("e022")) == 300


def test_seed_cell_figure_is_not_a_partition_composition() -> None:
    """No arms × partitions (300/150/150) × models × presentations count equals 8,800."""
    seed = int(load_design("e020_e021").section("seed_figures")["registered_cells_in_seed"])
    assert seed == 8800 and seed % 150 == 100
    reachable = {m * pres * (300 * t + 150 * d + 150 * h)
                 for t, d, h in itertools.product(range(30), repeat=3)
                 for m, pres in itertools.product((1, 2), (1, 2))}
    assert 8400 in reachable and 7200 in reachable and seed not in reachable


def test_audit_refuses_a_non_ladder_design() -> None:
    """The ladder audit of the A105 preset is an input error naming design.kind."""
    with pytest.raises(InputError, match=r"design\.kind"):
        ladder_audit(load_design("a105"))
