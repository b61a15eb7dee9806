"""Frozen game cohorts (seed 002, "Why a live cohort makes a frozen pool provisional").

A cohort is a frozen set of games together with every board state the games reached,
as normalized identities and colour-mirror families. Its sources may be:

* PGN files (``.pgn``, several games each);
* JSON game records with a ``pgn`` field (llm_chess per-game ``.json``);
* JSON Lines (``.jsonl``) of records with a ``pgn`` field, or of rungbench's own game
  records (schema ``rungbench.chess.game/1``: ``start_fen`` and UCI ``moves``), as in a
  native corpus's ``games.jsonl``;
* console transcripts (``.txt``): llm_chess's ``output.txt`` and a native corpus's
  ``transcript.txt`` (``OPPONENT MOVE``, ``GAME OVER <id>: ...``); every ``MADE MOVE n``
  line must agree with the moves read so far;
* a native corpus's ``manifest.json`` (schema ``rungbench.chess.corpus/1``) or its
  folder: its ``games.jsonl`` is read after its bytes match the manifest's digest.

Every file read is recorded with the digest of the bytes parsed. A source without a
game, or a cohort without one, refuses (``cohort_empty``): an empty cohort would clear
any pool. A cohort is marked ``terminal`` only when the run that produced it has ended;
a live cohort can still add positions, so a pool cleared against it proves nothing.
A terminal cohort, once frozen, is never replaced.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chess.pgn

import chess
from rungbench.chess.position import mirror_family, normalized_key, pgn_record
from rungbench.chess.workspace import Workspace, read_document, refuse_existing, write_document
from rungbench.errors import InputError, IntegrityError, Reason, Refusal, RungbenchError
from rungbench.evidence.canonical import bytes_digest, loads_canonical
from rungbench.evidence.paths import portable_path

COHORT_SCHEMA = "rungbench.chess.cohort/1"
"""Schema name and version of a frozen cohort document."""

_MAKE_MOVE = re.compile(r"make_move\s+([a-h][1-8][a-h][1-8][qrbn]?)")
_MOVE_MADE = "Move made, switching player"
_GAME_OVER = "GAME OVER"
_OPPONENT_MOVE = re.compile(r"OPPONENT MOVE ([a-h][1-8][a-h][1-8][qrbn]?)")
_MADE_MOVE = re.compile(r"MADE MOVE (\d+)")

NATIVE_GAME_SCHEMA = "rungbench.chess.game/1"
"""Schema of a game record in a native corpus's ``games.jsonl``."""
NATIVE_CORPUS_SCHEMA = "rungbench.chess.corpus/1"
"""Schema of a native corpus's ``manifest.json``."""


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
    """Yield the games of a console transcript (llm_chess or a native corpus).

    A move is the last ``make_move <uci>`` before the proxy's ``Move made, switching
    player`` reply, or an ``OPPONENT MOVE <uci>`` line; a game ends at a ``GAME OVER``
    line. Each ``MADE MOVE n`` must equal the number of moves read in the game so far
    (an InputError naming the line otherwise). A trailing game without ``GAME OVER``
    (an aborted run) is yielded with ``complete=False``: its states were still reached.
    """
    moves: list[str] = []
    pending: str | None = None
    number, ahead = 1, False
    for line_no, line in enumerate(text.splitlines(), start=1):
        found = _MAKE_MOVE.findall(line)
        if found:
            pending = found[-1]
        stripped = line.strip()
        move = _transcript_move(stripped, pending, source=source, line=line_no, game=number)
        made = _MADE_MOVE.fullmatch(stripped)
        if move is not None:
            if ahead:
                raise InputError(f"a move follows a MADE MOVE count ahead of the {len(moves)} "
                                 f"moves of game {number}", path=source, line=line_no)
            moves.append(move)
            pending = None
        elif made:
            ahead = _check_count(int(made.group(1)), len(moves), ahead, source=source,
                                 line=line_no, game=number)
        elif stripped == _GAME_OVER or stripped.startswith(_GAME_OVER + " "):
            yield Game(source, f"transcript game {number}", tuple(moves), True)
            moves, pending, number, ahead = [], None, number + 1, False
    if moves:
        yield Game(source, f"transcript game {number}", tuple(moves), False)


def _transcript_move(stripped: str, pending: str | None, *, source: str, line: int,
                     game: int) -> str | None:
    """The move a transcript line completes, if any."""
    if stripped == _MOVE_MADE:
        if pending is None:
            raise InputError(f"'{_MOVE_MADE}' without a make_move in game {game}",
                             path=source, line=line)
        return pending
    opponent = _OPPONENT_MOVE.fullmatch(stripped)
    return opponent.group(1) if opponent else None


def _check_count(count: int, moves: int, ahead: bool, *, source: str, line: int,
                 game: int) -> bool:
    """Check a ``MADE MOVE count`` line against the moves read; return whether it is ahead.

    A count equals the moves read, or (llm_chess counts a final, failed dialogue) exceeds
    it by one, after which the game must end without another move.
    """
    if count == moves or (count == moves + 1 and not ahead):
        return count == moves + 1
    raise InputError(f"MADE MOVE {count} in game {game}, but {moves} moves were read",
                     path=source, line=line)


@dataclass(frozen=True)
class SourceRead:
    """The games of one cohort source and every file read to get them."""

    games: list[Game]
    """The games, in file order."""
    files: list[tuple[Path, str]]
    """Each file read with the digest of the bytes parsed."""


def _text(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})",
                         path=str(path)) from exc


def _native_game(record: dict[str, Any], *, source: str, line: int) -> Game:
    moves, start = record.get("moves"), record.get("start_fen")
    if not isinstance(moves, list) or not all(isinstance(m, str) for m in moves):
        raise InputError("game record has no list of UCI moves", path=source, line=line,
                         field="moves")
    if not isinstance(start, str):
        raise InputError("game record has no start_fen", path=source, line=line,
                         field="start_fen")
    try:
        chess.Board(start)
    except ValueError as exc:
        raise InputError(f"bad start_fen {start!r}", path=source, line=line,
                         field="start_fen") from exc
    return Game(source, f"line {line} game {record.get('game', '?')}", tuple(moves), True,
                start)


def _jsonl_games(text: str, *, source: str) -> list[Game]:
    games: list[Game] = []
    for no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            parsed = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"not JSON: {exc}", path=source, line=no) from exc
        if isinstance(parsed, dict) and parsed.get("schema") == NATIVE_GAME_SCHEMA:
            games.append(_native_game(parsed, source=source, line=no))
        else:
            movetext = pgn_record(line, path=source, line=no)["pgn"]
            games.extend(games_from_pgn_text(movetext, source=source, where=f"line {no}"))
    return games


def _manifest_games(path: Path, manifest: dict[str, Any]) -> SourceRead:
    """Read a native corpus's games.jsonl after checking it against its manifest entry."""
    files = manifest.get("files")
    entry = next((e for e in files if isinstance(e, dict) and e.get("path") == "games.jsonl"),
                 None) if isinstance(files, list) else None
    if entry is None:
        raise InputError("corpus manifest lists no games.jsonl", path=str(path), field="files")
    games_path = path.parent / "games.jsonl"
    if not games_path.is_file():
        raise InputError("listed in the corpus manifest but missing", path=str(games_path))
    data = games_path.read_bytes()
    if bytes_digest(data) != entry.get("digest"):
        raise IntegrityError(f"{games_path}: sha256 {bytes_digest(data)} differs from the "
                             f"corpus manifest's {entry.get('digest')}")
    games = _jsonl_games(_text(games_path, data), source=str(games_path))
    return SourceRead(games, [(games_path, bytes_digest(data))])


def read_source(path: Path) -> SourceRead:
    """Return the games of one cohort source (file or native corpus folder), by its kind."""
    if path.is_dir() and (path / "manifest.json").is_file():
        path = path / "manifest.json"
    if not path.is_file():
        raise InputError("cohort source file does not exist", path=str(path))
    data = path.read_bytes()
    text, source = _text(path, data), str(path)
    read = [(path, bytes_digest(data))]
    if path.suffix == ".pgn":
        return SourceRead(list(games_from_pgn_text(text, source=source, where=path.name)), read)
    if path.suffix == ".json":
        document = loads_canonical(data, path=source)
        if isinstance(document, dict) and document.get("schema") == NATIVE_CORPUS_SCHEMA:
            inner = _manifest_games(path, document)
            return SourceRead(inner.games, read + inner.files)
        movetext = pgn_record(text, path=source, line=None)["pgn"]
        return SourceRead(list(games_from_pgn_text(movetext, source=source, where=path.name)),
                          read)
    if path.suffix == ".jsonl":
        return SourceRead(_jsonl_games(text, source=source), read)
    if path.suffix == ".txt":
        return SourceRead(list(games_from_transcript(text, source=source)), read)
    raise InputError(f"unknown cohort file type {path.suffix!r} (.pgn .json .jsonl .txt, or "
                     "a native corpus folder)", path=source)


def read_games(path: Path) -> list[Game]:
    """Return the games of one cohort source (see :func:`read_source`)."""
    return read_source(path).games


def build_cohort(name: str, paths: Sequence[Path], *, terminal: bool) -> dict[str, Any]:
    """Return the cohort document of the games in ``paths``; refuse when any holds none."""
    if not paths:
        raise InputError(f"cohort {name!r} has no source files", field="paths")
    sources: list[dict[str, Any]] = []
    games: list[dict[str, Any]] = []
    keys: set[str] = set()
    families: set[str] = set()
    empty: list[Reason] = []
    for path in sorted(paths, key=str):
        found = read_source(path)
        if not found.games:
            empty.append(Reason("cohort_empty", f"cohort source {path} holds no game",
                                subject=str(path)))
        for file, digest in found.files:
            count = len(found.games) if file == found.files[-1][0] else 0
            sources.append({"path": portable_path(file), "digest": digest, "games": count})
        for game in found.games:
            for board in boards_of(game):
                keys.add(normalized_key(board))
                families.add(mirror_family(board))
            games.append({"source": portable_path(Path(game.source)), "locator": game.locator,
                          "plies": len(game.moves), "complete": game.complete})
    if empty:
        raise Refusal(empty, gate="chess cohort freeze")
    return {"schema": COHORT_SCHEMA, "name": name, "terminal": terminal, "sources": sources,
            "games": games, "positions": sorted(keys), "families": sorted(families)}


def _refuse_replacing(path: Path, name: str) -> None:
    """Refuse (``exists``) to replace a terminal cohort, or one that cannot be read."""
    if not (path.exists() or path.is_symlink()):
        return
    try:
        terminal = load_cohort(path)[1].get("terminal") is not False
        why = "a terminal cohort is never replaced" if terminal else ""
    except (RungbenchError, OSError) as exc:
        why = f"it cannot be read ({exc}), and a cohort is never replaced unread"
    if why:
        refuse_existing(path, what="cohort", detail=f"{why} (not even with --force); freeze "
                        f"the new games under another name than {name!r}")


def freeze_cohort(workspace: Workspace, name: str, paths: Sequence[Path], *,
                  terminal: bool) -> dict[str, Any]:
    """Freeze a cohort into the workspace; return a summary with its digest.

    A live cohort may be re-frozen (it is provisional by definition); a terminal one is
    never replaced, nor is an unreadable one.
    """
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise InputError(f"cohort name {name!r} must be [A-Za-z0-9_.-]+", field="name")
    _refuse_replacing(workspace.cohort(name), name)
    document = build_cohort(name, paths, terminal=terminal)
    data = write_document(workspace.cohort(name), document)
    workspace.store.put_bytes(data)
    return {"cohort": name, "path": str(workspace.cohort(name)), "digest": bytes_digest(data),
            "terminal": terminal, "games": len(document["games"]),
            "positions": len(document["positions"]), "sources": len(document["sources"])}


def load_cohort(path: Path) -> tuple[str, dict[str, Any]]:
    """Return (digest, document) of a frozen cohort file, its self digest verified."""
    return read_document(path, COHORT_SCHEMA)
