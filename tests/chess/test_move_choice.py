"""Move-choice schedules from puzzle CSVs and FEN JSONL files, and the described reference agent."""

from __future__ import annotations

from pathlib import Path

import pytest

import chess
from rungbench.chess.move_choice import fen_schedule, puzzle_schedule, reference_move_agent
from rungbench.chess.reference_agents import TASK
from rungbench.errors import InputError
from rungbench.evidence.paths import shared_data_dir

PUZZLES = shared_data_dir() / "lichess_puzzles" / "puzzles.csv"
KAGGLE = shared_data_dir() / "kaggle_chess_positions" / "filtered_chess_positions.jsonl"


def test_puzzle_cell_is_the_position_after_the_setup_move() -> None:
    """Puzzle tewjc: the cell shows the board after a2a7, and e5e3 is the hidden best move."""
    cell = puzzle_schedule(PUZZLES, limit=3).cells[0]
    board = chess.Board("r5k1/pp3p1p/2b2qp1/3pr3/8/4P2P/R1PN1PP1/Q3K2R w K - 0 19")
    board.push_uci("a2a7")
    assert cell.cell_id == "puzzle-tewjc"
    assert cell.request.metadata["fen"] == board.fen()
    assert cell.request.metadata["best_move"] == "e5e3"
    assert board.fen() in cell.request.messages[-1].content


def test_schedules_rebuild_to_the_same_digest() -> None:
    """Building twice from the same file gives the same frozen schedule digest."""
    assert puzzle_schedule(PUZZLES, limit=5).digest() == puzzle_schedule(PUZZLES, limit=5).digest()
    kaggle = fen_schedule(KAGGLE, limit=4)
    assert [c.cell_id for c in kaggle] == ["fen-00001", "fen-00002", "fen-00003", "fen-00004"]


def test_offset_skips_rows_and_enters_the_digest() -> None:
    """offset=2 starts at the third puzzle, and the source record makes the digest differ."""
    whole = puzzle_schedule(PUZZLES, limit=4)
    shifted = puzzle_schedule(PUZZLES, limit=2, offset=2)
    assert [c.cell_id for c in shifted] == [c.cell_id for c in whole][2:]
    assert shifted.task == TASK
    assert shifted.digest() != puzzle_schedule(PUZZLES, limit=2).digest()


def test_puzzle_without_a_solution_move_names_line_and_field(tmp_path: Path) -> None:
    """A puzzle whose Moves hold only the setup move is an InputError at its CSV line."""
    path = tmp_path / "p.csv"
    fen = "r5k1/pp3p1p/2b2qp1/3pr3/8/4P2P/R1PN1PP1/Q3K2R w K - 0 19"
    path.write_text(f"PuzzleId,FEN,Moves,Rating\nok,{fen},a2a7 e5e3,1500\nbad,{fen},a2a7,1500\n")
    with pytest.raises(InputError) as caught:
        puzzle_schedule(path)
    assert caught.value.line == 3 and caught.value.field == "Moves"


def test_fen_line_without_fen_names_its_line(tmp_path: Path) -> None:
    """A JSONL line lacking "fen" is an InputError naming that line; ids default to fen-NNNNN."""
    path = tmp_path / "p.jsonl"
    path.write_text('{"fen": "8/8/8/4k3/8/8/8/4K2R w K - 0 1", "id": "rook"}\n{"id": "x"}\n')
    assert [c.cell_id for c in fen_schedule(path, limit=1)] == ["rook"]
    with pytest.raises(InputError) as caught:
        fen_schedule(path)
    assert caught.value.line == 2


def test_reference_move_agent_is_described_for_the_manifest() -> None:
    """The described reference agent reports kind, name, seed and node budget, and answers."""
    agent = reference_move_agent("random", seed=7, nodes=100)
    assert agent.describe() == {
        "kind": "reference",
        "name": agent.name,
        "seed": 7,
        "nodes": 100,
    }
    cell = puzzle_schedule(PUZZLES, limit=1).cells[0]
    response = agent.respond(cell.request)
    assert response.tool_calls and response.tool_calls[0].name == "submit_move"
