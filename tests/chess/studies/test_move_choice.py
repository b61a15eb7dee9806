"""Move-choice schedules from puzzle CSVs and FEN JSONL files, and the described reference agent."""

from __future__ import annotations

from pathlib import Path

import pytest

import chess
from rungbench.chess.reference_agents import TASK, reference_move_agent
from rungbench.chess.studies.move_choice import fen_schedule, puzzle_schedule
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


FEN = "8/8/8/4k3/8/8/4P3/4K3 w - - 0 1"


@pytest.mark.parametrize(
    ("text", "line", "field", "fragment"),
    [
        (f"PuzzleId,FEN,Moves\nx,{FEN},e2e4 e5e3\n", 2, "Moves", "best move 'e5e3' is not legal"),
        (f"PuzzleId,FEN,Moves,Rating\nx,{FEN},e2e4 e5e4,hard\n", 2, "Rating", "not an integer"),
        (f"PuzzleId,FEN\nx,{FEN}\n", 2, "Moves", "missing Moves"),
        (f"PuzzleId,FEN,Moves\nx,{FEN},e2e5 e5e4\n", 2, None, "bad puzzle row"),
    ],
)
def test_bad_puzzle_rows_name_line_and_field(
    tmp_path: Path, text: str, line: int, field: str | None, fragment: str
) -> None:
    """An illegal solution or setup move, a non-integer rating or a missing column is an
    InputError at its CSV line — never a traceback, never a cell with an impossible answer."""
    path = tmp_path / "p.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=fragment) as caught:
        puzzle_schedule(path)
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(path), line, field)


@pytest.mark.parametrize(
    ("row", "field", "fragment"),
    [
        ('{"fen": 5}', "fen", "fen must be a string"),
        ('{"fen": "garbage w - - 0 1"}', "fen", "invalid FEN"),
        ('["fen"]', None, "expected a JSON object"),
        (f'{{"fen": "{FEN}", "best_move": "e2e5"}}', "best_move", "not legal"),
        (f'{{"fen": "{FEN}", "best_move": 7}}', "best_move", "UCI string"),
    ],
)
def test_bad_position_lines_name_line_and_field(
    tmp_path: Path, row: str, field: str | None, fragment: str
) -> None:
    """A FEN that is not a string or not a position, a non-object line, or an illegal best move
    is an InputError naming the JSONL line."""
    path = tmp_path / "p.jsonl"
    path.write_text(f'{{"fen": "{FEN}"}}\n{row}\n')
    with pytest.raises(InputError, match=fragment) as caught:
        fen_schedule(path)
    assert (caught.value.line, caught.value.field) == (2, field)


def test_bytes_that_are_not_utf8_name_their_line(tmp_path: Path) -> None:
    """A byte that is not UTF-8 is reported at the line that holds it, in both formats."""
    csv_path = tmp_path / "p.csv"
    csv_path.write_bytes(f"PuzzleId,FEN,Moves\nx,{FEN},e2e4 e5e4\n".encode() + b"y,\xff\n")
    jsonl_path = tmp_path / "p.jsonl"
    jsonl_path.write_bytes(b"\n\n\xfe\n")
    for path, build, line in ((csv_path, puzzle_schedule, 3), (jsonl_path, fen_schedule, 3)):
        with pytest.raises(InputError, match="not UTF-8") as caught:
            build(path)
        assert caught.value.line == line


@pytest.mark.parametrize(("fen", "ending"), [
    ("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1", "stalemate"),
    ("7k/6Q1/6K1/8/8/8/8/8 b - - 0 1", "checkmate"),
])
def test_position_without_a_legal_move_is_refused_at_its_line(
    tmp_path: Path, fen: str, ending: str
) -> None:
    """A stalemate or checkmate FEN is no move-choice cell: an InputError naming line and 'fen'."""
    path = tmp_path / "p.jsonl"
    path.write_text(f'{{"fen": "{FEN}"}}\n{{"fen": "{fen}"}}\n')
    with pytest.raises(InputError, match=ending) as caught:
        fen_schedule(path)
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(path), 2, "fen")
