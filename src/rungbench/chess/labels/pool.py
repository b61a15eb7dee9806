"""The engine-blind position pool.

Seed 002, "The pool is frozen before the engine knows its classes".

The pool is built from real positions only, before any engine is opened:

* Lichess puzzles: the CSV's FEN is the position *before* the opponent's setup move
  ``Moves[0]``; the puzzle position is that FEN with ``Moves[0]`` applied. The game
  position before the setup move is also a realistic position of the same game and
  is kept as ``puzzle_pre_setup``. ``GameUrl`` (without ply and colour) is the lineage.
* PGN games (JSON Lines with a ``pgn`` movetext, e.g. the Kaggle positions): the game
  is replayed from the start and its final position must equal the stored ``fen``.
  Lines whose moves are a prefix of another line's moves are one source game.
* PGN game plies (``pgn_plies``, opt-in): the same JSON Lines, but every position
  *along* each replayed game is a candidate, by a registered rule
  (:class:`PlySampling`: every ``stride``-th ply whose full-move number is at least
  ``from_move``), so the bundled games can reach the registered manifest size. The
  lineage is the same source game as ``pgn_jsonl``; the kind is ``game_ply``.

Every kept position has at least ``min_width`` legal root moves (top-10 is an actual
condition); a colour-mirror family is kept once (first occurrence in source order).
Splits are assigned per source game by a seeded hash, so a game never spans two
splits. Each split × phase × colour cell must hold its reserve quota; a shortfall
refuses the freeze — no threshold is relaxed and nothing is borrowed across splits.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import chess.pgn

import chess
from rungbench.chess.position import (
    COLOURS,
    PHASES,
    Lineage,
    Position,
    board_from_fen,
    describe,
    pgn_record,
)
from rungbench.chess.workspace import Workspace, read_document, refuse_existing, write_document
from rungbench.errors import InputError, Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, file_digest
from rungbench.evidence.paths import portable_path, resolve_portable, shared_data_dir

POOL_SCHEMA = "rungbench.chess.pool/1"
"""Schema name and version of a frozen pool document."""

SourceKind = Literal["lichess_puzzles", "pgn_jsonl", "pgn_plies"]
"""Supported pool source formats."""

_PUZZLE_FIELDS = ("PuzzleId", "FEN", "Moves", "GameUrl")

MAX_LEGAL_MOVES = 218
"""Most legal moves any chess position has: no width floor above it can be met."""


@dataclass(frozen=True)
class PlySampling:
    """The registered rule of the ``pgn_plies`` source: which plies along a game are kept."""

    from_move: int = 8
    """Keep positions whose full-move number is at least this (move 8 on)."""
    stride: int = 1
    """Keep every ``stride``-th ply from the first kept one (1: every ply)."""

    def __post_init__(self) -> None:
        for name in ("from_move", "stride"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"{name} must be a positive integer, got {value!r}",
                                 field=name)

    def to_json(self) -> dict[str, int]:
        """Return the rule as recorded in the pool's source record."""
        return {"from_move": self.from_move, "stride": self.stride}


@dataclass(frozen=True)
class PoolSource:
    """One input file of the pool."""

    kind: SourceKind
    """Its format."""
    path: Path
    """Where it is read from."""
    limit: int | None = None
    """Read only the first ``limit`` rows or lines (None: all)."""
    sampling: PlySampling = field(default_factory=PlySampling)
    """The ply rule of a ``pgn_plies`` source (ignored, and not recorded, for other kinds)."""

    def __post_init__(self) -> None:
        if self.limit is not None and (isinstance(self.limit, bool) or self.limit < 1):
            raise InputError(f"limit must be a positive number of rows, got {self.limit!r}",
                             path=str(self.path), field="limit")

    @property
    def name(self) -> str:
        """Short name used in lineage records."""
        if self.kind == "lichess_puzzles":
            return "lichess_puzzles"
        return f"{'pgn' if self.kind == 'pgn_jsonl' else 'plies'}:{self.path.stem}"


@dataclass(frozen=True)
class PoolConfig:
    """Registered parameters of a pool freeze."""

    splits: tuple[tuple[str, int], ...] = (("dev", 1), ("test", 3))
    """Split names with integer weights; a game's split is drawn by a seeded hash."""
    seed: int = 0
    """Seed of the split hash."""
    min_width: int = 10
    """Minimum number of legal root moves (seed 002: top-10 is an actual condition)."""
    reserve: int = 1
    """Minimum positions per split × phase × colour cell."""
    reserve_overrides: Mapping[str, int] = field(default_factory=dict)
    """Per-cell reserve (``split/phase/colour`` → count), overriding ``reserve``."""
    include_pre_setup: bool = True
    """Also keep each puzzle's game position before the setup move."""

    def __post_init__(self) -> None:
        if self.reserve < 0 or any(v < 0 for v in self.reserve_overrides.values()):
            raise InputError(f"reserve quotas must be >= 0, got {self.reserve}",
                             field="reserve")
        if not 1 <= self.min_width <= MAX_LEGAL_MOVES:
            raise InputError(f"min_width must be in 1..{MAX_LEGAL_MOVES}, got {self.min_width}",
                             field="min_width")

    def to_json(self) -> dict[str, Any]:
        """Return the config as a JSON-ready mapping (recorded in the pool)."""
        return {
            "splits": [[name, weight] for name, weight in self.splits],
            "seed": self.seed, "min_width": self.min_width, "reserve": self.reserve,
            "reserve_overrides": dict(sorted(self.reserve_overrides.items())),
            "include_pre_setup": self.include_pre_setup,
        }

    def quota(self, cell: str) -> int:
        """Return the reserve quota of ``cell``."""
        return int(self.reserve_overrides.get(cell, self.reserve))


def cell_name(split: str, phase: str, colour: str) -> str:
    """Return the ``split/phase/colour`` cell label."""
    return f"{split}/{phase}/{colour}"


def game_id_from_url(url: str, *, path: str, line: int) -> str:
    """Return ``lichess:<id>`` from a GameUrl such as ``https://lichess.org/q2SFqfYD/black#97``."""
    prefix = "https://lichess.org/"
    if not url.startswith(prefix) or len(url) <= len(prefix):
        raise InputError(f"unexpected GameUrl {url!r}", path=path, line=line, field="GameUrl")
    return "lichess:" + url[len(prefix):].split("#")[0].split("/")[0]


def read_puzzles(source: PoolSource, digest: str, *, pre_setup: bool) -> Iterator[Position]:
    """Yield the positions of a Lichess puzzle CSV in row order."""
    path = str(source.path)
    with source.path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [f for f in _PUZZLE_FIELDS if f not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"puzzle CSV lacks columns {missing}", path=path, line=1)
        for row_no, row in enumerate(reader, start=2):
            if source.limit is not None and row_no - 1 > source.limit:
                return
            yield from _puzzle_positions(row, source, digest, row_no, pre_setup=pre_setup)


def _puzzle_positions(
    row: dict[str, str], source: PoolSource, digest: str, row_no: int, *, pre_setup: bool
) -> Iterator[Position]:
    path = str(source.path)
    board = board_from_fen(row["FEN"], path=path, line=row_no)
    moves = row["Moves"].split()
    if not moves:
        raise InputError("puzzle has no moves", path=path, line=row_no, field="Moves")
    game = game_id_from_url(row["GameUrl"], path=path, line=row_no)
    locator = f"row {row_no - 1} {row['PuzzleId']}"
    if pre_setup:
        yield describe(board, Lineage(source.name, digest, locator, game, "puzzle_pre_setup"))
    try:
        setup = chess.Move.from_uci(moves[0])
    except ValueError as exc:
        raise InputError(f"bad setup move {moves[0]!r}", path=path, line=row_no,
                         field="Moves") from exc
    if setup not in board.legal_moves:
        raise InputError(f"setup move {moves[0]!r} is illegal in {row['FEN']!r}",
                         path=path, line=row_no, field="Moves")
    board.push(setup)
    yield describe(board, Lineage(source.name, digest, locator, game, "puzzle"))


def _replay(movetext: str, *, path: str, line: int) -> tuple[chess.Board, tuple[str, ...]]:
    game = chess.pgn.read_game(io.StringIO(movetext))
    if game is None or game.errors:
        errors = [] if game is None else [str(e) for e in game.errors]
        raise InputError(f"PGN does not replay: {errors or 'no game'}", path=path, line=line,
                         field="pgn")
    board = game.board()
    ucis: list[str] = []
    for move in game.mainline_moves():
        ucis.append(move.uci())
        board.push(move)
    return board, tuple(ucis)


def read_pgn_jsonl(source: PoolSource, digest: str) -> Iterator[Position]:
    """Yield each line's final game position; lines extending one another share a game."""
    path = str(source.path)
    rows: list[tuple[int, chess.Board, tuple[str, ...]]] = []
    with source.path.open(encoding="utf-8") as fh:
        for line_no, text in enumerate(fh, start=1):
            if source.limit is not None and line_no > source.limit:
                break
            rows.append((line_no, *_pgn_row(text, path, line_no)))
    games = _game_groups([moves for _, _, moves in rows])
    for (line_no, board, _), game in zip(rows, games, strict=True):
        lineage = Lineage(source.name, digest, f"line {line_no}", game, "game_final")
        yield describe(board, lineage)


def read_pgn_plies(source: PoolSource, digest: str) -> Iterator[Position]:
    """Yield the positions along each line's game kept by the source's :class:`PlySampling`.

    Lines extending one another share a game id (as in :func:`read_pgn_jsonl`); their
    shared plies are the same positions and fall to the family dedup downstream.
    """
    path = str(source.path)
    rows: list[tuple[int, tuple[str, ...]]] = []
    with source.path.open(encoding="utf-8") as fh:
        for line_no, text in enumerate(fh, start=1):
            if source.limit is not None and line_no > source.limit:
                break
            rows.append((line_no, _pgn_row(text, path, line_no)[1]))
    games = _game_groups([moves for _, moves in rows])
    rule = source.sampling
    for (line_no, moves), game in zip(rows, games, strict=True):
        yield from _plies_along(moves, rule, Lineage(source.name, digest, f"line {line_no}",
                                                     game, "game_ply"))


def _plies_along(moves: Sequence[str], rule: PlySampling, base: Lineage) -> Iterator[Position]:
    board = chess.Board()
    first: int | None = None
    for ply in range(len(moves) + 1):
        if board.fullmove_number >= rule.from_move:
            first = ply if first is None else first
            if (ply - first) % rule.stride == 0:
                lineage = Lineage(base.source, base.source_digest, f"{base.locator} ply {ply}",
                                  base.game, base.kind)
                yield describe(board, lineage)
        if ply < len(moves):
            board.push(chess.Move.from_uci(moves[ply]))


def _pgn_row(text: str, path: str, line_no: int) -> tuple[chess.Board, tuple[str, ...]]:
    record = pgn_record(text, path=path, line=line_no)
    board, moves = _replay(record["pgn"], path=path, line=line_no)
    fen = record.get("fen")
    if isinstance(fen, str) and board_from_fen(fen, path=path, line=line_no).epd() != board.epd():
        raise InputError(f"PGN replay ends at {board.fen()!r}, not the stored fen {fen!r}",
                         path=path, line=line_no, field="fen")
    return board, moves


def _game_groups(move_lists: Sequence[tuple[str, ...]]) -> list[str]:
    """Return a game id per line: lines whose moves prefix one another form one game."""
    parent = list(range(len(move_lists)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    order = sorted(range(len(move_lists)), key=lambda i: move_lists[i])
    # In sorted order every extension of a line follows it contiguously.
    for at, a in enumerate(order):
        for b in order[at + 1:]:
            if move_lists[b][: len(move_lists[a])] != move_lists[a]:
                break
            parent[find(a)] = find(b)
    roots = [find(i) for i in range(len(move_lists))]
    return ["pgn:" + hashlib.sha256(" ".join(move_lists[r]).encode()).hexdigest()[:16]
            for r in roots]


def split_of(game: str, config: PoolConfig) -> str:
    """Return the split of a source game: seeded sha256 of the game id into the weights."""
    total = sum(weight for _, weight in config.splits)
    h = int.from_bytes(hashlib.sha256(f"{config.seed}:{game}".encode()).digest()[:8], "big")
    ticket = h % total
    for name, weight in config.splits:
        if ticket < weight:
            return name
        ticket -= weight
    raise AssertionError("unreachable: weights exhausted")


def _read_source(source: PoolSource, config: PoolConfig) -> tuple[str, list[Position]]:
    if not source.path.is_file():
        raise InputError("pool source file does not exist", path=str(source.path))
    digest = file_digest(str(source.path))
    if source.kind == "lichess_puzzles":
        return digest, list(read_puzzles(source, digest, pre_setup=config.include_pre_setup))
    if source.kind == "pgn_plies":
        return digest, list(read_pgn_plies(source, digest))
    return digest, list(read_pgn_jsonl(source, digest))


def select_positions(
    candidates: Sequence[Position], config: PoolConfig
) -> tuple[list[Position], Counter[str]]:
    """Apply the width floor and family dedup, assign splits; return kept and drop counts."""
    kept: list[Position] = []
    dropped: Counter[str] = Counter()
    families: set[str] = set()
    for pos in candidates:
        if pos.width < config.min_width:
            dropped["fewer_than_min_width"] += 1
        elif pos.family in families:
            dropped["duplicate_family"] += 1
        else:
            families.add(pos.family)
            kept.append(describe(board_from_fen(pos.fen), pos.lineage,
                                 split=split_of(pos.lineage.game, config)))
    return kept, dropped


def cell_counts(positions: Sequence[Position], config: PoolConfig) -> dict[str, int]:
    """Return the count of every split × phase × colour cell (zeros included)."""
    counts = Counter(cell_name(p.split, p.phase, p.colour) for p in positions)
    return {cell_name(s, ph, c): counts[cell_name(s, ph, c)]
            for s, _ in config.splits for ph in PHASES for c in COLOURS}


def reserve_shortfalls(cells: Mapping[str, int], config: PoolConfig) -> list[Reason]:
    """Return a ``reserve_shortfall`` reason for every cell below its quota."""
    return [
        Reason("reserve_shortfall",
               f"cell {cell} holds {have} positions, quota {config.quota(cell)}",
               subject=cell, data={"have": have, "quota": config.quota(cell)})
        for cell, have in cells.items() if have < config.quota(cell)
    ]


def build_pool(sources: Sequence[PoolSource], config: PoolConfig) -> dict[str, Any]:
    """Return the frozen pool document, or refuse when a reserve quota is short."""
    candidates: list[Position] = []
    source_records: list[dict[str, Any]] = []
    for source in sources:
        digest, positions = _read_source(source, config)
        candidates.extend(positions)
        record: dict[str, Any] = {"name": source.name, "kind": source.kind,
                                  "path": portable_path(source.path), "digest": digest,
                                  "limit": source.limit, "read": len(positions)}
        if source.kind == "pgn_plies":  # recorded only for the opt-in kind: old digests hold
            record["sampling"] = source.sampling.to_json()
        source_records.append(record)
    kept, dropped = select_positions(candidates, config)
    cells = cell_counts(kept, config)
    shortfalls = reserve_shortfalls(cells, config)
    if shortfalls:
        raise Refusal(shortfalls, gate="pool freeze")
    return {
        "schema": POOL_SCHEMA, "config": config.to_json(), "sources": source_records,
        "positions": [p.to_json() for p in kept], "cells": cells,
        "dropped": dict(sorted(dropped.items())), "candidates": len(candidates),
    }


def freeze_pool(workspace: Workspace, sources: Sequence[PoolSource],
                config: PoolConfig, *, force: bool = False) -> dict[str, Any]:
    """Build the pool and write it to the workspace; return a summary with its digest.

    An existing pool is refused (``exists``) unless ``force``: replacing it silently
    would leave every qualification and stage built on it pointing at other bytes.
    """
    if not force:
        refuse_existing(workspace.pool, what="pool", detail="pass --force to replace it")
    document = build_pool(sources, config)
    data = write_document(workspace.pool, document)
    workspace.store.put_bytes(data)
    return {"pool": str(workspace.pool), "digest": bytes_digest(data),
            "positions": len(document["positions"]), "cells": document["cells"],
            "dropped": document["dropped"], "candidates": document["candidates"]}


@dataclass(frozen=True)
class FrozenPool:
    """A frozen pool read back from disk."""

    digest: str
    """``sha256:`` of the pool file's bytes."""
    document: dict[str, Any]
    """The parsed pool document."""
    positions: tuple[Position, ...]
    """Its positions, in pool order, with identities re-derived from their FENs."""


def load_pool(path: Path) -> FrozenPool:
    """Read a frozen pool, checking its schema and every position's derived identity."""
    if not path.is_file():
        raise InputError("pool file does not exist", path=str(path))
    pool_digest, document = read_document(path, POOL_SCHEMA)
    try:
        positions = tuple(Position.from_json(p) for p in document["positions"])
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, InputError) and str(path) in str(exc):
            raise
        raise InputError(f"malformed pool position: {exc}", path=str(path),
                         field="positions") from exc
    return FrozenPool(pool_digest, document, positions)


def changed_sources(sources: Sequence[Mapping[str, Any]]
                    ) -> Iterator[tuple[Mapping[str, Any], Path, str | None]]:
    """Yield ``(source, path, digest now)`` for every frozen source whose bytes changed.

    Each source records its ``path`` and frozen ``digest``; a file that is gone hashes
    as None.
    """
    for src in sources:
        path = resolve_portable(str(src["path"]))
        now = file_digest(str(path)) if path.is_file() else None
        if now != src["digest"]:
            yield src, path, now


def stale_sources(document: Mapping[str, Any]) -> list[Reason]:
    """Return a ``pool_source_stale`` reason for every pool source whose bytes changed."""
    return [Reason("pool_source_stale",
                   f"pool source {path} now hashes {now}, frozen as {src['digest']}",
                   subject=src["name"], data={"frozen": src["digest"], "now": now})
            for src, path, now in changed_sources(document["sources"])]


def bundled_data_dir() -> Path:
    """Return the bundled data directory (see :func:`rungbench.evidence.paths.shared_data_dir`)."""
    return shared_data_dir()
