"""Append-only, hash-chained event ledger in SQLite.

Each row carries ``seq`` (1, 2, 3, … without gaps), ``prev_hash`` (the hash of
row ``seq - 1``; :data:`GENESIS` for row 1) and ``hash``, the digest of the
canonical JSON of ``{"seq", "prev_hash", "kind", "payload", "time"}``. Editing,
deleting or reordering any row therefore breaks either that row's own hash or
the next row's link, and :func:`verify_chain` names the first row where that
happens. Deleting rows from the *end* leaves a shorter valid chain; only an
anchor recorded elsewhere (a run manifest's ``ledger_head``) reveals it, and
:func:`verify_chain` takes one.

The Python API is insert-only (there is no update or delete method), and
SQLite triggers abort any UPDATE or DELETE issued through SQL. Appends take
``BEGIN IMMEDIATE`` (one writer at a time, others wait on the busy timeout) in
WAL mode, so several processes can append at once without losing an event.

The table uses plain types (BIGINT, VARCHAR, TEXT) and runs unchanged on
PostgreSQL; there the writer lock is ``LOCK TABLE ledger_events IN EXCLUSIVE
MODE`` inside the transaction and the guards are a trigger function, while the
primary key on ``seq`` alone already rejects a forked chain.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from rungbench.errors import InputError, IntegrityError
from rungbench.evidence.canonical import canonical_bytes, digest, loads_canonical

GENESIS = "sha256:" + "0" * 64
"""``prev_hash`` of the first row."""

TABLE = "ledger_events"

SCHEMA_SQL = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    seq BIGINT PRIMARY KEY,
    prev_hash VARCHAR(71) NOT NULL,
    hash VARCHAR(71) NOT NULL UNIQUE,
    kind VARCHAR(200) NOT NULL,
    payload TEXT NOT NULL,
    recorded_at VARCHAR(40) NOT NULL
)
"""
"""Portable DDL (SQLite and PostgreSQL)."""

SQLITE_GUARDS_SQL = (
    f"""CREATE TRIGGER IF NOT EXISTS {TABLE}_no_update BEFORE UPDATE ON {TABLE}
    BEGIN SELECT RAISE(ABORT, '{TABLE} is append-only: UPDATE refused'); END""",
    f"""CREATE TRIGGER IF NOT EXISTS {TABLE}_no_delete BEFORE DELETE ON {TABLE}
    BEGIN SELECT RAISE(ABORT, '{TABLE} is append-only: DELETE refused'); END""",
)
"""SQLite triggers that abort UPDATE and DELETE on the ledger table."""

_COLUMNS = "seq, prev_hash, hash, kind, payload, recorded_at"

Clock = Callable[[], datetime]


@dataclass(frozen=True)
class Event:
    """One ledger row."""

    seq: int
    """Position in the chain, from 1, without gaps."""
    prev_hash: str
    """Hash of the previous row, or :data:`GENESIS`."""
    hash: str
    """Digest of the canonical JSON of seq, prev_hash, kind, payload and time."""
    kind: str
    """Event type, e.g. ``object.put`` or ``ref.move``."""
    payload: Any
    """JSON-ready event body."""
    time: str
    """ISO-8601 UTC timestamp of the append."""

    def to_json(self) -> dict[str, Any]:
        """Return the event as a JSON-ready mapping."""
        return asdict(self)


def event_hash(seq: int, prev_hash: str, kind: str, payload: Any, time: str) -> str:
    """Return the chain hash of one row (see the module docstring)."""
    body = {"seq": seq, "prev_hash": prev_hash, "kind": kind, "payload": payload, "time": time}
    return digest(body)


@dataclass(frozen=True)
class BadRow:
    """The first row at which the chain fails."""

    seq: int
    """``seq`` of the offending row (one past the last row for a truncated tail)."""
    problem: str
    """``seq_gap``, ``payload``, ``hash``, ``link`` or ``truncated``."""
    detail: str
    """What was expected and what was found."""

    def to_json(self) -> dict[str, Any]:
        """Return the finding as a JSON-ready mapping."""
        return asdict(self)


@dataclass(frozen=True)
class ChainReport:
    """Result of walking the chain."""

    count: int
    """Rows read."""
    head: str | None
    """Hash of the last row read, or None for an empty ledger."""
    first_bad: BadRow | None
    """The first failing row, or None when the chain holds."""

    @property
    def ok(self) -> bool:
        """Whether the whole chain verified."""
        return self.first_bad is None

    def to_json(self) -> dict[str, Any]:
        """Return the report as a JSON-ready mapping."""
        return {"ok": self.ok, **asdict(self)}

    def require_ok(self, path: str) -> None:
        """Raise :class:`IntegrityError` naming the first bad row unless the chain holds."""
        if self.first_bad is not None:
            bad = self.first_bad
            raise IntegrityError(
                f"{path}: ledger row seq {bad.seq} is bad ({bad.problem}): {bad.detail}"
            )


def _utc_now() -> datetime:
    return datetime.now(UTC)


class Ledger:
    """An append-only, hash-chained ledger in one SQLite file."""

    def __init__(self, path: str | Path, *, timeout: float = 60.0, clock: Clock = _utc_now) -> None:
        self.path = Path(path)
        self._clock = clock
        if not self.path.parent.is_dir():
            raise InputError("directory does not exist", path=str(self.path.parent))
        self._db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        try:
            self._setup(timeout)
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise InputError(f"not a usable ledger database: {exc}", path=str(self.path)) from exc

    def _setup(self, timeout: float) -> None:
        self._db.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = FULL")
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute(SCHEMA_SQL)
            for statement in SQLITE_GUARDS_SQL:
                self._db.execute(statement)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def append(self, kind: str, payload: Any) -> Event:
        """Append one event and return it; waits for other writers, never forks the chain."""
        if not kind:
            raise InputError("event kind must be non-empty", field="kind")
        text = canonical_bytes(payload).decode("utf-8")
        moment = self._clock()
        if moment.tzinfo is None:
            raise InputError(f"ledger clock returned naive datetime {moment!r}", field="time")
        time = moment.astimezone(UTC).isoformat(timespec="microseconds")
        self._db.execute("BEGIN IMMEDIATE")
        try:
            row = self._db.execute(
                f"SELECT seq, hash FROM {TABLE} ORDER BY seq DESC LIMIT 1"
            ).fetchone()
            seq, prev = (row[0] + 1, row[1]) if row else (1, GENESIS)
            event = Event(
                seq,
                prev,
                event_hash(seq, prev, kind, payload, time),
                kind,
                loads_canonical(text.encode("utf-8")),
                time,
            )
            self._db.execute(
                f"INSERT INTO {TABLE} ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                (seq, prev, event.hash, kind, text, time),
            )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return event

    def events(self) -> Iterator[Event]:
        """Yield every event in ``seq`` order (payloads parsed, not verified)."""
        for row in self._db.execute(f"SELECT {_COLUMNS} FROM {TABLE} ORDER BY seq"):
            yield Event(row[0], row[1], row[2], row[3], loads_canonical(row[4].encode()), row[5])

    def head(self) -> str | None:
        """Return the hash of the last event, or None when the ledger is empty."""
        row = self._db.execute(f"SELECT hash FROM {TABLE} ORDER BY seq DESC LIMIT 1").fetchone()
        return None if row is None else str(row[0])

    def count(self) -> int:
        """Return the number of events."""
        return int(self._db.execute(f"SELECT COUNT(*) FROM {TABLE}").fetchone()[0])

    def verify(self, *, anchor: str | None = None) -> ChainReport:
        """Walk the chain in this connection; see :func:`verify_chain`."""
        return walk_chain(self._db, anchor=anchor)

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def verify_chain(path: str | Path, *, anchor: str | None = None) -> ChainReport:
    """Open the ledger at ``path`` read-only and verify every row's hash and link.

    ``anchor`` is a head hash recorded earlier; the chain must still contain it,
    which catches rows deleted from the end. Raises :class:`InputError` when the
    file is missing or not a ledger.
    """
    target = Path(path)
    if not target.is_file():
        raise InputError("no ledger database here", path=str(target))
    try:
        db = sqlite3.connect(f"{target.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise InputError(f"cannot open ledger: {exc}", path=str(target)) from exc
    try:
        return walk_chain(db, anchor=anchor)
    except sqlite3.DatabaseError as exc:
        raise InputError(f"not a ledger database: {exc}", path=str(target)) from exc
    finally:
        db.close()


def walk_chain(db: sqlite3.Connection, *, anchor: str | None = None) -> ChainReport:
    """Verify the chain through an open connection and return what was found."""
    rows = db.execute(f"SELECT {_COLUMNS} FROM {TABLE} ORDER BY seq")
    prev, count, seen_anchor = GENESIS, 0, anchor is None
    for row in rows:
        count += 1
        bad = _check_row(tuple(row), count, prev)
        if bad is not None:
            return ChainReport(count - 1, prev if count > 1 else None, bad)
        prev = str(row[2])
        seen_anchor = seen_anchor or prev == anchor
    head = prev if count else None
    if not seen_anchor:
        detail = f"anchored head {anchor} is not in the chain, which ends at seq {count}"
        return ChainReport(count, head, BadRow(count + 1, "truncated", detail))
    return ChainReport(count, head, None)


def _check_row(row: tuple[Any, ...], expected_seq: int, prev: str) -> BadRow | None:
    seq, prev_hash, stored_hash, kind, text, time = row
    if seq != expected_seq:
        detail = f"found seq {seq} where seq {expected_seq} was expected (row deleted or moved)"
        return BadRow(int(seq), "seq_gap", detail)
    try:
        payload = loads_canonical(str(text).encode("utf-8"))
        canonical = canonical_bytes(payload).decode("utf-8") == text
    except InputError:
        canonical = False
    if not canonical:
        return BadRow(seq, "payload", "payload is not canonical JSON (row edited)")
    actual = event_hash(seq, str(prev_hash), str(kind), payload, str(time))
    if actual != stored_hash:
        return BadRow(seq, "hash", f"row hashes to {actual}, stored {stored_hash} (row edited)")
    if prev_hash != prev:
        detail = f"prev_hash {prev_hash} does not link to the previous row's hash {prev}"
        return BadRow(seq, "link", detail)
    return None
