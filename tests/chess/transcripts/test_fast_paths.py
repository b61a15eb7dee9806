"""The census's fast paths give exactly what the plain python-chess / dataclass / regex /
disk-reading forms give, on the bundled corpus and on random positions (issue 15)."""

from __future__ import annotations

import bisect
import dataclasses
import functools
import random
import re

import chess.variant
import pytest

import chess
from rungbench.chess.transcripts.census import _Lines
from rungbench.chess.transcripts.console import _HEADER_BYTES, Block, Marker, next_header, tokenize
from rungbench.chess.transcripts.corpus import Attempt
from rungbench.chess.transcripts.dispatch import (
    _illegal_reason,
    fast_fen,
    is_game_over,
    render_legal_moves,
)
from rungbench.chess.transcripts.frozen import read_frozen, verify_frozen
from rungbench.chess.transcripts.llmchess import read_run
from rungbench.chess.transcripts.llmchess_checks import Check
from rungbench.evidence.paths import shared_data_dir

DATA = shared_data_dir() / "llm_chess"


def _same_as_init(record: object) -> bool:
    """Whether a record holds exactly its class's fields and equals its __init__-built twin."""
    assert dataclasses.is_dataclass(record) and not isinstance(record, type)
    names = {f.name for f in dataclasses.fields(record)}
    return set(vars(record)) == names and type(record)(**vars(record)) == record


def test_fast_built_records_equal_their_init_built_twins() -> None:
    """Every Block and Marker of every bundled capture, and every attempt and check of every
    bundled run, equals the record its dataclass __init__ builds, and stays frozen."""
    events = [e for run, files in read_frozen(DATA)
              for e in tokenize(files["output.txt"], path=str(run))]
    assert sum(isinstance(e, Block) for e in events) > 1000
    assert sum(isinstance(e, Marker) for e in events) > 1000
    assert all(_same_as_init(e) for e in events)
    attempts: list[Attempt] = []
    checks: list[Check] = []
    for run in verify_frozen(DATA):
        report = read_run(run)
        attempts += report.corpus.attempts
        checks += [c for g in report.games for c in g.checks] + list(report.run_checks)
    assert len(attempts) > 400 and len(checks) > 400
    assert all(_same_as_init(a) for a in attempts)
    assert all(_same_as_init(c) for c in checks)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(attempts[0], "ply", 99)  # noqa: B010 (the frozen __setattr__ itself)


def test_header_search_by_literal_is_the_header_regex_search() -> None:
    """next_header finds what _HEADER_BYTES.search finds, from every line start of every
    bundled capture and from every offset of 3,000 random near-header strings."""
    for _, files in read_frozen(DATA):
        data = files["output.txt"]
        starts = [0] + [m.end() for m in re.finditer(b"\n", data)]
        for pos in starts:
            expected, found = _HEADER_BYTES.search(data, pos), next_header(data, pos)
            assert (expected and expected.span()) == (found and found.span()), pos
    pieces = [b"P", b"_1", b" ", b"(to ", b" (to ", b"):\n\n", b"\n", b"x y", b"):",
              b"Proxy (to Player_Black):\n\n"]
    rng = random.Random(3)
    for _ in range(3000):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        for pos in range(len(data) + 1):
            expected, found = _HEADER_BYTES.search(data, pos), next_header(data, pos)
            assert (expected and expected.span()) == (found and found.span()), (data, pos)


@functools.cache
def _random_boards() -> list[chess.Board]:
    """Positions of random games from the start and from a position with all four castling
    rights (rights lost one by one, castled kings, promotions), plus odd-rights set-ups."""
    rng = random.Random(11)
    boards = []
    for game in range(120):
        board = chess.Board() if game % 2 else chess.Board(
            "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1")
        for _ in range(rng.randint(1, 150)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
            boards.append(board.copy())
    for fen in ("r3k2r/8/8/8/8/8/8/R3K1R1 w KQkq - 0 1", "4k3/8/8/8/8/8/8/R3K2R w Kq - 0 1",
                "1r2k2r/8/8/8/8/8/8/R3K2R b KQk - 0 1", "rk5r/8/8/8/8/8/8/RK5R w KQkq - 0 1"):
        boards += [chess.Board(fen), chess.Board(fen, chess960=True)]
    return boards


def test_legal_list_fen_and_castling_field_equal_python_chess_on_random_games() -> None:
    """render_legal_moves is the uci() list of board.legal_moves and fast_fen is board.fen()
    (castling field included) on thousands of random positions, Chess960 boards too."""
    boards = _random_boards()
    assert len(boards) > 3000
    assert {b.castling_xfen() for b in boards} >= {"KQkq", "Kkq", "Qk", "-", "Kq"}
    for board in boards:
        assert render_legal_moves(board) == ",".join(m.uci() for m in board.legal_moves)
        assert fast_fen(board) == board.fen(), board.fen()


def _parse_uci_reason(board: chess.Board, uci: str) -> str | None:
    """The verdict without the fast path: python-chess's parse_uci alone."""
    try:
        board.parse_uci(chess.Move.from_uci(uci).uci())
    except ValueError as exc:
        return str(exc)
    return None


def test_legality_fast_path_agrees_with_parse_uci() -> None:
    """_illegal_reason accepts and rejects what parse_uci does, with its error text: every
    legal move, castling written king-takes-rook, null, malformed and illegal commands."""
    odd = ["e1h1", "e1a1", "e8h8", "e8a8", "e1g1", "e1c1", "0000", "a7a8", "a2a1q", "e2e5",
           "z9z9", "e7e8k"]
    for board in _random_boards()[::7]:
        for uci in [m.uci() for m in board.legal_moves] + odd:
            assert _illegal_reason(board, uci) == _parse_uci_reason(board, uci), (board.fen(),
                                                                                  uci)


def test_legality_from_the_rendered_legal_list_agrees_with_parse_uci() -> None:
    """_illegal_reason given the position's rendered legal-move list accepts and rejects what
    parse_uci does, with its error text, on every bundled position and thousands of random
    ones: every legal move, castling written king-takes-rook, null, malformed, illegal."""
    odd = ["e1h1", "e1a1", "e8h8", "e8a8", "e1g1", "e1c1", "0000", "a7a8", "a2a1q", "e2e5",
           "z9z9", "e7e8k", "", ","]
    boards = _bundled_boards() + _random_boards()[::3]
    assert len(boards) > 5000
    for board in boards:
        listed = render_legal_moves(board)
        for uci in [m.uci() for m in board.legal_moves] + odd:
            assert (_illegal_reason(board, uci, listed)
                    == _parse_uci_reason(board, uci)), (board.fen(), uci)


def test_run_read_from_verified_bytes_equals_run_read_from_disk() -> None:
    """read_run over the bytes read_frozen verified reports exactly what reading every file
    from disk reports, run by run."""
    for run, files in read_frozen(DATA):
        from_bytes, from_disk = read_run(run, files=files), read_run(run)
        assert from_bytes.to_json() == from_disk.to_json()
        assert from_bytes.corpus == from_disk.corpus


def test_line_counter_equals_a_search_of_newline_offsets() -> None:
    """_Lines.line(offset) is one more than the newlines before offset, asked in any order
    (forwards, backwards, negative, past the end)."""
    data = b"ab\n\ncd\nef\n\n\nlast"
    newlines = [i for i, c in enumerate(data) if c == ord("\n")]
    lines = _Lines(data)
    rng = random.Random(5)
    for offset in [*range(-2, len(data) + 3), *(rng.randint(-3, 25) for _ in range(300))]:
        assert lines.line(offset) == bisect.bisect_left(newlines, offset) + 1, offset


@functools.cache
def _bundled_boards() -> list[chess.Board]:
    """Every position of every bundled game, each with its move stack (repetitions)."""
    boards = []
    for run in verify_frozen(DATA):
        for game in read_run(run).corpus.games:
            board = chess.Board(game.start_fen)
            boards.append(board.copy())
            for uci in game.moves:
                board.push_uci(uci)
                boards.append(board.copy())
    return boards


def _ended_boards() -> list[chess.Board]:
    """Positions each ending the game one way, and their near misses: checkmate, stalemate,
    insufficient material, the 75-move clock at 149 and 150, fourfold and fivefold
    repetitions by knight shuffles and by null moves, a repetition cut by a pawn move."""
    fens = ("7k/6Q1/6K1/8/8/8/8/8 b - - 0 1", "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1",
            "8/8/4k3/8/8/3NK3/8/8 w - - 0 1", "8/8/4k3/8/8/3BK3/8/8 w - - 0 1",
            "8/8/4k3/8/8/3RK3/8/8 w - - 149 90", "8/8/4k3/8/8/3RK3/8/8 w - - 150 90",
            "7k/5Q2/6K1/8/8/8/8/8 b - - 150 90")
    boards = [chess.Board(fen) for fen in fens]
    shuffle = ["g1f3", "g8f6", "f3g1", "f6g8"]
    for line in (shuffle * 4, ["e2e4", "e7e5", *shuffle * 4], ["b1c3", "b8c6", *shuffle * 4],
                 [*shuffle * 2, "e2e4", "e7e5", *shuffle * 2]):
        board = chess.Board()
        for uci in line:
            board.push_uci(uci)
            boards.append(board.copy())
    board = chess.Board()
    for _ in range(2):
        for uci in shuffle:
            board.push_uci(uci)
    board.push_uci("e2e4")
    for _ in range(10):
        board.push(chess.Move.null())
        boards.append(board.copy())
    return boards


def test_game_over_fast_path_equals_is_game_over() -> None:
    """is_game_over(board) is board.is_game_over() on every position of every bundled game,
    thousands of random-game positions, and positions ended (or nearly ended) by each rule:
    checkmate, stalemate, insufficient material, 75 moves, fivefold repetition (null moves
    too); a variant board gets its own rules."""
    ended = _ended_boards()
    expected = [b.is_game_over() for b in ended]
    assert sum(expected) >= 8 and not all(expected)
    boards = _bundled_boards() + _random_boards() + ended
    assert len(boards) > 8000
    for board in boards:
        assert is_game_over(board) == board.is_game_over(), board.fen()
    atomic = chess.variant.AtomicBoard("8/8/8/8/8/8/1k6/qK6 w - - 0 1")
    assert is_game_over(atomic) == atomic.is_game_over()


def test_reflection_prompt_memo_equals_stripping_every_prompt() -> None:
    """_is_reflect_prompt answers what stripping remove_text and comparing with the reflection
    prompt answers, asked twice (memo cold, then warm), for every prompt of the bundled
    corpus and for the reflection prompt bare, wrapped in a think block and altered, under a
    version with remove_text and one without; clear_render_cache forgets the answers."""
    from rungbench.chess.transcripts import dispatch as d

    thinking = d.version("llmchess-2025-08")
    assert thinking.remove_text
    plain = dataclasses.replace(thinking, remove_text=None)
    prompts = {a.prompt for run in verify_frozen(DATA) for a in read_run(run).corpus.attempts}
    prompts |= {d.REFLECT_PROMPT, f"<think>x\ny</think>{d.REFLECT_PROMPT}",
                f"{d.REFLECT_PROMPT}<think></think>", d.REFLECT_PROMPT + " ", ""}
    d.clear_render_cache()
    answers = []
    for _ in range(2):
        for dv in (thinking, plain):
            for prompt in prompts:
                expected = d._strip_removed(dv, prompt) == d.REFLECT_PROMPT
                assert d._is_reflect_prompt(dv, prompt) == expected, prompt[:80]
                answers.append(expected)
    assert sum(answers) >= 8 and not all(answers)
    assert d._REFLECTING
    d.clear_render_cache()
    assert not d._REFLECTING
