"""LLM Chess record checks: a replayed outcome against console summaries, game JSONs, aggregates."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import chess
from rungbench.chess.transcripts.llmchess_checks import (
    COUNTERS,
    ReplayedGame,
    aggregate_checks,
    json_checks,
    match_game_jsons,
    material_count,
    summary_checks,
)

# The first GAME OVER summary of the bundled run gpt-35-turbo-0301_2025-01-22
# (output.txt line 226), verbatim up to the cost lines.
SUMMARY = """GAME OVER

Random_Player wins due to Too many wrong actions.
Number of moves made: 4

Wrong Moves (LLM asked to make illegal/impossible move):
Player White: 0
Player Black: 0

Wrong Actions (LLM responded with non parseable message):
Player White: 0
Player Black: 3

Material Count:
Player White: 39
Player Black: 39
"""


def _counters(**values: int) -> dict[str, int]:
    return {**dict.fromkeys(COUNTERS, 0), **values}


GAME = ReplayedGame(
    winner="Random_Player", reason="Too many wrong actions", moves_made=4, material=(39, 39),
    counters={"white": _counters(), "black": _counters(wrong_actions=3)},
    sans=("h3", "e5", "a3", "d5"), result="1-0",
)
"""The replayed outcome of that game."""


def test_material_count_of_the_start_and_after_losing_a_queen() -> None:
    """P1 N3 B3 R5 Q9 gives 39 a side at the start; removing white's queen leaves 30."""
    board = chess.Board()
    assert material_count(board) == (39, 39)
    board.remove_piece_at(chess.D1)
    assert material_count(board) == (30, 39)


def test_pgn_breaks_the_move_text_every_ten_plies() -> None:
    """Move numbers on white's plies, a newline after each tenth ply, the result twice."""
    sans = ("e4", "e5", "Nf3", "Nc6", "Bb5", "a6", "Ba4", "Nf6", "O-O", "Be7", "Re1")
    pgn = replace(GAME, sans=sans, result="*").pgn("2025.01.22")
    assert pgn == ('[Event "Chess Game"]\n[Date "2025.01.22"]\n[White "Player White"]\n'
                   '[Black "Player Black"]\n[Result "*"]\n\n'
                   "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 5. O-O Be7 \n6. Re1  *")


def test_counter_of_a_colour_that_never_moved_is_zero() -> None:
    """A colour absent from the replay reads 0 for every counter, not a KeyError."""
    game = replace(GAME, counters={"black": _counters(wrong_moves=2)})
    assert game.counter("white", "wrong_moves") == 0
    assert game.counter("black", "wrong_moves") == 2


def test_summary_of_the_bundled_run_agrees_with_its_replayed_outcome() -> None:
    """The real summary yields 8 checks (winner, reason, moves, 4 counters, material), all ok."""
    checks = summary_checks(SUMMARY, GAME)
    assert [c.name for c in checks] == [
        "winner", "reason", "number_of_moves",
        "player_white.wrong_moves", "player_black.wrong_moves",
        "player_white.wrong_actions", "player_black.wrong_actions", "material_count",
    ]
    assert all(c.ok and c.source == "console" for c in checks)


def test_summary_disagreement_names_the_quantity_and_both_values() -> None:
    """A replay with 2 wrong actions for black fails exactly that check: recorded 3, replay 2."""
    replayed = replace(GAME, counters={"white": _counters(), "black": _counters(wrong_actions=2)})
    checks = summary_checks(SUMMARY, replayed)
    bad = [c for c in checks if not c.ok]
    assert [(c.name, c.expected, c.observed) for c in bad] == [
        ("player_black.wrong_actions", 3, 2)]


def test_json_without_pgn_or_action_counters_says_what_it_lacks() -> None:
    """A January-2025-style JSON is checked on what it holds; PGN and action counters are noted."""
    data = {
        "winner": "Random_Player", "reason": "Too many wrong actions", "number_of_moves": 4,
        "material_count": {"white": 39, "black": 39},
        "player_white": {"wrong_moves": 0, "wrong_actions": 0},
        "player_black": {"wrong_moves": 0, "wrong_actions": 3},
    }
    checks, unavailable = json_checks("g.json", data, GAME)
    assert len(checks) == 8 and all(c.ok and c.source == "g.json" for c in checks)
    assert unavailable[:3] == [f"{key}: absent from g.json" for key in
                               ("get_board_count", "get_legal_moves_count", "make_move_count")]
    assert unavailable[-1].startswith("pgn: absent from g.json")


def _usage(prompt: int, completion: int) -> dict[str, object]:
    return {"m": {"prompt_tokens": prompt, "completion_tokens": completion}}


def test_games_pair_with_jsons_only_by_unique_token_counts() -> None:
    """Unique counts pair; counts no JSON holds say 'missing upstream'; shared counts pair none."""
    jsons = {"a.json": {"usage_stats": {"white": _usage(1, 2), "black": _usage(3, 4)}},
             "b.json": {"usage_stats": {"white": _usage(5, 6), "black": _usage(7, 8)}}}
    unique = {"white": (1, 2), "black": (3, 4)}
    twice = {"white": (5, 6), "black": (7, 8)}
    nowhere = {"white": (9, 9), "black": (9, 9)}
    matches = match_game_jsons([unique, twice, twice, nowhere, None], jsons)
    assert matches[0] == ("a.json", None)
    assert matches[1][0] is None and "ambiguous" in str(matches[1][1])
    assert matches[2][0] is None and "ambiguous" in str(matches[2][1])
    assert matches[3][0] is None and "missing upstream" in str(matches[3][1])
    assert matches[4] == (None, None)


def test_run_without_an_aggregate_file_has_no_run_checks(tmp_path: Path) -> None:
    """No _aggregate_results.json means no run-level checks rather than a failing one."""
    assert aggregate_checks(tmp_path, [], []) == []


def test_two_digit_counters_are_read_whole() -> None:
    """A summary printing 12 wrong actions for black agrees with a replay counting 12."""
    summary = SUMMARY.replace("Player White: 0\nPlayer Black: 3",
                              "Player White: 0\nPlayer Black: 12")
    replayed = replace(GAME, counters={"white": _counters(), "black": _counters(wrong_actions=12)})
    checks = {c.name: c for c in summary_checks(summary, replayed)}
    assert checks["player_black.wrong_actions"].expected == 12
    assert checks["player_black.wrong_actions"].ok
