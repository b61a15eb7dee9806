"""Frozen move-choice schedules: one cell per chess position, answered with ``submit_move``.

Two sources become schedules of :data:`~rungbench.chess.reference_agents.TASK` cells,
each rendered by :func:`~rungbench.chess.reference_agents.move_choice_request` (the
move-choice prompt: position, FEN, one required ``submit_move`` tool taking a UCI
string — never an enum of the legal moves, seed 000 "Hold the action interface
still too"):

* a Lichess puzzle CSV (``PuzzleId,FEN,Moves,…``): the cell shows the position after
  the opponent's setup move (``Moves[0]``); the solution's first move (``Moves[1]``)
  is the hidden ``best_move``;
* a JSONL of positions, one ``{"fen": …, "id"?: …, "best_move"?: …}`` object a line.

A schedule's source record names the file, its sha256, ``offset`` and ``limit``, so
rebuilding from the same file gives the same schedule digest.

Reference agents with their manifest descriptions live in
:func:`~rungbench.chess.reference_agents.reference_move_agent`.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import chess
from rungbench.agents.protocol import Request
from rungbench.chess import reference_agents as chess_agents
from rungbench.errors import InputError
from rungbench.evidence.canonical import file_digest
from rungbench.execute.schedule import Schedule


def puzzle_schedule(path: Path, *, limit: int | None = None, offset: int = 0) -> Schedule:
    """Build move-choice cells from a Lichess puzzle CSV (position after the setup move)."""
    requests: list[Request] = []
    reader = csv.DictReader(io.StringIO(_read_text(path), newline=""))
    try:
        for line, row in enumerate(reader, start=2):
            if line - 2 < offset:
                continue
            if limit is not None and len(requests) >= limit:
                break
            requests.append(_puzzle_request(path, line, row))
    except csv.Error as exc:
        raise InputError(
            f"not a puzzle CSV: {exc}", path=str(path), line=reader.reader.line_num
        ) from exc
    return Schedule.of(chess_agents.TASK, path.name, requests, _source(path, limit, offset))


def _puzzle_request(path: Path, line: int, row: dict[str, str | None]) -> Request:
    values: dict[str, str] = {}
    for column in ("PuzzleId", "FEN", "Moves"):
        value = row.get(column)
        if not value:
            raise InputError(f"missing {column}", path=str(path), line=line, field=column)
        values[column] = value
    moves = values["Moves"].split()
    try:
        board = chess_agents.board_from_fen(values["FEN"])
        board.push_uci(moves[0])
        board = chess_agents.playable_board(board.fen(), field="FEN")
    except ValueError as exc:  # an invalid FEN (InputError) or an illegal setup move
        field = exc.field if isinstance(exc, InputError) else None
        message = str(exc).removesuffix(f" (field {field!r})") if field else str(exc)
        raise InputError(f"bad puzzle row: {message}", path=str(path), line=line,
                         field=field) from exc
    if len(moves) < 2:
        raise InputError("puzzle has no solution move", path=str(path), line=line, field="Moves")
    rating_text = row.get("Rating") or "0"
    try:
        rating = int(rating_text)
    except ValueError as exc:
        raise InputError(
            f"rating {rating_text[:40]!r} is not an integer", path=str(path), line=line,
            field="Rating",
        ) from exc
    best = _legal_best(board, moves[1], path, line, "Moves")
    return chess_agents.move_choice_request(
        f"puzzle-{values['PuzzleId']}",
        board.fen(),
        best_move=best,
        extra={"puzzle_id": values["PuzzleId"], "rating": rating},
    )


def fen_schedule(path: Path, *, limit: int | None = None, offset: int = 0) -> Schedule:
    """Build move-choice cells from a JSONL of ``{"fen", "id"?, "best_move"?}`` objects."""
    requests: list[Request] = []
    for line, row_text in enumerate(_read_text(path).splitlines(), start=1):
        if not row_text.strip() or line - 1 < offset:
            continue
        if limit is not None and len(requests) >= limit:
            break
        requests.append(_fen_request(path, line, row_text))
    return Schedule.of(chess_agents.TASK, path.name, requests, _source(path, limit, offset))


def _fen_request(path: Path, line: int, text: str) -> Request:
    try:
        row = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not a position record: {exc}", path=str(path), line=line) from exc
    if not isinstance(row, dict):
        raise InputError("not a position record: expected a JSON object", path=str(path),
                         line=line)
    fen = row.get("fen")
    if not isinstance(fen, str):
        raise InputError(f"fen must be a string, got {fen!r}"[:120], path=str(path), line=line,
                         field="fen")
    try:
        board = chess_agents.playable_board(fen)
    except InputError as exc:  # the same problem, placed at its file and line
        message = str(exc).removesuffix(f" (field {exc.field!r})")
        raise InputError(message, path=str(path), line=line, field=exc.field) from exc
    best = row.get("best_move")
    if best is not None:
        if not isinstance(best, str):
            raise InputError(f"best_move must be a UCI string, got {best!r}"[:120],
                             path=str(path), line=line, field="best_move")
        best = _legal_best(board, best, path, line, "best_move")
    return chess_agents.move_choice_request(
        str(row.get("id") or f"fen-{line:05d}"), fen, best_move=best
    )


def _read_text(path: Path) -> str:
    """Return the file as UTF-8 text; an InputError names the line of the first bad byte."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"not UTF-8 text: {exc.reason}", path=str(path), line=line) from exc


def _legal_best(board: chess.Board, uci: str, path: Path, line: int, field: str) -> str:
    """Return ``uci`` when it is a legal move of ``board``; else an InputError at path:line."""
    try:
        move = chess.Move.from_uci(uci)
    except ValueError:
        move = None
    if move is None or move not in board.legal_moves:
        raise InputError(
            f"best move {uci[:40]!r} is not legal in {board.fen()}", path=str(path), line=line,
            field=field,
        )
    return move.uci()


def _source(path: Path, limit: int | None, offset: int) -> dict[str, Any]:
    return {"file": path.name, "sha256": file_digest(str(path)), "offset": offset, "limit": limit}
