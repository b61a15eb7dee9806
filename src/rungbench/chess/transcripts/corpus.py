"""Versioned transcript corpus: one record per response attempt, frozen by digests.

On disk a native corpus is a folder::

    manifest.json     schema, per-file sha256 digests, byte sizes and record counts,
                      the dispatcher versions the records name
    transcript.txt    the conversation as an AutoGen-style console capture; every
                      prompt and response is a byte range of this file
    attempts.jsonl    one canonical-JSON attempt record per line (:class:`Attempt`)
    games.jsonl       one canonical-JSON game record per line (:class:`GameRecord`)

The same :class:`Attempt` shape is produced in memory by the LLM Chess reader,
with byte ranges into that run's ``output.txt``; the census treats both alike.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from rungbench.chess.transcripts.dispatch import VERSIONS_DEFAULT_ACTIONS, DispatcherVersion
from rungbench.errors import InputError, Reason, Refusal
from rungbench.evidence.canonical import (
    bytes_digest,
    canonical_bytes,
    digest,
    loads_canonical,
)
from rungbench.evidence.store import write_atomic

ATTEMPT_SCHEMA = "rungbench.chess.attempt/1"
GAME_SCHEMA = "rungbench.chess.game/1"
MANIFEST_SCHEMA = "rungbench.chess.corpus/1"
DASHES = "-" * 80

Role = Literal["agent", "opponent"]
T = TypeVar("T")


def frozen_record(cls: type[T], **fields: Any) -> T:
    """The instance ``cls(**fields)`` of a frozen dataclass, built without its generated
    ``__init__`` (which assigns one field at a time through ``object.__setattr__``, four
    times the cost for a twenty-field :class:`Attempt`; a census builds thousands of records).

    ``fields`` must name every field of ``cls`` (no default is filled in, nothing is
    checked); the instance is equal to the one ``cls(**fields)`` builds and stays frozen.
    For the replay's hot paths only; a test holds every record they build equal to its
    ``__init__``-built twin.
    """
    record = object.__new__(cls)
    record.__dict__.update(fields)
    return record

_TOOL_CALL = re.compile(
    r"\n\*\*\*\*\* Suggested tool call \((?P<id>[^)\n]*)\): (?P<name>[^\n]*) \*\*\*\*\*\n"
    r"Arguments: \n(?P<args>.*?)\n\*+(?=\n\*\*\*\*\* Suggested tool call|\Z)",
    re.DOTALL,
)


@dataclass(frozen=True)
class ToolCallDisplay:
    """A tool call as an AutoGen console shows it after the reply's content."""

    call_id: str
    """Provider call id."""
    name: str
    """Function name the model suggested."""
    arguments: str
    """Raw argument text."""


def split_tool_calls(body: str) -> tuple[str, tuple[ToolCallDisplay, ...]]:
    """Split a displayed reply into its parser-visible content and its tool-call displays."""
    first = body.find("\n***** Suggested tool call (")
    if first < 0:
        return body, ()
    calls = tuple(
        ToolCallDisplay(m.group("id"), m.group("name"), m.group("args"))
        for m in _TOOL_CALL.finditer(body, first)
    )
    if not calls:
        return body, ()
    return body[:first], calls


def format_tool_calls(calls: Sequence[ToolCallDisplay]) -> str:
    """Return the console display of ``calls`` (inverse of :func:`split_tool_calls`)."""
    out = []
    for call in calls:
        head = f"***** Suggested tool call ({call.call_id}): {call.name} *****"
        out.append(f"\n{head}\nArguments: \n{call.arguments}\n{'*' * len(head)}")
    return "".join(out)


@dataclass(frozen=True)
class Attempt:
    """One response attempt: the prompt a player saw, its reply, and the dispatcher's verdict."""

    run_group: str
    """Run the game belongs to (an LLM Chess log folder, a harness run)."""
    variant: str
    """Interface variant of the run (board mode, reflection offered, harness preset)."""
    game: str
    """Game identifier, unique within the corpus."""
    ply: int
    """Half-moves played before this attempt (0 = start position)."""
    colour: Literal["white", "black"]
    """Side to move."""
    player: str
    """Player name as recorded."""
    role: Role
    """``agent`` (under study) or ``opponent`` (random mover, engine)."""
    attempt: int
    """1-based index of this reply within the move dialogue."""
    fen_before: str
    """Position before the reply."""
    prompt: str
    """The message the player answered (turn prompt or previous dispatcher reply)."""
    response: str
    """The reply as displayed: content, then any tool-call displays."""
    verdict: str | None
    """A ``VerdictKind`` value (``chess.transcripts.dispatch``), or None when never dispatched."""
    move: str | None
    """UCI recovered from a make_move command, accepted or rejected."""
    reply: str | None
    """The dispatcher reply as recorded in the source, or None when there is none."""
    dispatcher: str
    """Dispatcher version name."""
    source: str
    """Path of the source file holding prompt and response bytes (relative to the corpus)."""
    line: int
    """1-based line of the source where the response starts."""
    response_range: tuple[int, int]
    """Byte range [start, end) of ``response`` in ``source``."""
    prompt_range: tuple[int, int]
    """Byte range [start, end) of ``prompt`` in ``source``."""
    tool_calls: tuple[str, ...] = ()
    """Names of tool calls displayed after the content (never seen by the dispatcher)."""

    @property
    def content(self) -> str:
        """The parser-visible content of the reply (tool-call displays removed)."""
        return split_tool_calls(self.response)[0]

    def to_json(self) -> dict[str, Any]:
        """Return the record as a JSON-ready mapping (schema ``rungbench.chess.attempt/1``)."""
        return {
            "schema": ATTEMPT_SCHEMA, "run_group": self.run_group, "variant": self.variant,
            "game": self.game, "ply": self.ply, "colour": self.colour, "player": self.player,
            "role": self.role, "attempt": self.attempt, "fen_before": self.fen_before,
            "prompt": self.prompt, "response": self.response, "verdict": self.verdict,
            "move": self.move, "reply": self.reply, "dispatcher": self.dispatcher,
            "source": self.source, "line": self.line,
            "response_range": list(self.response_range), "prompt_range": list(self.prompt_range),
            "tool_calls": list(self.tool_calls),
        }

    @classmethod
    def from_json(cls, data: Any, *, path: str, line: int) -> Attempt:
        """Parse one record, raising :class:`InputError` naming ``path`` and ``line``."""
        return _parse(data, ATTEMPT_SCHEMA, "attempt", path, line, lambda: cls(
            run_group=str(data["run_group"]), variant=str(data["variant"]),
            game=str(data["game"]), ply=_int(data["ply"]), colour=_colour(data["colour"]),
            player=str(data["player"]), role=_role(data["role"]),
            attempt=_int(data["attempt"]), fen_before=str(data["fen_before"]),
            prompt=str(data["prompt"]), response=str(data["response"]),
            verdict=_opt_str(data["verdict"]), move=_opt_str(data["move"]),
            reply=_opt_str(data["reply"]), dispatcher=str(data["dispatcher"]),
            source=str(data["source"]), line=_int(data["line"]),
            response_range=_range(data["response_range"]),
            prompt_range=_range(data["prompt_range"]),
            tool_calls=tuple(str(t) for t in data["tool_calls"]),
        ))


@dataclass(frozen=True)
class GameRecord:
    """One game: start position, the moves actually played, and how it ended."""

    game: str
    """Game identifier."""
    run_group: str
    """Run the game belongs to."""
    variant: str
    """Interface variant."""
    agent_colour: Literal["white", "black"]
    """Colour played by the agent under study."""
    start_fen: str
    """Start position."""
    moves: tuple[str, ...]
    """Every move played, both sides, in UCI."""
    termination: str
    """Why the game ended (checkmate, too many wrong actions, max plies, ...)."""
    attempts: int
    """Number of attempt records of this game."""

    def to_json(self) -> dict[str, Any]:
        """Return the record as a JSON-ready mapping (schema ``rungbench.chess.game/1``)."""
        return {
            "schema": GAME_SCHEMA, "game": self.game, "run_group": self.run_group,
            "variant": self.variant, "agent_colour": self.agent_colour,
            "start_fen": self.start_fen, "moves": list(self.moves),
            "termination": self.termination, "attempts": self.attempts,
        }

    @classmethod
    def from_json(cls, data: Any, *, path: str, line: int) -> GameRecord:
        """Parse one record, raising :class:`InputError` naming ``path`` and ``line``."""
        return _parse(data, GAME_SCHEMA, "game", path, line, lambda: cls(
            game=str(data["game"]), run_group=str(data["run_group"]),
            variant=str(data["variant"]), agent_colour=_colour(data["agent_colour"]),
            start_fen=str(data["start_fen"]), moves=tuple(str(m) for m in data["moves"]),
            termination=str(data["termination"]), attempts=_int(data["attempts"]),
        ))


@dataclass(frozen=True)
class Corpus:
    """Attempts and games with the source bytes their ranges point into."""

    attempts: tuple[Attempt, ...]
    """Every response attempt, in transcript order."""
    games: tuple[GameRecord, ...]
    """Every game."""
    sources: dict[str, bytes]
    """Source file bytes by the relative path the records name."""
    dispatchers: dict[str, DispatcherVersion]
    """Dispatcher versions by the name the records use."""
    records_path: str = "attempts.jsonl"
    """Where attempt records live, for naming file and line in refusals."""
    origin: dict[str, Any] = field(default_factory=dict)
    """What was read: format, folder, per-file digests."""


def _parse(data: Any, schema: str, kind: str, path: str, line: int, build: Callable[[], T]) -> T:
    """Check a record's schema and build it; any defect names ``path`` and ``line``."""
    try:
        if data["schema"] != schema:
            raise InputError(f"schema {data['schema']!r} is not {schema}",
                             path=path, line=line, field="schema")
        return build()
    except InputError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"malformed {kind} record: {exc!r}", path=path, line=line) from exc


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _colour(value: Any) -> Literal["white", "black"]:
    if value == "white":
        return "white"
    if value == "black":
        return "black"
    raise ValueError(f"colour must be 'white' or 'black', got {value!r}")


def _role(value: Any) -> Role:
    if value == "agent":
        return "agent"
    if value == "opponent":
        return "opponent"
    raise ValueError(f"role must be 'agent' or 'opponent', got {value!r}")


def _range(value: Any) -> tuple[int, int]:
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError(f"a byte range is [start, end], got {value!r}")
    return _int(value[0]), _int(value[1])


def dispatcher_from_json(data: Any, *, path: str) -> DispatcherVersion:
    """Rebuild a dispatcher version from its manifest entry."""
    try:
        return DispatcherVersion(
            name=str(data["name"]), description="from manifest",
            make_move_pattern=str(data["make_move_pattern"]),
            remove_text=_opt_str(data["remove_text"]),
            failure_scope="game" if data["failure_scope"] == "game" else "move",
            max_failed_attempts=_int(data["max_failed_attempts"]),
            max_turns=_int(data["max_turns"]), action_counters=bool(data["action_counters"]),
            wrong_counters_per_move=bool(data["wrong_counters_per_move"]),
            enable_reflection=bool(data["enable_reflection"]),
            board_mode="FEN_ONLY" if data["board_mode"] == "FEN_ONLY" else "UNICODE_ONLY",
            actions=tuple(str(a) for a in data.get("actions", VERSIONS_DEFAULT_ACTIONS)),
            candidates_in_prompt=bool(data.get("candidates_in_prompt", False)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"malformed dispatcher entry: {exc!r}", path=path,
                         field="dispatchers") from exc


def _jsonl(records: Iterable[dict[str, Any]]) -> bytes:
    return b"".join(canonical_bytes(r) + b"\n" for r in records)


def write_corpus(
    folder: Path, *, transcript: bytes, attempts: Sequence[Attempt], games: Sequence[GameRecord],
    dispatchers: Sequence[DispatcherVersion], description: str,
) -> dict[str, Any]:
    """Write a native corpus folder and return its manifest (files are written atomically)."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "transcript.txt": transcript,
        "attempts.jsonl": _jsonl(a.to_json() for a in attempts),
        "games.jsonl": _jsonl(g.to_json() for g in games),
    }
    manifest = {
        "schema": MANIFEST_SCHEMA, "description": description,
        "files": [{"path": name, "digest": bytes_digest(data), "bytes": len(data),
                   "lines": data.count(b"\n"), "chunk_bytes": _chunk_target(name),
                   "chunks": [[line, d] for line, d in line_chunks(data, _chunk_target(name))]}
                  for name, data in files.items()],
        "dispatchers": {d.name: d.to_json() for d in dispatchers},
    }
    manifest["manifest_digest"] = digest(manifest)
    for name, data in [*files.items(), ("manifest.json", canonical_bytes(manifest) + b"\n")]:
        write_atomic(folder / name, data, overwrite=True)
    return manifest


def is_native_corpus(folder: Path) -> bool:
    """Return whether ``folder`` holds a native corpus manifest."""
    return (folder / "manifest.json").is_file()


def load_corpus(folder: Path) -> Corpus:
    """Read and freeze-check a native corpus; refuse naming file and line on any defect.

    Every file's digest, size and line count must match the manifest before a record
    is parsed, so nothing is read from a corpus whose bytes changed after freezing.
    """
    manifest_path = folder / "manifest.json"
    manifest = loads_canonical(manifest_path.read_bytes(), path=str(manifest_path))
    if not isinstance(manifest, dict) or manifest.get("schema") != MANIFEST_SCHEMA:
        raise InputError(f"not a {MANIFEST_SCHEMA} manifest", path=str(manifest_path),
                         field="schema")
    _check_manifest(manifest, str(manifest_path))
    _check_manifest_digest(manifest, str(manifest_path))
    blobs: dict[str, bytes] = {}
    reasons: list[Reason] = []
    for entry in manifest["files"]:
        name = str(entry["path"])
        reasons.extend(_check_file(folder / name, entry, blobs))
    if reasons:
        raise Refusal(reasons, gate="chess corpus freeze")
    dispatchers = {
        name: dispatcher_from_json(d, path=str(manifest_path))
        for name, d in manifest["dispatchers"].items()
    }
    attempts = tuple(_records(blobs["attempts.jsonl"], str(folder / "attempts.jsonl"),
                              Attempt.from_json))
    games = tuple(_records(blobs["games.jsonl"], str(folder / "games.jsonl"),
                           GameRecord.from_json))
    return Corpus(
        attempts=attempts, games=games, sources={"transcript.txt": blobs["transcript.txt"]},
        dispatchers=dispatchers, records_path=str(folder / "attempts.jsonl"),
        origin={"format": MANIFEST_SCHEMA, "folder": folder.name,
                "files": {str(e["path"]): str(e["digest"]) for e in manifest["files"]}},
    )


_CORPUS_FILES = ("transcript.txt", "attempts.jsonl", "games.jsonl")
_ENTRY_FIELDS = {"path": str, "digest": str, "bytes": int, "chunk_bytes": int, "chunks": list}


def _check_manifest_digest(manifest: dict[str, Any], path: str) -> None:
    """Refuse a manifest whose content no longer matches its own ``manifest_digest``.

    The digest covers every other field (description, file entries, dispatchers), so a
    changed byte anywhere in the manifest is named here rather than read as intact.
    """
    body = {k: v for k, v in manifest.items() if k != "manifest_digest"}
    recorded = manifest.get("manifest_digest")
    if recorded != digest(body):
        raise Refusal([Reason(
            "digest_mismatch",
            f"{path}: manifest content digest {digest(body)} differs from its manifest_digest "
            f"{recorded!r}", subject=path,
            data={"path": path, "expected": recorded, "observed": digest(body)})],
            gate="chess corpus freeze")


def _check_manifest(manifest: dict[str, Any], path: str) -> None:
    """Refuse a manifest whose shape is wrong, naming the field (never a KeyError later)."""
    files = manifest.get("files")
    if not isinstance(files, list):
        raise InputError("manifest has no list of files", path=path, field="files")
    for i, entry in enumerate(files):
        for key, kind in _ENTRY_FIELDS.items():
            if not isinstance(entry, dict) or not isinstance(entry.get(key), kind):
                raise InputError(f"file entry {i} lacks a {kind.__name__} {key!r}", path=path,
                                 field=f"files[{i}].{key}")
    listed = [str(e["path"]) for e in files]
    missing = [name for name in _CORPUS_FILES if name not in listed]
    if missing or len(set(listed)) != len(listed):
        raise InputError(f"files must list each of {list(_CORPUS_FILES)} once; got {listed}",
                         path=path, field="files")
    if not isinstance(manifest.get("dispatchers"), dict):
        raise InputError("manifest has no mapping of dispatchers", path=path,
                         field="dispatchers")


def _check_file(path: Path, entry: Any, blobs: dict[str, bytes]) -> list[Reason]:
    name = str(entry["path"])
    if not path.is_file():
        return [Reason("absent", f"{path}: listed in the manifest but missing", subject=str(path))]
    data = path.read_bytes()
    blobs[name] = data
    reasons: list[Reason] = []
    if len(data) < int(entry["bytes"]) or (data and not data.endswith(b"\n")):
        line = data.count(b"\n") + 1
        reasons.append(Reason(
            "truncated",
            f"{path}:{line}: file ends after {len(data)} of {entry['bytes']} bytes",
            subject=f"{path}:{line}", data={"path": str(path), "line": line}))
    if bytes_digest(data) != entry["digest"]:
        line = _first_differing_line(data, entry)
        reasons.append(Reason(
            "digest_mismatch",
            f"{path}:{line}: sha256 {bytes_digest(data)} differs from manifest {entry['digest']}",
            subject=f"{path}:{line}",
            data={"path": str(path), "line": line, "expected": entry["digest"],
                  "observed": bytes_digest(data)}))
    return reasons


def _chunk_target(name: str) -> int:
    # One digest per record line for JSONL, one per ~4 KiB of whole lines for the transcript.
    return 1 if name.endswith(".jsonl") else 4096


def line_chunks(data: bytes, target: int) -> list[tuple[int, str]]:
    """Split ``data`` into runs of whole lines of at least ``target`` bytes.

    Returns (1-based first line, 16-hex sha256 prefix) per run, so a changed byte
    can be located to a line (JSONL: exactly; transcript: the run's first line).
    """
    out: list[tuple[int, str]] = []
    start, line, first_line = 0, 1, 1
    pos = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        end = len(data) if nl < 0 else nl + 1
        pos = end
        if pos - start >= target or pos == len(data):
            out.append((first_line, bytes_digest(data[start:pos])[7:23]))
            start = pos
            first_line = line + 1
        line += 1
    return out


def _first_differing_line(data: bytes, entry: Any) -> int:
    """The first line of the first chunk whose digest differs from the manifest's."""
    observed = line_chunks(data, int(entry["chunk_bytes"]))
    for (line, digest_now), (_, digest_then) in zip(observed, entry["chunks"], strict=False):
        if digest_now != digest_then:
            return int(line)
    frozen = len(entry["chunks"])
    if len(observed) > frozen:  # lines were appended: the first extra chunk
        return int(observed[frozen][0])
    return data.count(b"\n") + 1  # cut at a line end: the first missing line


def _records(data: bytes, path: str, parse: Any) -> list[Any]:
    out = []
    for number, raw in enumerate(data.split(b"\n")[:-1], start=1):
        value = loads_canonical(raw, path=f"{path}:{number}")
        out.append(parse(value, path=path, line=number))
    return out
