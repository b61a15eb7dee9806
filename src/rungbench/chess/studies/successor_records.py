"""Successor-evaluation records: the content-addressed unit of the evaluation stage.

A record is one finished search of one successor (position before the move, the move) by
one identified evaluator at one depth under one conversion model; its key
(:class:`SuccessorKey`) is everything it depends on, so one record serves every cell, arm,
model and run that plays the move. :class:`EvaluationCache` stores records in an object
store with an index per key digest and revalidates each before reuse (bytes, schema, key,
payload digest, successor FEN, PV legality, the expectation recomputed from the score);
a failing record is quarantined, never trusted. Used by :mod:`.evaluation` (the stage) and
:mod:`.successor_search` (the engines that make records).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import chess.engine

import chess
from rungbench.chess.studies import evaluator as ev
from rungbench.chess.studies.regret import mover_ppm
from rungbench.chess.studies.wdl_model import WdlModel
from rungbench.errors import InputError, IntegrityError
from rungbench.evidence.canonical import canonical_bytes, digest, loads_canonical
from rungbench.evidence.store import ObjectStore, write_atomic

RECORD_SCHEMA = "rungbench.chess.successor-eval/1"
"""Schema name and version of a successor-evaluation record."""


@dataclass(frozen=True)
class SuccessorKey:
    """Everything one successor evaluation depends on."""

    evaluator: str
    """Digest of the evaluator identity."""
    model: str
    """Digest of the conversion model."""
    depth: int
    """Search depth."""
    position: str
    """Normalized identity of the position before the move."""
    move: str
    """The move (UCI)."""

    def to_json(self) -> dict[str, Any]:
        """Return the key as recorded inside the record."""
        return {"evaluator": self.evaluator, "model": self.model, "depth": self.depth,
                "position": self.position, "move": self.move}

    @cached_property
    def digest(self) -> str:
        """Digest of the key (names the index entry)."""
        return digest(self.to_json())

    @property
    def successor(self) -> chess.Board:
        """The board the engine searches: the normalized position, counters reset, moved.

        Returned without a move stack, so the engine receives ``position fen <successor>``:
        Ethereal 12.00 aborts (``getlsb: Assertion `bb' failed``) on ``position fen <root>
        moves <m>`` when the move leaves the side to move a bare king (measured on
        ``7k/8/6K1/8/8/8/8/Q7 w - -`` + any queen move), and answers the same position
        given as a plain FEN.
        """
        board = chess.Board(f"{self.position} 0 1")
        board.push(chess.Move.from_uci(self.move))
        return chess.Board(board.fen())


def make_record(key: SuccessorKey, board: chess.Board, info: chess.engine.InfoDict,
                model: WdlModel) -> dict[str, Any]:
    """Return the record of one finished search of ``key.successor``."""
    score = info.get("score")
    if score is None:
        raise ev.EvaluatorError(f"search of {board.fen()!r} returned no score")
    score_j = ev.score_json(score.pov(board.turn))
    payload = {"successor": board.fen(), "score": score_j,
               "search": {"depth": int(info.get("depth", 0)),
                          "seldepth": int(info.get("seldepth", 0)),
                          "nodes": int(info.get("nodes", 0))},
               "pv": [m.uci() for m in info.get("pv") or []],
               "expectation_ppm": mover_ppm(score_j, board, model)}
    return {"schema": RECORD_SCHEMA, "key": key.to_json(), "payload": payload,
            "payload_digest": digest(payload)}


def _pv_legal(board: chess.Board, pv: Sequence[str]) -> bool:
    replay = board.copy(stack=False)
    for uci in pv:
        try:
            move = chess.Move.from_uci(uci)
        except ValueError:
            return False
        if move not in replay.legal_moves:
            return False
        replay.push(move)
    return True


def record_problems(record: Any, key: SuccessorKey, model: WdlModel) -> list[str]:
    """Return every reason ``record`` may not be reused for ``key`` (empty: valid)."""
    if not isinstance(record, dict) or record.get("schema") != RECORD_SCHEMA:
        return ["schema"]
    if record.get("key") != key.to_json():
        return ["key"]
    payload = record.get("payload")
    if not isinstance(payload, dict) or record.get("payload_digest") != digest(payload):
        return ["payload_digest"]
    board = key.successor
    problems = []
    if payload.get("successor") != board.fen():
        problems.append("successor")
    score = payload.get("score")
    if not isinstance(score, dict) or len(score) != 1 or not (
            set(score) <= {"cp", "mate"} and type(next(iter(score.values()))) is int):
        return [*problems, "score"]
    if payload.get("expectation_ppm") != mover_ppm(score, board, model):
        problems.append("expectation_ppm")
    if not isinstance(payload.get("pv"), list) or not _pv_legal(board, payload["pv"]):
        problems.append("pv")
    return problems


class EvaluationCache:
    """A directory of successor-evaluation records with one index file per key.

    ``<root>/objects/sha256/..`` holds the records (immutable, content-addressed),
    ``<root>/index/<hex of key digest>.json`` names each key's record, and
    ``<root>/quarantine/`` receives records that failed revalidation.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.store = ObjectStore(root)

    def index_path(self, key: SuccessorKey) -> Path:
        """The index file of ``key``."""
        return self.root / "index" / f"{key.digest[7:]}.json"

    def lookup(self, key: SuccessorKey, model: WdlModel) -> tuple[dict[str, Any] | None,
                                                                 str | None, list[str]]:
        """Return ``(record, record digest, problems)``; a bad record is quarantined."""
        path = self.index_path(key)
        if not path.is_file():
            return None, None, []
        name: str | None = None
        try:
            entry = loads_canonical(path.read_bytes(), path=str(path))
            if not isinstance(entry, dict) or entry.get("key") != key.digest:
                raise InputError("index entry names another key", path=str(path))
            name = str(entry["record"])
            record = self.store.get_json(name)
            problems = record_problems(record, key, model)
        except (InputError, IntegrityError, KeyError, TypeError, ValueError) as exc:
            record, problems = None, [f"unreadable: {type(exc).__name__}"]
        if problems:
            self._quarantine(path, name)
            return None, None, problems
        return record, name, []

    def put(self, key: SuccessorKey, record: dict[str, Any], model: WdlModel) -> str:
        """Store a record that passes revalidation and point the index at it."""
        problems = record_problems(record, key, model)
        if problems:
            raise IntegrityError(f"refusing to cache an invalid record for {key.position!r} "
                                 f"{key.move}: {problems}")
        name = self.store.put_bytes(canonical_bytes(record))
        path = self.index_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, canonical_bytes({"key": key.digest, "record": name}), overwrite=True)
        return name

    def _quarantine(self, index: Path, name: str | None) -> None:
        qdir = self.root / "quarantine"
        qdir.mkdir(parents=True, exist_ok=True)
        os.replace(index, qdir / f"index-{index.name}")
        if name is not None and name.startswith("sha256:") and self.store.has(name):
            os.replace(self.store.path_for(name), qdir / f"object-{name[7:]}")
