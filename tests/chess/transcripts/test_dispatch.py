"""Dispatcher replay: precedence, versions and regenerated replies (seed 000, A104)."""

from __future__ import annotations

import pytest

import chess
from rungbench.chess.transcripts.dispatch import (
    REFLECT_PROMPT,
    REFLECTION_FOLLOWUP,
    VerdictKind,
    dispatch,
    invalid_action_message,
    is_board_display,
    is_legal_list,
    render_board,
    render_legal_moves,
    turn_prompt,
    version,
)
from rungbench.errors import InputError

AUG = version("llmchess-2025-08")
JAN = version("llmchess-2025-01")
START_LIST = ("g1h3,g1f3,b1c3,b1a3,h2h3,g2g3,f2f3,e2e3,d2d3,c2c3,b2b3,a2a3,"
              "h2h4,g2g4,f2f4,e2e4,d2d4,c2c4,b2b4,a2a4")
"""The legal-move reply printed verbatim at the start of every game in both bundled logs."""


def test_board_query_wins_over_everything() -> None:
    """A reply naming the board, the list and a move is a board query (fixed precedence)."""
    v = dispatch(AUG, "get_legal_moves then get_current_board, make_move e7e5",
                 board=chess.Board(), previous_prompt="")
    assert v.kind is VerdictKind.BOARD_QUERY
    assert v.reply == chess.Board().unicode()


def test_list_query_by_substring_inside_prose() -> None:
    """Substring matching on the lowercased reply turns advice into a legal-list query."""
    text = "If you need help, you can use the 'GET_LEGAL_MOVES' command. make_move e2e4"
    v = dispatch(JAN, text, board=chess.Board(), previous_prompt="")
    assert v.kind is VerdictKind.LEGAL_QUERY
    assert v.reply == START_LIST


def test_reflection_followup_swallows_a_move() -> None:
    """After the reflection prompt, even a legal make_move gets the follow-up, not a move."""
    v = dispatch(AUG, "make_move e2e4", board=chess.Board(), previous_prompt=REFLECT_PROMPT)
    assert (v.kind, v.reply, v.failed) == (VerdictKind.REFLECTION_FOLLOWUP, REFLECTION_FOLLOWUP,
                                           False)
    again = dispatch(AUG, "get_current_board", board=chess.Board(),
                     previous_prompt=REFLECT_PROMPT)
    assert again.kind is VerdictKind.BOARD_QUERY


def test_do_reflection_is_recognised_even_when_not_offered() -> None:
    """do_reflection is answered with the reflection prompt whatever the turn prompt offered."""
    v = dispatch(AUG, "Do_Reflection please", board=chess.Board(), previous_prompt="")
    assert (v.kind, v.reply) == (VerdictKind.REFLECTION, REFLECT_PROMPT)


def test_remove_text_strips_reasoning_before_dispatch() -> None:
    """The August 2025 version ignores commands inside <think> tags; January's does not."""
    text = "<think>maybe get_current_board\nor make_move a1a8</think>\nmake_move e2e4"
    assert dispatch(AUG, text, board=chess.Board(), previous_prompt="").move == "e2e4"
    assert dispatch(JAN, text, board=chess.Board(), previous_prompt="").kind is (
        VerdictKind.BOARD_QUERY)


def test_promotion_needs_the_five_character_grammar() -> None:
    """'make_move e7e8q' is accepted with promotions and rejected by the four-letter grammar."""
    board = chess.Board("8/4P3/8/8/8/8/k7/4K3 w - - 0 1")
    assert dispatch(AUG, "make_move e7e8q", board=board, previous_prompt="").accepted
    old = dispatch(version("uci4-no-promotion"), "make_move e7e8q", board=board,
                   previous_prompt="")
    assert (old.kind, old.move, old.failed) == (VerdictKind.MOVE_REJECTED, "e7e8", True)
    assert old.reply.startswith("Failed to make move: ")


def test_illegal_and_malformed_commands() -> None:
    """An illegal move is a wrong move; text without a command is an invalid action."""
    illegal = dispatch(AUG, "make_move e2e5", board=chess.Board(), previous_prompt="")
    assert (illegal.kind, illegal.failed) == (VerdictKind.MOVE_REJECTED, True)
    empty = dispatch(AUG, "", board=chess.Board(), previous_prompt="")
    assert empty.kind is VerdictKind.INVALID_ACTION
    assert empty.reply == invalid_action_message(enable_reflection=False)


def test_turn_prompt_matches_the_logged_prompt() -> None:
    """The turn prompt is byte-identical to the one in both bundled transcripts."""
    logged = (
        "You are a professional chess player and you play as black. Now is your turn to make a "
        "move. Before making a move you can pick one of the following actions:\n- "
        "'get_current_board' to get the schema and current status of the board\n- "
        "'get_legal_moves' to get a UCI formatted list of available moves\n- 'make_move <UCI "
        "formatted move>' when you are ready to complete your turn (e.g., 'make_move e2e4')")
    assert turn_prompt("black", enable_reflection=False) == logged
    assert "do_reflection" in turn_prompt("white", enable_reflection=True)


def test_display_shapes() -> None:
    """Board displays and UCI lists are recognised by shape, and only they are."""
    board = chess.Board()
    assert is_board_display(render_board(board))
    assert not is_board_display(render_legal_moves(board))
    assert is_legal_list(render_legal_moves(board))
    assert not is_legal_list(render_board(board))
    assert render_board(board, "FEN_ONLY") == chess.STARTING_FEN


def test_unknown_version_is_an_input_error() -> None:
    """Asking for a dispatcher version that does not exist names the field."""
    with pytest.raises(InputError, match="dispatcher"):
        version("llmchess-1999")


def test_run_configuration_renames_a_changed_version() -> None:
    """The August run's own configuration keeps the name; a different one gets a suffix."""
    same = AUG.with_config(remove_text="<think>.*?</think>", enable_reflection=False,
                           max_failed_attempts=3, max_turns=10, board_mode="UNICODE_ONLY")
    assert same is AUG
    other = AUG.with_config(remove_text=None, enable_reflection=True, max_failed_attempts=3,
                            max_turns=10, board_mode="UNICODE_ONLY")
    assert other.name.startswith("llmchess-2025-08+") and other.enable_reflection
    assert "do_reflection" in dispatch(other, "", board=chess.Board(), previous_prompt="").reply


def test_reflection_followup_wins_over_a_new_reflection_request() -> None:
    """After the reflection prompt, even 'do_reflection' gets the follow-up, not the prompt."""
    v = dispatch(AUG, "do_reflection", board=chess.Board(), previous_prompt=REFLECT_PROMPT)
    assert v.kind is VerdictKind.REFLECTION_FOLLOWUP and v.reply == REFLECTION_FOLLOWUP


def test_invalid_action_counts_as_a_failure() -> None:
    """Free text with no command is an invalid action that counts as a failed attempt."""
    v = dispatch(AUG, "I am thinking.", board=chess.Board(), previous_prompt="")
    assert v.kind is VerdictKind.INVALID_ACTION and v.failed is True and v.move is None


def test_board_display_needs_exactly_eight_rows() -> None:
    """Seven or nine well-formed rows are not a board display; the real eight are."""
    rows = chess.Board().unicode().split("\n")
    assert is_board_display("\n".join(rows))
    assert not is_board_display("\n".join(rows[:7]))
    assert not is_board_display("\n".join([*rows, rows[0]]))


def test_fast_board_display_and_fen_equal_python_chess_on_every_bundled_position() -> None:
    """render_board and fen_of give python-chess's board.unicode() and board.fen() byte for
    byte on every position of every bundled game, plus 2,000 random-game positions."""
    import random

    from rungbench.chess.transcripts.dispatch import fen_of, render_board, rendered
    from rungbench.chess.transcripts.llmchess import read_run
    from rungbench.evidence.paths import shared_data_dir

    boards = []
    for run in sorted(p for p in (shared_data_dir() / "llm_chess").iterdir() if p.is_dir()):
        for game in read_run(run).corpus.games:
            board = chess.Board(game.start_fen)
            boards.append(board.copy())
            for uci in game.moves:
                board.push_uci(uci)
                boards.append(board.copy())
    rng = random.Random(7)
    board = chess.Board()
    for _ in range(2000):
        moves = list(board.legal_moves)
        if not moves:
            board = chess.Board()
            continue
        board.push(rng.choice(moves))
        boards.append(board.copy())
    assert len(boards) > 2050
    for b in boards:
        assert render_board(b) == b.unicode()
        assert fen_of(b) == b.fen()
        assert rendered("legal", "", fen=b.fen()) == ",".join(m.uci() for m in b.legal_moves)


def test_memoised_verdicts_never_cross_versions() -> None:
    """With a FEN given, a verdict is computed once per (version, reply, position, reflection
    prompt before): the same call returns the same verdict, while another version (January
    reads inside think tags) or a reflection prompt before gets its own answer."""
    board = chess.Board()
    fen = board.fen()
    text = "<think>get_current_board</think> make_move e2e4"
    first = dispatch(AUG, text, board=board, previous_prompt="", fen=fen)
    assert dispatch(AUG, text, board=board, previous_prompt="", fen=fen) is first
    assert first.move == "e2e4"
    assert dispatch(JAN, text, board=board, previous_prompt="", fen=fen).kind is (
        VerdictKind.BOARD_QUERY)
    assert dispatch(AUG, text, board=board, previous_prompt=REFLECT_PROMPT, fen=fen).kind is (
        VerdictKind.REFLECTION_FOLLOWUP)



def test_memoised_verdicts_are_shared_by_equal_versions_only() -> None:
    """An equal version built apart (as each run of a merged corpus builds its own) answers
    from the same memo entry; a version of the same name configured differently (reading
    inside think tags, as January does) gets its own verdict."""
    import dataclasses

    board = chess.Board()
    fen = board.fen()
    text = "<think>get_current_board</think> make_move e2e4"
    twin = dataclasses.replace(AUG)
    assert twin == AUG and twin is not AUG
    first = dispatch(AUG, text, board=board, previous_prompt="", fen=fen)
    assert dispatch(twin, text, board=board, previous_prompt="", fen=fen) is first
    assert AUG.remove_text is not None and JAN.remove_text is None
    unstripped = dataclasses.replace(AUG, remove_text=None)  # reads inside think tags
    assert dispatch(unstripped, text, board=board, previous_prompt="", fen=fen).kind is (
        VerdictKind.BOARD_QUERY)
    assert dispatch(AUG, text, board=board, previous_prompt="", fen=fen).move == "e2e4"

def test_fast_fen_equals_python_chess_with_castling_en_passant_and_promotions() -> None:
    """fast_fen is board.fen() on positions with castling rights lost, a legal and an illegal
    en-passant square, and promoted pieces."""
    from rungbench.chess.transcripts.dispatch import fast_fen

    for fen, moves in (
        (chess.STARTING_FEN, "e2e4 d7d5 e4e5 f7f5"),  # en passant e5f6 legal
        ("4k3/8/8/8/3p4/8/4P3/4K2R w K - 0 1", "e2e4"),  # d4xe3 legal
        ("4k3/8/8/8/3p4/8/4P3/3RK3 w - - 0 1", "e1f1 e8e7 e2e4"),
        ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "a1a8 e8d7"),
        ("8/P6k/8/8/8/8/p6K/8 w - - 0 1", "a7a8q a2a1n"),
    ):
        board = chess.Board(fen)
        assert fast_fen(board) == board.fen()
        for uci in moves.split():
            board.push_uci(uci)
            assert fast_fen(board) == board.fen(), board.fen()
