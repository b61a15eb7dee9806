"""Chess positions and their identities (seed 002, "The pool is frozen before the engine knows").

A position has two identities:

* the **normalized identity** (``key``): the FEN without the halfmove and fullmove
  counters, with the en-passant square kept only when a legal en-passant capture
  exists (python-chess's EPD form with ``en_passant="legal"``);
* the **colour-mirror family** (``family``): the smaller of the normalized identity
  and the normalized identity of the colour-flipped board, so that a position and
  its mirror image (ranks flipped, colours and side to move swapped) share a family.

The engine never sees the normalized identity: Stockfish 15.1's WDL depends on the
game ply, so the FEN handed to the engine keeps its real move counters.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

import chess
from rungbench.errors import InputError

Colour = Literal["white", "black"]
"""Side to move, spelled as in reports."""

Phase = Literal["opening", "middlegame", "endgame"]
"""Game phase of a position."""

PHASES: tuple[Phase, ...] = ("opening", "middlegame", "endgame")
"""Every phase, in report order."""

COLOURS: tuple[Colour, ...] = ("white", "black")
"""Every side to move, in report order."""

_PHASE_WEIGHT = {chess.KNIGHT: 1, chess.BISHOP: 1, chess.ROOK: 2, chess.QUEEN: 4}
"""Non-pawn material weights; 24 in the initial position (the PeSTO phase count)."""

ENDGAME_MAX_WEIGHT = 8
"""A position whose phase weight is at most this is an endgame (e.g. a rook and a minor each)."""

OPENING_MIN_WEIGHT = 20
"""An opening keeps at least this much non-pawn material ..."""

OPENING_MAX_FULLMOVE = 12
"""... and is still within this many full moves of the start."""


def board_from_fen(fen: str, *, path: str | None = None, line: int | None = None) -> chess.Board:
    """Return the board of ``fen``; raise :class:`InputError` naming where it came from."""
    try:
        board = chess.Board(fen)
    except ValueError as exc:
        raise InputError(f"invalid FEN {fen!r}: {exc}", path=path, line=line, field="fen") from exc
    if not board.is_valid():
        raise InputError(
            f"FEN {fen!r} is not a valid position ({board.status()!r})",
            path=path, line=line, field="fen",
        )
    return board


def pgn_record(text: str, *, path: str, line: int | None) -> dict[str, Any]:
    """Parse one JSON game record and check it holds a ``pgn`` movetext string.

    Raises :class:`InputError` naming ``path`` and ``line`` when ``text`` is not JSON
    or has no ``pgn`` string.
    """
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc}", path=path, line=line) from exc
    if not isinstance(record, dict) or not isinstance(record.get("pgn"), str):
        raise InputError("record has no 'pgn' string", path=path, line=line, field="pgn")
    return record


def normalized_key(board: chess.Board) -> str:
    """Return the normalized identity: FEN without move counters, legal en-passant only."""
    return str(board.epd(en_passant="legal"))


def mirror_family(board: chess.Board) -> str:
    """Return the colour-mirror family key: min of the key and the mirrored board's key."""
    return min(normalized_key(board), normalized_key(board.mirror()))


def phase_weight(board: chess.Board) -> int:
    """Return the non-pawn material phase weight (24 at the start, 0 with kings and pawns)."""
    return sum(
        weight * len(board.pieces(piece, colour))
        for piece, weight in _PHASE_WEIGHT.items()
        for colour in chess.COLORS
    )


def phase_of(board: chess.Board) -> Phase:
    """Return the phase: endgame by material, opening by material and move number, else middle."""
    weight = phase_weight(board)
    if weight <= ENDGAME_MAX_WEIGHT:
        return "endgame"
    if weight >= OPENING_MIN_WEIGHT and board.fullmove_number <= OPENING_MAX_FULLMOVE:
        return "opening"
    return "middlegame"


def colour_of(board: chess.Board) -> Colour:
    """Return the side to move."""
    return "white" if board.turn == chess.WHITE else "black"


def legal_width(board: chess.Board) -> int:
    """Return the number of legal root moves."""
    return int(board.legal_moves.count())


@dataclass(frozen=True)
class Lineage:
    """Where a position came from."""

    source: str
    """Source name (``lichess_puzzles``, ``kaggle_positions``, ...)."""
    source_digest: str
    """``sha256:`` of the source file's bytes at freeze time."""
    locator: str
    """Row, line or ply inside the source that produced the position."""
    game: str
    """Source-game identity; the partition-isolation key (a game never spans two splits)."""
    kind: str
    """How the position was derived (``puzzle``, ``puzzle_pre_setup``, ``game_final``)."""

    def to_json(self) -> dict[str, str]:
        """Return the lineage as a JSON-ready mapping."""
        return {
            "source": self.source, "source_digest": self.source_digest,
            "locator": self.locator, "game": self.game, "kind": self.kind,
        }


@dataclass(frozen=True)
class Position:
    """One frozen pool position with every engine-blind attribute."""

    key: str
    """Normalized identity (see module docstring)."""
    family: str
    """Colour-mirror family key."""
    fen: str
    """Full FEN with its real move counters: what the engine is given."""
    phase: Phase
    """Game phase."""
    colour: Colour
    """Side to move."""
    width: int
    """Number of legal root moves."""
    lineage: Lineage
    """Provenance and source game."""
    split: str = ""
    """Partition the position's source game was assigned to (empty before assignment)."""

    def to_json(self) -> dict[str, Any]:
        """Return the position as a JSON-ready mapping."""
        return {
            "key": self.key, "family": self.family, "fen": self.fen, "phase": self.phase,
            "colour": self.colour, "width": self.width, "lineage": self.lineage.to_json(),
            "split": self.split,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Position:
        """Rebuild a position from :meth:`to_json` output, re-deriving every identity."""
        board = board_from_fen(str(data["fen"]))
        position = describe(board, Lineage(**data["lineage"]), split=str(data["split"]))
        if position.to_json() != data:
            raise InputError(
                f"position {data.get('key')!r} does not match its own FEN-derived attributes",
                field="positions",
            )
        return position


def describe(board: chess.Board, lineage: Lineage, *, split: str = "") -> Position:
    """Return the :class:`Position` of ``board`` with every attribute derived from it."""
    return Position(
        key=normalized_key(board),
        family=mirror_family(board),
        fen=board.fen(en_passant="legal"),
        phase=phase_of(board),
        colour=colour_of(board),
        width=legal_width(board),
        lineage=lineage,
        split=split,
    )
