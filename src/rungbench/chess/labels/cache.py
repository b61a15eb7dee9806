"""Immutable search cache records.

Seed 002, "A resumable process that cannot publish half a result".

One record per (engine identity, options, nodes, FEN, role, pass), stored as canonical
JSON in the evidence store; an index file maps the digest of the key to the record's
digest. Before reuse every record is revalidated: its bytes hash to its name, its
schema, engine identity, FEN, pass and role are the expected ones, every candidate
move and every move of its full PV is legal, and its payload digest matches. A
record failing any check is moved to quarantine and never reused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import chess
from rungbench.chess.workspace import Workspace, read_json, write_canonical
from rungbench.errors import InputError, IntegrityError, Reason, Refusal
from rungbench.evidence.canonical import (
    bytes_digest,
    canonical_bytes,
    digest,
    is_digest,
    loads_canonical,
)

if TYPE_CHECKING:
    from rungbench.chess.engine import EngineIdentity

RECORD_SCHEMA = "rungbench.chess.search/1"
"""Schema name and version of a cache record."""

Pass = Literal["A", "B"]
"""The two registered passes."""

PASSES: tuple[Pass, ...] = ("A", "B")
"""Both passes, in order."""

ROLE = "label"
"""Role of the searches this stage runs (the engine is proposer and classifier here)."""


@dataclass(frozen=True)
class CacheKey:
    """Everything a search result depends on."""

    engine: str
    """Digest of the engine identity (binary, name, bench, options)."""
    contract: dict[str, Any]
    """The search contract (nodes, threads, hash, multipv)."""
    fen: str
    """Full FEN given to the engine (move counters included)."""
    pass_: Pass
    """Pass name."""
    role: str = ROLE
    """What the search is for."""

    def to_json(self) -> dict[str, Any]:
        """Return the key as recorded inside the record."""
        return {"engine": self.engine, "contract": self.contract, "fen": self.fen,
                "pass": self.pass_, "role": self.role}

    @cached_property
    def digest(self) -> str:
        """Digest of the key (names the index entry); computed once per key object."""
        return digest(self.to_json())


def make_record(key: CacheKey, lines: list[dict[str, Any]]) -> dict[str, Any]:
    """Return the cache record of one search."""
    payload = {"lines": lines}
    return {"schema": RECORD_SCHEMA, "key": key.to_json(), "payload": payload,
            "payload_digest": digest(payload)}


def _pv_problem(board: chess.Board, line: dict[str, Any]) -> str | None:
    replay = board.copy(stack=False)
    for ply, uci in enumerate(line["pv"]):
        try:
            move = chess.Move.from_uci(uci)
        except ValueError:
            return f"rank {line['rank']}: malformed PV move {uci!r}"
        if move not in replay.legal_moves:
            return f"rank {line['rank']}: PV move {ply + 1} {uci!r} is illegal"
        replay.push(move)
    return None


def record_problems(record: Any, key: CacheKey) -> list[str]:
    """Return every reason ``record`` may not be reused for ``key`` (empty: valid)."""
    if not isinstance(record, dict) or record.get("schema") != RECORD_SCHEMA:
        return ["schema"]
    problems: list[str] = []
    recorded = record.get("key", {})
    expected = key.to_json()
    for part in ("engine", "contract", "fen", "pass", "role"):
        if recorded.get(part) != expected[part]:
            problems.append(f"key.{part}")
    payload = record.get("payload")
    if record.get("payload_digest") != digest(payload):
        problems.append("payload_digest")
    if problems or not isinstance(payload, dict):
        return problems or ["payload"]
    board = chess.Board(key.fen)
    legal = {m.uci() for m in board.legal_moves}
    for rank, line in enumerate(payload.get("lines", []), start=1):
        if line.get("rank") != rank or line.get("uci") not in legal or line["pv"][:1] != [
            line["uci"]
        ]:
            problems.append(f"rank {rank}: candidate {line.get('uci')!r} not legal at rank")
            continue
        pv = _pv_problem(board, line)
        if pv:
            problems.append(pv)
    return problems


@dataclass(frozen=True)
class Lookup:
    """Outcome of looking a key up in the cache."""

    record: dict[str, Any] | None
    """The valid record, or None when absent or rejected."""
    record_digest: str | None
    """Its digest in the store."""
    rejected: list[str]
    """Why a present record was rejected (empty when valid or absent)."""


class SearchCache:
    """The workspace's cache of search records.

    Records this object wrote or fully revalidated are remembered (key digest → record
    digest and record). Looking such a key up again still re-reads its index entry and
    re-hashes the stored bytes, so a record changed on disk is never reused; only the
    parse and the legality replay, whose verdict is fixed by those bytes, are skipped.
    """

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.store = workspace.store
        self._verified: dict[str, tuple[str, dict[str, Any]]] = {}

    def _recheck(self, key: CacheKey, path: Path) -> Lookup | None:
        """Return the remembered record of ``key`` if its index and bytes are unchanged."""
        known = self._verified.pop(key.digest, None)
        if known is None or not path.is_file():
            return None
        try:
            entry = loads_canonical(path.read_bytes(), path=str(path))
            if entry != {"key": key.digest, "record": known[0]}:
                return None
            self.store.get_bytes(known[0])  # re-hashes the stored bytes
        except (InputError, IntegrityError, OSError):
            return None
        self._verified[key.digest] = known
        return Lookup(known[1], known[0], [])

    def index_path(self, key: CacheKey) -> Path:
        """Return the index file of ``key``."""
        return self.workspace.index_dir / f"{key.digest[7:]}.json"

    def lookup(self, key: CacheKey) -> Lookup:
        """Return the revalidated record of ``key``; quarantine it when it fails."""
        path = self.index_path(key)
        rechecked = self._recheck(key, path)
        if rechecked is not None:
            return rechecked
        if not path.is_file():
            return Lookup(None, None, [])
        record_digest: str | None = None
        try:
            entry = loads_canonical(path.read_bytes(), path=str(path))
            if not isinstance(entry, dict) or entry.get("key") != key.digest:
                raise InputError("index entry names another key", path=str(path))
            record_digest = str(entry["record"])
            record = self.store.get_json(record_digest)
        except (InputError, IntegrityError, KeyError) as exc:
            self._quarantine(path, record_digest)
            return Lookup(None, None, [f"unreadable: {exc}"])
        try:
            problems = record_problems(record, key)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            problems = [f"malformed: {exc!r}"]
        if problems:
            self._quarantine(path, record_digest)
            return Lookup(None, None, problems)
        self._verified[key.digest] = (record_digest, record)
        return Lookup(record, record_digest, [])

    def put(self, key: CacheKey, record: dict[str, Any]) -> str:
        """Store ``record`` and point the index at it; return its digest.

        The record must pass the same revalidation a restart applies (fail closed: a
        record that could not be reused is never written). A corrupt object already
        sitting under the same name is quarantined first, because the store's
        idempotent put would otherwise keep the bad bytes.
        """
        problems = record_problems(record, key)
        if problems:
            raise IntegrityError(f"refusing to cache an invalid record for {key.fen!r} "
                                 f"pass {key.pass_}: {problems}")
        data = canonical_bytes(record)
        record_digest = bytes_digest(data)
        if self.store.has(record_digest):
            try:
                self.store.get_bytes(record_digest)
            except IntegrityError:
                self._quarantine_object(record_digest)
        self.store.put_bytes(data)
        write_canonical(self.index_path(key), {"key": key.digest, "record": record_digest})
        self._verified[key.digest] = (record_digest, loads_canonical(data))  # a private copy
        return record_digest

    def _quarantine(self, index_path: Path, record_digest: str | None) -> None:
        """Move a rejected index entry (and the object it names) out of reach."""
        qdir = self.workspace.quarantine_dir
        qdir.mkdir(parents=True, exist_ok=True)
        os.replace(index_path, qdir / f"index-{index_path.name}")
        if record_digest is not None and is_digest(record_digest):
            self._quarantine_object(record_digest)

    def _quarantine_object(self, record_digest: str) -> None:
        qdir = self.workspace.quarantine_dir
        qdir.mkdir(parents=True, exist_ok=True)
        obj = self.store.path_for(record_digest)
        if obj.exists():
            os.replace(obj, qdir / f"object-{record_digest[7:]}")


ENGINE_PIN = "engine.json"
"""File under ``cache/`` naming the one engine whose searches the workspace holds."""
ENGINE_PIN_SCHEMA = "rungbench.chess.engine-pin/1"
"""Schema name and version of the engine pin."""


def _mismatch(detail: str, recorded: dict[str, Any], identity: EngineIdentity) -> Refusal:
    return Refusal([Reason(
        "engine_mismatch", f"{detail}; one stage holds the searches of one engine: label "
        "with this engine in a new workspace", subject="engine",
        data={"recorded": {"name": recorded.get("name"),
                           "build": (recorded.get("build") or {}).get("key"),
                           "sha256": recorded.get("sha256")},
              "this_run": {"name": identity.name, "build": identity.build["key"],
                           "sha256": identity.sha256}})], gate="chess label run")


def _describe(engine: dict[str, Any]) -> str:
    build = (engine.get("build") or {}).get("key", "an unrecorded build")
    return f"{engine.get('name')!r} ({build}, {engine.get('sha256')})"


def pin_engine(workspace: Workspace, identity: EngineIdentity) -> None:
    """Pin the workspace's cache to ``identity``'s engine, or refuse (``engine_mismatch``)
    when it is pinned to another. The pin is written before the first search."""
    path = workspace.root / "cache" / ENGINE_PIN
    wanted = {"schema": ENGINE_PIN_SCHEMA, "engine": identity.engine_json(),
              "engine_digest": identity.engine_digest}
    if not path.is_file():
        write_canonical(path, wanted)
        return
    pinned = read_json(path)
    if not isinstance(pinned, dict) or pinned.get("schema") != ENGINE_PIN_SCHEMA:
        raise IntegrityError(f"{path} is not an engine pin ({ENGINE_PIN_SCHEMA})")
    if pinned.get("engine_digest") != identity.engine_digest:
        engine = pinned.get("engine")
        recorded: dict[str, Any] = engine if isinstance(engine, dict) else {}
        raise _mismatch(f"the cache holds searches of {_describe(recorded)}, this run's engine "
                        f"is {_describe(identity.engine_json())}", recorded, identity)


def check_published_engine(recorded: dict[str, Any], identity: EngineIdentity) -> None:
    """Refuse (``engine_mismatch``) when the published stage's engine (``stage.json``'s
    ``engine``) is not ``identity``'s. A stage published before builds were recorded names
    only the binary's sha256, which must then be this engine's."""
    if "build" not in recorded:
        same = recorded.get("sha256") == identity.sha256
    else:
        build = {k: v for k, v in recorded["build"].items() if k != "sent"}
        same = {"sha256": recorded.get("sha256"), "name": recorded.get("name"),
                "bench_nodes": recorded.get("bench_nodes"), "build": build} == \
            identity.engine_json()
    if not same:
        raise _mismatch(f"the published stage was labelled by {_describe(recorded)}, this "
                        f"run's engine is {_describe(identity.engine_json())}", recorded,
                        identity)
