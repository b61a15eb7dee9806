"""Frozen game cohorts (seed 002, "Why a live cohort makes a frozen pool provisional").

A cohort is a frozen set of games — PGN files, JSON game records with a ``pgn``
field (llm_chess per-game JSON), JSON Lines with a ``pgn`` field, or llm_chess
console transcripts — together with every board state the games reached, as
normalized identities and colour-mirror families. It is marked ``terminal`` only
when the run that produced it has ended; a live cohort can still add positions,
so a pool cleared against it proves nothing.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chess.pgn

import chess
from rungbench.chess.position import mirror_family, normalized_key, pgn_record
from rungbench.chess.workspace import Workspace, read_document, write_canonical
from rungbench.errors import InputError
from rungbench.evidence.canonical import bytes_digest, file_digest

COHORT_SCHEMA = "rungbench.chess.cohort/1"
"""Schema name and version of a frozen cohort document."""

_MAKE_MOVE = re.compile(r"make_move\s+([a-h][1-8][a-h][1-8][qrbn]?)")
_MOVE_MADE = "Move made, switching player"
_GAME_OVER = "GAME OVER"


@dataclass(frozen=True)
class Game:
    """One game of a cohort, as the moves actually played."""

    source: str
    """Path of the file it was read from."""
    locator: str
    """Where in the file (game number, line)."""
    moves: tuple[str, ...]
    """UCI moves from the standard start position."""
    complete: bool
    """Whether the source shows the game finished (a transcript can stop mid-game)."""
    start_fen: str = chess.STARTING_FEN
    """Position the moves start from (a PGN ``[FEN]`` header can set it)."""


def boards_of(game: Game) -> Iterator[chess.Board]:
    """Yield every board state of ``game``, the start position included."""
    board = chess.Board(game.start_fen)
    yield board.copy()
    for ply, uci in enumerate(game.moves, start=1):
        move = chess.Move.from_uci(uci)
        if move not in board.legal_moves:
            raise InputError(f"illegal move {uci!r} at ply {ply} of {game.locator}",
                             path=game.source, field="moves")
        board.push(move)
        yield board.copy()


def games_from_pgn_text(text: str, *, source: str, where: str) -> Iterator[Game]:
    """Yield the games of PGN text (several games allowed)."""
    stream = io.StringIO(text)
    number = 0
    while (game := chess.pgn.read_game(stream)) is not None:
        number += 1
        if game.errors:
            raise InputError(f"PGN game {number} of {where} does not replay: {game.errors[0]}",
                             path=source, field="pgn")
        moves = tuple(m.uci() for m in game.mainline_moves())
        complete = game.headers.get("Result", "*") != "*"
        yield Game(source, f"{where} game {number}", moves, complete, game.board().fen())


def games_from_transcript(text: str, *, source: str) -> Iterator[Game]:
    """Yield the games of an llm_chess console transcript.

    A move is the last ``make_move <uci>`` before the proxy's ``Move made, switching
    player`` reply; a game ends at ``GAME OVER``. A trailing game without ``GAME OVER``
    (an aborted run) is yielded with ``complete=False``: its states were still reached.
    """
    moves: list[str] = []
    pending: str | None = None
    number = 1
    for line in text.splitlines():
        found = _MAKE_MOVE.findall(line)
        if found:
            pending = found[-1]
        stripped = line.strip()
        if stripped == _MOVE_MADE:
            if pending is None:
                raise InputError(f"'{_MOVE_MADE}' without a make_move in game {number}",
                                 path=source)
            moves.append(pending)
            pending = None
        elif stripped == _GAME_OVER:
            yield Game(source, f"transcript game {number}", tuple(moves), True)
            moves, pending, number = [], None, number + 1
    if moves:
        yield Game(source, f"transcript game {number}", tuple(moves), False)


def read_games(path: Path) -> list[Game]:
    """Return the games of one cohort file, by its extension."""
    if not path.is_file():
        raise InputError("cohort source file does not exist", path=str(path))
    text = path.read_text(encoding="utf-8")
    source = str(path)
    if path.suffix == ".pgn":
        return list(games_from_pgn_text(text, source=source, where=path.name))
    if path.suffix == ".json":
        movetext = pgn_record(text, path=source, line=None)["pgn"]
        return list(games_from_pgn_text(movetext, source=source, where=path.name))
    if path.suffix == ".jsonl":
        return [game for no, line in enumerate(text.splitlines(), start=1) if line.strip()
                for game in games_from_pgn_text(pgn_record(line, path=source, line=no)["pgn"],
                                                source=source, where=f"line {no}")]
    if path.suffix == ".txt":
        return list(games_from_transcript(text, source=source))
    raise InputError(f"unknown cohort file type {path.suffix!r} (.pgn .json .jsonl .txt)",
                     path=source)


def build_cohort(name: str, paths: Sequence[Path], *, terminal: bool) -> dict[str, Any]:
    """Return the cohort document of the games in ``paths``."""
    if not paths:
        raise InputError(f"cohort {name!r} has no source files", field="paths")
    sources: list[dict[str, Any]] = []
    games: list[dict[str, Any]] = []
    keys: set[str] = set()
    families: set[str] = set()
    for path in sorted(paths, key=str):
        digest = file_digest(str(path))
        found = read_games(path)
        sources.append({"path": str(path), "digest": digest, "games": len(found)})
        for game in found:
            for board in boards_of(game):
                keys.add(normalized_key(board))
                families.add(mirror_family(board))
            games.append({"source": game.source, "locator": game.locator,
                          "plies": len(game.moves), "complete": game.complete})
    return {"schema": COHORT_SCHEMA, "name": name, "terminal": terminal, "sources": sources,
            "games": games, "positions": sorted(keys), "families": sorted(families)}


def freeze_cohort(workspace: Workspace, name: str, paths: Sequence[Path], *,
                  terminal: bool) -> dict[str, Any]:
    """Freeze a cohort into the workspace; return a summary with its digest."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise InputError(f"cohort name {name!r} must be [A-Za-z0-9_.-]+", field="name")
    document = build_cohort(name, paths, terminal=terminal)
    data = write_canonical(workspace.cohort(name), document)
    workspace.store.put_bytes(data)
    return {"cohort": name, "path": str(workspace.cohort(name)), "digest": bytes_digest(data),
            "terminal": terminal, "games": len(document["games"]),
            "positions": len(document["positions"]), "sources": len(document["sources"])}


def load_cohort(path: Path) -> tuple[str, dict[str, Any]]:
    """Return (digest, document) of a frozen cohort file."""
    return read_document(path, COHORT_SCHEMA)
