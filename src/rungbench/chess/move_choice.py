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

:func:`reference_move_agent` returns a reference chess agent together with the
description (name, seed, node budget) that goes into a run manifest.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from rungbench.agents.protocol import Agent, Request, Response
from rungbench.chess import reference_agents as chess_agents
from rungbench.errors import InputError
from rungbench.evidence.canonical import file_digest
from rungbench.execute.schedule import Schedule


def puzzle_schedule(path: Path, *, limit: int | None = None, offset: int = 0) -> Schedule:
    """Build move-choice cells from a Lichess puzzle CSV (position after the setup move)."""
    requests: list[Request] = []
    with open(path, newline="", encoding="utf-8") as fh:
        for line, row in enumerate(csv.DictReader(fh), start=2):
            if line - 2 < offset:
                continue
            if limit is not None and len(requests) >= limit:
                break
            requests.append(_puzzle_request(path, line, row))
    return Schedule.of(chess_agents.TASK, path.name, requests, _source(path, limit, offset))


def _puzzle_request(path: Path, line: int, row: dict[str, str]) -> Request:
    try:
        moves = row["Moves"].split()
        board = chess_agents.board_from_fen(row["FEN"])
        board.push_uci(moves[0])
    except (KeyError, IndexError, ValueError) as exc:
        raise InputError(f"bad puzzle row: {exc}", path=str(path), line=line) from exc
    if len(moves) < 2:
        raise InputError("puzzle has no solution move", path=str(path), line=line, field="Moves")
    return chess_agents.move_choice_request(
        f"puzzle-{row['PuzzleId']}",
        board.fen(),
        best_move=moves[1],
        extra={"puzzle_id": row["PuzzleId"], "rating": int(row.get("Rating") or 0)},
    )


def fen_schedule(path: Path, *, limit: int | None = None, offset: int = 0) -> Schedule:
    """Build move-choice cells from a JSONL of ``{"fen", "id"?, "best_move"?}`` objects."""
    requests: list[Request] = []
    for line, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not text.strip() or line - 1 < offset:
            continue
        if limit is not None and len(requests) >= limit:
            break
        requests.append(_fen_request(path, line, text))
    return Schedule.of(chess_agents.TASK, path.name, requests, _source(path, limit, offset))


def _fen_request(path: Path, line: int, text: str) -> Request:
    try:
        row = json.loads(text)
        fen = row["fen"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise InputError(f"not a position record: {exc}", path=str(path), line=line) from exc
    return chess_agents.move_choice_request(
        str(row.get("id") or f"fen-{line:05d}"), fen, best_move=row.get("best_move")
    )


def _source(path: Path, limit: int | None, offset: int) -> dict[str, Any]:
    return {"file": path.name, "sha256": file_digest(str(path)), "offset": offset, "limit": limit}


def reference_move_agent(name: str, *, seed: int = 0, nodes: int = 20_000) -> DescribedAgent:
    """Return reference chess agent ``name`` described by name, seed and node budget."""
    chosen = chess_agents.reference_agent(name, seed=seed, nodes=nodes)
    return DescribedAgent(
        chosen, {"kind": "reference", "name": chosen.name, "seed": seed, "nodes": nodes}
    )


class DescribedAgent:
    """An agent plus the description that goes into the run manifest."""

    def __init__(self, inner: Agent, description: dict[str, Any]) -> None:
        self.inner = inner
        self.name = inner.name
        self.description = description

    def respond(self, request: Request) -> Response:
        """Delegate to the wrapped agent."""
        return self.inner.respond(request)

    def describe(self) -> dict[str, Any]:
        """Return the manifest description."""
        return self.description

    def close(self) -> None:
        """Close the wrapped agent when it holds a process or connection."""
        closer = getattr(self.inner, "close", None)
        if callable(closer):
            closer()
