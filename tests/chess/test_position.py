"""Position identities: normalized key, colour-mirror family, phase, side to move, width."""

from __future__ import annotations

import pytest

import chess
from rungbench.chess.position import (
    Lineage,
    Position,
    board_from_fen,
    describe,
    legal_width,
    mirror_family,
    normalized_key,
    phase_of,
    phase_weight,
)
from rungbench.errors import InputError

LINEAGE = Lineage("test", "sha256:" + "0" * 64, "row 1", "game:1", "puzzle")


def test_key_drops_move_counters() -> None:
    """The same placement with different clocks has one normalized identity."""
    a = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    b = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 0 41")
    assert normalized_key(a) == normalized_key(b)
    assert normalized_key(a) == "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq -"


def test_en_passant_square_kept_only_when_capture_is_legal() -> None:
    """After 1.e4 no black pawn can take en passant: the e3 square is dropped."""
    board = chess.Board()
    board.push_san("e4")
    assert normalized_key(board).endswith(" b KQkq -")
    legal = chess.Board("rnbqkbnr/ppp1pppp/8/8/3pP3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 3")
    assert normalized_key(legal).endswith(" b KQkq e3")


def test_mirror_family_joins_a_position_and_its_colour_mirror() -> None:
    """A board and its colour-flipped mirror differ in key but share a family."""
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    mirrored = board.mirror()
    assert normalized_key(board) != normalized_key(mirrored)
    assert mirror_family(board) == mirror_family(mirrored)
    assert mirrored.turn == chess.BLACK


def test_phase_known_answers() -> None:
    """Start is opening; move 30 with full material is middlegame; K+R+P vs K+R is endgame."""
    assert phase_of(chess.Board()) == "opening"
    late = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 30")
    assert phase_of(late) == "middlegame"
    assert phase_of(chess.Board("8/5k2/8/3r4/8/4P3/3R4/4K3 w - - 0 50")) == "endgame"


def test_describe_records_side_width_and_fen_with_counters() -> None:
    """The initial position: white to move, 20 legal moves, counters kept for the engine."""
    pos = describe(chess.Board(), LINEAGE)
    assert (pos.colour, pos.width, legal_width(chess.Board())) == ("white", 20, 20)
    assert pos.fen.endswith(" 0 1")


def test_from_json_rejects_tampered_attributes() -> None:
    """A stored position whose phase does not follow from its FEN is refused."""
    data = describe(chess.Board(), LINEAGE).to_json()
    assert Position.from_json(data).key == data["key"]
    data["phase"] = "endgame"
    with pytest.raises(InputError, match="does not match"):
        Position.from_json(data)


def test_invalid_fen_names_the_source() -> None:
    """A malformed FEN raises InputError naming the path and line."""
    with pytest.raises(InputError, match=r"src\.csv:7"):
        board_from_fen("not a fen", path="src.csv", line=7)


def test_pinned_en_passant_capture_drops_the_square() -> None:
    """A pawn stands ready to take en passant but the capture would expose its king: no e3."""
    board = chess.Board("8/8/8/8/k2pP2R/8/8/4K3 b - e3 0 1")
    assert board.has_pseudo_legal_en_passant() and not board.has_legal_en_passant()
    assert normalized_key(board) == "8/8/8/8/k2pP2R/8/8/4K3 b - -"
    assert describe(board, LINEAGE).fen == "8/8/8/8/k2pP2R/8/8/4K3 b - - 0 1"


def test_mirror_family_is_the_smaller_key_and_keeps_legal_en_passant() -> None:
    """The family is min(key, mirrored key); the mirror keeps a legal en-passant square."""
    board = chess.Board("rnbqkbnr/ppp1pppp/8/8/3pP3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 3")
    mirrored = board.mirror()
    assert normalized_key(mirrored) == "rnbqkbnr/pppp1ppp/8/3Pp3/8/8/PPP1PPPP/RNBQKBNR w KQkq e6"
    assert mirror_family(board) == min(normalized_key(board), normalized_key(mirrored))
    assert mirror_family(mirrored.mirror()) == mirror_family(board)
    assert mirror_family(board) != mirror_family(chess.Board())


def test_phase_boundaries_are_inclusive() -> None:
    """Weight 8 (two rooks each side) is an endgame; weight 20 at move 12 is an opening."""
    rooks = chess.Board("r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w - - 0 30")
    assert phase_of(rooks) == "endgame"
    twenty = "r1bqkb1r/pppppppp/8/8/8/8/PPPPPPPP/R1BQKB1R w KQkq - 0 {}"
    assert phase_of(chess.Board(twenty.format(12))) == "opening"
    assert phase_of(chess.Board(twenty.format(13))) == "middlegame"


def test_queen_weighs_four() -> None:
    """The start position weighs 24 = 2 × (2·N1 + 2·B1 + 2·R2 + Q4)."""
    assert phase_weight(chess.Board()) == 24
    assert phase_weight(chess.Board("4k3/8/8/8/8/8/8/3QK3 w - - 0 1")) == 4


def test_invalid_position_is_refused() -> None:
    """A parseable FEN with no black king is an InputError naming the field."""
    with pytest.raises(InputError) as caught:
        board_from_fen("8/8/8/8/8/8/8/4K3 w - - 0 1")
    assert caught.value.field == "fen"
