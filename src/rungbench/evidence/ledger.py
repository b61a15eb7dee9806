"""Append-only, hash-chained event ledger in SQLite (the default) or PostgreSQL.

Each row carries ``seq`` (1, 2, 3, … without gaps), ``prev_hash`` (the hash of
row ``seq - 1``; :data:`GENESIS` for row 1) and ``hash``, the digest of the
canonical JSON of ``{"seq", "prev_hash", "kind", "payload", "time"}``. Editing,
deleting or reordering any row therefore breaks either that row's own hash or
the next row's link, and :func:`verify_chain` names the first row where that
happens.

**Appends verify first.** :meth:`Ledger.append` never extends a broken chain: the
first append through a connection walks the whole chain (measured: about 26 µs a
row, 2.6 s for 100,000 rows, paid once per connection); every later append
re-checks the row it last verified (still there, same hash, content still hashing
to it) and every row other writers added since, so it costs a row or two beside
the 3 ms of the synchronous commit itself. A
broken chain raises :class:`~rungbench.errors.IntegrityError` naming the file and
the row (exit 1), and nothing is written. :meth:`Ledger.require_intact` runs the
same check without appending (a ref move calls it before it moves the ref).

**What a keyless hash chain cannot detect.** The chain has no secret, so anyone
who can write the file can also recompute hashes:

- a *forged tail*: rows edited, or added, with every hash from there on
  recomputed, is a valid chain;
- a *truncated tail*: rows deleted from the end leave a shorter valid chain;
- a wholly rewritten ledger, for the same reason.

The defence is an **anchor** kept somewhere the ledger's writer cannot change:
the head hash, which ``evidence ledger-append`` and ``evidence ledger-verify``
print and which a run manifest records as ``ledger_head``. ``verify_chain(path,
anchor=HEAD)`` (``evidence ledger-verify --anchor HEAD`` or ``--anchor-manifest
FILE``) requires the chain still to contain that hash: since each hash covers
every row before it, this detects any edit, deletion or reordering of rows up to
the anchored one and any truncation below it. Rows appended after the anchor
remain as trustworthy as their writer; catching a forgery there needs a keyed
MAC or a signature, which rungbench deliberately does not manage
(docs/CONTRACTS.md, "Ledger anchors").

The Python API is insert-only (there is no update or delete method), and
SQLite triggers abort any UPDATE or DELETE issued through SQL. Appends take
``BEGIN IMMEDIATE`` (one writer at a time, others wait on the busy timeout) in
WAL mode, so several processes can append at once without losing an event.

**PostgreSQL.** A ledger target is a file path or a ``postgresql://`` URL
(:mod:`rungbench.evidence.database`). The table (:data:`SCHEMA_SQL`, plain BIGINT,
VARCHAR and TEXT) is the same on both; the guards are derived from the same table name
by :func:`~rungbench.evidence.database.append_only_guards` (SQLite triggers, or a
plpgsql trigger function with UPDATE, DELETE and TRUNCATE triggers). There an append
is ``BEGIN`` + ``LOCK TABLE ledger_events IN EXCLUSIVE MODE`` (writers queue, readers
do not wait), then the same tail check and insert; the primary key on ``seq`` alone
would already reject a forked chain. Commits are durable under PostgreSQL's defaults
(``fsync``, ``synchronous_commit = on``).
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
from rungbench.evidence.database import (
    DB_ERRORS,
    Database,
    Dialect,
    append_only_guards,
    connect,
    is_url,
    redact,
    wrap,
)

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

def guards_sql(dialect: Dialect) -> tuple[str, ...]:
    """The append-only guards of the ledger table in ``dialect`` (derived, not hand-written)."""
    return tuple(append_only_guards(TABLE, dialect))


SQLITE_GUARDS_SQL = guards_sql("sqlite")
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
        """Raise :class:`IntegrityError` naming the first bad row unless the chain holds.

        ``path`` is the file or URL to name (a URL's password is never shown).
        """
        if self.first_bad is not None:
            bad = self.first_bad
            raise IntegrityError(
                f"{redact(path)}: ledger row seq {bad.seq} is bad ({bad.problem}): {bad.detail}"
            )


def _utc_now() -> datetime:
    return datetime.now(UTC)


class Ledger:
    """An append-only, hash-chained ledger in one SQLite file or one PostgreSQL database.

    ``path`` is a file path (SQLite, created if missing) or a ``postgresql://`` URL (the
    table and its guards are created if missing).
    """

    def __init__(self, path: str | Path, *, timeout: float = 60.0, clock: Clock = _utc_now) -> None:
        self.url: str | None = str(path) if is_url(path) else None
        """The PostgreSQL URL, or None for an SQLite file."""
        self.path: Path | None = Path(path) if self.url is None else None
        """The SQLite file, or None for a URL."""
        self.location = str(path) if self.url is None else redact(self.url)
        """The file path or the password-free URL, as messages name it."""
        self._clock = clock
        self._verified: tuple[int, str] | None = None
        if self.path is not None:
            if not self.path.parent.is_dir():
                raise InputError("directory does not exist", path=str(self.path.parent))
            if self.path.exists() and not self.path.is_file():
                raise InputError("a ledger is a file, but a directory is here",
                                 path=str(self.path))
        self._db: Database = connect(path, timeout=timeout)  # InputError names the target
        try:
            self._setup()
        except DB_ERRORS as exc:
            self._db.close()
            raise InputError(f"not a usable ledger database: {exc}", path=self.location) from exc

    @property
    def dialect(self) -> Dialect:
        """``sqlite`` or ``postgresql``."""
        return self._db.dialect

    def _setup(self) -> None:
        if self._db.dialect == "sqlite":
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = FULL")
        with self._db.transaction(schema=True):
            self._db.execute(SCHEMA_SQL)
            for statement in guards_sql(self._db.dialect):
                self._db.execute(statement)

    def append(self, kind: str, payload: Any) -> Event:
        """Append one event and return it; waits for other writers, never forks the chain.

        Raises :class:`IntegrityError` naming the file and row, and writes nothing, when
        the chain is broken (see the module docstring).
        """
        if not kind:
            raise InputError("event kind must be non-empty", field="kind")
        text = canonical_bytes(payload).decode("utf-8")
        moment = self._clock()
        if moment.tzinfo is None:
            raise InputError(f"ledger clock returned naive datetime {moment!r}", field="time")
        time = moment.astimezone(UTC).isoformat(timespec="microseconds")
        try:
            return self._append(kind, payload, text, time)
        except DB_ERRORS as exc:
            raise InputError(f"cannot append to the ledger: {exc}", path=self.location) from exc

    def _append(self, kind: str, payload: Any, text: str, time: str) -> Event:
        self._db.begin(write=True, lock=(TABLE,))
        try:
            last, prev = self._verify_tail()
            seq = last + 1
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
            self._db.commit()
        except BaseException:
            self._db.rollback()
            raise
        self._verified = (seq, event.hash)
        return event

    def require_intact(self) -> str | None:
        """Verify the chain as an append would, without appending; return the head hash.

        Raises :class:`IntegrityError` naming the file and the first bad row.
        """
        try:
            self._db.begin(write=False)
            try:
                count, head = self._verify_tail()
            finally:
                self._db.rollback()
        except DB_ERRORS as exc:
            raise InputError(f"cannot read the ledger: {exc}", path=self.location) from exc
        return head if count else None

    def _verify_tail(self) -> tuple[int, str]:
        """Check every row not yet verified through this connection; return (seq, hash) of
        the last row (0 and GENESIS when empty). Call inside a transaction."""
        if self._verified is None:
            report = walk_chain(self._db)
            report.require_ok(self.location)
            self._verified = (report.count, report.head or GENESIS)
            return self._verified
        seq, head = self._verified
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM {TABLE} WHERE seq >= ? ORDER BY seq", (max(seq, 1),)
        )
        if seq > 0:
            bad = _known_row_problem(rows.fetchone(), seq, head)
            if bad is not None:
                ChainReport(seq - 1, None, bad).require_ok(self.location)
        for row in rows:
            bad = _check_row(tuple(row), seq + 1, head)
            if bad is not None:
                ChainReport(seq, head, bad).require_ok(self.location)
            seq, head = seq + 1, str(row[2])
        self._verified = (seq, head)
        return self._verified

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
    """Open the ledger at ``path`` (a file or a ``postgresql://`` URL) read-only and verify
    every row's hash and link.

    ``anchor`` is a head hash recorded earlier; the chain must still contain it,
    which catches rows deleted from the end. Raises :class:`InputError` when the
    file is missing or not a ledger (for a URL: unreachable, or no ledger table).
    """
    where = redact(str(path)) if is_url(path) else str(path)
    if not is_url(path) and not Path(path).is_file():
        raise InputError("no ledger database here", path=where)
    db = connect(path, readonly=True)  # InputError names the target
    try:
        if db.dialect == "postgresql" and TABLE not in db.tables():
            raise InputError(f"not a ledger database: no table {TABLE}", path=where)
        return walk_chain(db, anchor=anchor)
    except DB_ERRORS as exc:
        raise InputError(f"not a ledger database: {exc}", path=where) from exc
    finally:
        db.close()


def walk_chain(db: sqlite3.Connection | Database, *, anchor: str | None = None) -> ChainReport:
    """Verify the chain through an open connection and return what was found."""
    rows = wrap(db).execute(f"SELECT {_COLUMNS} FROM {TABLE} ORDER BY seq")
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


def _known_row_problem(row: Any, seq: int, known: str) -> BadRow | None:
    """Why row ``seq``, verified earlier with hash ``known``, no longer holds (None: it does)."""
    if row is None or row[0] != seq:
        detail = f"row seq {seq}, verified earlier as {known}, is gone (rows deleted)"
        return BadRow(seq, "truncated", detail)
    if row[2] != known:
        return BadRow(seq, "hash", f"row was {known} when verified, is now {row[2]}")
    return _check_row(tuple(row), seq, str(row[1]))


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
