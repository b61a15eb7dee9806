"""Frozen cohorts: PGN, game JSON and transcript parsing, board states, terminal flag."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import chess
from rungbench.chess.labels.cohort import (
    Game,
    boards_of,
    build_cohort,
    freeze_cohort,
    games_from_transcript,
    load_cohort,
    read_games,
)
from rungbench.chess.position import normalized_key
from rungbench.chess.workspace import Workspace
from rungbench.errors import InputError


def test_transcript_games_match_the_run(label_data: Any) -> None:
    """The gpt-35 transcript holds 30 finished games; its first game is f2f4 g8f6 a2a3."""
    games = read_games(label_data.replication[0])
    assert len(games) == 30 and all(g.complete for g in games)
    assert games[0].moves == ("f2f4", "g8f6", "a2a3")


def test_aborted_transcript_keeps_its_unfinished_game(label_data: Any) -> None:
    """The gpt-oss transcript: 9 finished games, then a 10th cut off mid-game (kept, incomplete)."""
    path = label_data.pilot[0].parent / "output.txt"
    games = read_games(path)
    assert [g.complete for g in games] == [True] * 9 + [False]


def test_game_json_pgn_is_read(label_data: Any) -> None:
    """The first gpt-oss game JSON is the one-move game 1. c3 (result 1-0)."""
    games = read_games(label_data.pilot[0])
    assert [g.moves for g in games] == [("c2c3",)]
    assert games[0].complete


def test_boards_include_start_and_every_ply() -> None:
    """A two-ply game reaches three board states, the initial position first."""
    boards = list(boards_of(Game("x", "g1", ("e2e4", "e7e5"), True)))
    assert len(boards) == 3
    assert normalized_key(boards[0]) == normalized_key(chess.Board())


def test_illegal_transcript_move_is_refused_with_location() -> None:
    """A move that is illegal in the replayed game raises InputError naming the game."""
    with pytest.raises(InputError, match="illegal move 'e2e5'"):
        list(boards_of(Game("t.txt", "transcript game 1", ("e2e5",), True)))


def test_move_made_without_make_move_is_an_error() -> None:
    """A 'Move made' confirmation with no preceding make_move is malformed input."""
    with pytest.raises(InputError, match="without a make_move"):
        list(games_from_transcript("Move made, switching player\n", source="t.txt"))


def test_pgn_fen_header_sets_the_start(tmp_path: Path) -> None:
    """A PGN with a FEN header contributes that position, not the initial one."""
    fen = "8/5k2/8/3r4/8/4P3/3R4/4K3 w - - 0 50"
    path = tmp_path / "c.pgn"
    path.write_text(f'[FEN "{fen}"]\n[SetUp "1"]\n[Result "*"]\n\n*\n')
    doc = build_cohort("c", [path], terminal=False)
    assert doc["positions"] == [normalized_key(chess.Board(fen))]
    assert doc["games"][0]["complete"] is False


def test_freeze_writes_a_content_addressed_cohort(tmp_path: Path, label_data: Any) -> None:
    """Freezing writes the cohort file and the same bytes into the store."""
    ws = Workspace(tmp_path)
    summary = freeze_cohort(ws, "pilot", label_data.pilot, terminal=True)
    digest, doc = load_cohort(ws.cohort("pilot"))
    assert digest == summary["digest"] and ws.store.has(digest)
    assert doc["terminal"] is True and summary["games"] == 9


def test_unknown_file_type_is_refused(tmp_path: Path) -> None:
    """A cohort file of an unknown type is an InputError, not silently skipped."""
    path = tmp_path / "games.csv"
    path.write_text("x\n")
    with pytest.raises(InputError, match="unknown cohort file type"):
        read_games(path)
