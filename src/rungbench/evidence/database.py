"""Database backends: an SQLite file (the default) or a PostgreSQL URL, behind one small wrapper.

rungbench's append-only stores (the evidence ledger, the claim store, the typed graph store)
keep **one schema definition per table** and run it on both backends. A target is either a
file path (SQLite, embedded, the default everywhere) or a URL ``postgresql://…`` /
``postgres://…`` (a shared lab server, through psycopg 3: ``pip install 'rungbench[postgres]'``).
:func:`connect` returns a :class:`Database`, which

- takes the SQLite ``?`` paramstyle everywhere and rewrites it to psycopg's ``%s`` (a literal
  ``%`` doubled) for PostgreSQL, so the callers' SQL text is the same for both;
- runs in autocommit mode with explicit transactions: :meth:`Database.begin` is
  ``BEGIN IMMEDIATE`` on SQLite (one writer at a time) and ``BEGIN`` plus
  ``LOCK TABLE … IN EXCLUSIVE MODE`` on PostgreSQL (writers queue on the named tables,
  readers are never blocked);
- reads a table's columns in stored order (``PRAGMA table_info`` / ``information_schema``).

**Append-only guards from one definition.** :func:`append_only_guards` derives both dialects'
trigger text from ``(table, GUARDED_VERBS)``. SQLite gets ``BEFORE UPDATE`` and
``BEFORE DELETE`` triggers that ``RAISE(ABORT, '<table> is append-only: <VERB> refused')``
(raised as ``sqlite3.IntegrityError``). PostgreSQL has no trigger bodies, so it gets one shared
plpgsql function, :data:`PG_GUARD_FUNCTION`, raising the same message with SQLSTATE 23001
``restrict_violation`` (``psycopg.errors.RestrictViolation``, an ``IntegrityError``), and
``BEFORE UPDATE`` / ``BEFORE DELETE`` row triggers calling it, plus a ``BEFORE TRUNCATE``
statement trigger, because ``TRUNCATE`` is PostgreSQL's way to empty a table without firing
row triggers (SQLite has no ``TRUNCATE``; its truncate optimisation is off when a
``DELETE`` trigger exists). As in SQLite, whoever owns the table can drop the triggers: they
stop accidents; the hash chains are what catch a deliberate edit.

:func:`postgres_server` starts a real, throw-away PostgreSQL server from Debian's
``postgresql`` binaries (tests and benchmarks): ``initdb`` in a temporary directory, a random
password (SCRAM), a free port on 127.0.0.1, and ``pg_ctl stop`` plus removal on exit.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import shutil
import socket
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Protocol
from urllib.parse import quote, urlsplit, urlunsplit

from rungbench.errors import InputError

Dialect = Literal["sqlite", "postgresql"]

URL_SCHEMES = ("postgresql://", "postgres://")
"""Targets starting with one of these are PostgreSQL URLs; anything else is an SQLite file."""

GUARDED_VERBS = ("UPDATE", "DELETE")
"""Statements the append-only guards refuse (PostgreSQL also refuses ``TRUNCATE``)."""

PG_GUARD_FUNCTION = "rungbench_append_only"
"""The plpgsql trigger function shared by every guarded PostgreSQL table."""

_SETUP_LOCK = 0x72756E67  # "rung": pg_advisory_xact_lock key serialising schema creation


def _driver_errors() -> tuple[type[Exception], ...]:
    try:
        import psycopg
    except ImportError:
        return (sqlite3.Error,)
    return (sqlite3.Error, psycopg.Error)


DB_ERRORS: tuple[type[Exception], ...] = _driver_errors()
"""Every driver error class (``sqlite3.Error`` and, when installed, ``psycopg.Error``)."""


def _integrity_errors() -> tuple[type[Exception], ...]:
    try:
        import psycopg
    except ImportError:
        return (sqlite3.IntegrityError,)
    return (sqlite3.IntegrityError, psycopg.IntegrityError)


INTEGRITY_ERRORS: tuple[type[Exception], ...] = _integrity_errors()
"""Constraint violations of either driver (a unique key, an append-only guard)."""


class Cursor(Protocol):
    """What :meth:`Database.execute` returns (an sqlite3 or a psycopg cursor)."""

    def fetchone(self) -> Any:
        """The next row as a tuple, or None."""

    def fetchall(self) -> list[Any]:
        """Every remaining row."""

    def __iter__(self) -> Iterator[Any]:
        """Iterate over the remaining rows."""


def is_url(target: str | Path) -> bool:
    """Whether ``target`` names a PostgreSQL server rather than an SQLite file."""
    return isinstance(target, str) and target.startswith(URL_SCHEMES)


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***`` (safe for messages and logs)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    user = quote(parts.username or "", safe="")
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


@functools.lru_cache(maxsize=512)
def to_pyformat(sql: str) -> str:
    """Rewrite ``?`` placeholders (outside quotes) to ``%s`` and double every literal ``%``."""
    out: list[str] = []
    quote_char: str | None = None
    for ch in sql:
        if quote_char is not None:
            out.append("%%" if ch == "%" else ch)
            if ch == quote_char:
                quote_char = None
        elif ch in ("'", '"'):
            quote_char = ch
            out.append(ch)
        elif ch == "?":
            out.append("%s")
        else:
            out.append("%%" if ch == "%" else ch)
    return "".join(out)


def append_only_guards(table: str, dialect: Dialect) -> list[str]:
    """Statements that make ``table`` refuse UPDATE and DELETE (and TRUNCATE on PostgreSQL).

    Idempotent: SQLite uses ``CREATE TRIGGER IF NOT EXISTS``, PostgreSQL
    ``CREATE OR REPLACE FUNCTION`` / ``CREATE OR REPLACE TRIGGER`` (PostgreSQL ≥ 14).
    """
    if dialect == "sqlite":
        return [f"CREATE TRIGGER IF NOT EXISTS {table}_no_{verb.lower()} BEFORE {verb} ON "
                f"{table} BEGIN SELECT RAISE(ABORT, '{table} is append-only: {verb} refused'); "
                "END" for verb in GUARDED_VERBS]
    function = (
        f"CREATE OR REPLACE FUNCTION {PG_GUARD_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP "
        "USING ERRCODE = 'restrict_violation'; END $$")
    rows = [f"CREATE OR REPLACE TRIGGER {table}_no_{verb.lower()} BEFORE {verb} ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION {PG_GUARD_FUNCTION}()" for verb in GUARDED_VERBS]
    truncate = (f"CREATE OR REPLACE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
                f"FOR EACH STATEMENT EXECUTE FUNCTION {PG_GUARD_FUNCTION}()")
    return [function, *rows, truncate]


class Database:
    """One connection to an SQLite file or a PostgreSQL database, in autocommit mode."""

    def __init__(self, raw: Any, dialect: Dialect, where: str, *, owned: bool = True) -> None:
        self.raw = raw
        """The driver connection (``sqlite3.Connection`` or ``psycopg.Connection``)."""
        self.dialect: Dialect = dialect
        """``sqlite`` or ``postgresql``."""
        self.where = where
        """The file path or the URL without its password, for messages."""
        self._owned = owned

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Cursor:
        """Run one statement (``?`` placeholders) and return its cursor."""
        if self.dialect == "sqlite":
            cursor: Cursor = self.raw.execute(sql, () if params is None else params)
            return cursor
        if params is None:
            return self.raw.execute(sql)  # type: ignore[no-any-return]
        return self.raw.execute(to_pyformat(sql), params)  # type: ignore[no-any-return]

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement for each parameter row."""
        if self.dialect == "sqlite":
            self.raw.executemany(sql, rows)
        elif rows:
            with self.raw.cursor() as cursor:
                cursor.executemany(to_pyformat(sql), rows)

    def begin(self, *, write: bool = True, lock: Sequence[str] = ()) -> None:
        """Open a transaction; ``write`` takes the writer lock (``lock``: tables, PostgreSQL)."""
        if self.dialect == "sqlite":
            self.raw.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            return
        self.raw.execute("BEGIN")
        if write and lock:
            self.raw.execute(f"LOCK TABLE {', '.join(lock)} IN EXCLUSIVE MODE")

    def commit(self) -> None:
        """Commit the open transaction."""
        self.raw.execute("COMMIT")

    def rollback(self) -> None:
        """Roll the open transaction back (a no-op when none is open)."""
        if self.in_transaction:
            self.raw.execute("ROLLBACK")

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open on this connection."""
        if self.dialect == "sqlite":
            return bool(self.raw.in_transaction)
        from psycopg.pq import TransactionStatus

        return bool(self.raw.info.transaction_status != TransactionStatus.IDLE)

    @contextlib.contextmanager
    def transaction(self, *, write: bool = True, lock: Sequence[str] = (),
                    schema: bool = False) -> Iterator[Database]:
        """A transaction committed on success and rolled back on any exception.

        ``schema``: on PostgreSQL, first take the advisory lock that serialises schema
        creation, so two processes creating the same tables at once do not collide.
        """
        self.begin(write=write, lock=lock)
        try:
            if schema and self.dialect == "postgresql":
                self.raw.execute(f"SELECT pg_advisory_xact_lock({_SETUP_LOCK})")
            yield self
            self.commit()
        except BaseException:
            with contextlib.suppress(*DB_ERRORS):
                self.rollback()
            raise

    def tables(self) -> set[str]:
        """Names of the tables in the database (PostgreSQL: those on the search path)."""
        if self.dialect == "sqlite":
            rows = self.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        else:
            rows = self.execute("SELECT table_name FROM information_schema.tables WHERE "
                                "table_schema = current_schema()")
        return {str(r[0]) for r in rows}

    def columns(self, table: str) -> tuple[str, ...]:
        """Column names of ``table`` in stored order (empty when there is no such table)."""
        if self.dialect == "sqlite":
            return tuple(str(r[1]) for r in self.execute(f"PRAGMA table_info({table})"))
        rows = self.execute("SELECT column_name FROM information_schema.columns WHERE "
                            "table_schema = current_schema() AND table_name = ? "
                            "ORDER BY ordinal_position", (table,))
        return tuple(str(r[0]) for r in rows)

    def close(self) -> None:
        """Close the connection (a wrapped connection is left to its owner)."""
        if self._owned:
            self.raw.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def wrap(conn: sqlite3.Connection | Database) -> Database:
    """``conn`` as a :class:`Database` (a raw SQLite connection is wrapped, not owned)."""
    if isinstance(conn, Database):
        return conn
    return Database(conn, "sqlite", "<sqlite connection>", owned=False)


def connect(target: str | Path, *, readonly: bool = False, timeout: float = 60.0) -> Database:
    """Open ``target``: a PostgreSQL URL, else an SQLite file (created unless ``readonly``).

    Writers wait up to ``timeout`` seconds for a lock (SQLite ``busy_timeout``, PostgreSQL
    ``lock_timeout``). A read-only PostgreSQL session sets ``default_transaction_read_only``.
    Raises :class:`InputError` naming the target (a URL without its password).
    """
    if is_url(target):
        return _connect_postgres(str(target), readonly=readonly, timeout=timeout)
    path = Path(target)
    try:
        if readonly:
            raw = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                                  isolation_level=None, check_same_thread=False)
        else:
            raw = sqlite3.connect(path, timeout=timeout, isolation_level=None,
                                  check_same_thread=False)
        raw.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
    except sqlite3.Error as exc:
        raise InputError(f"cannot open database: {exc}", path=str(path)) from exc
    return Database(raw, "sqlite", str(path))


def _connect_postgres(url: str, *, readonly: bool, timeout: float) -> Database:
    where = redact(url)
    try:
        import psycopg
    except ImportError as exc:
        raise InputError("a postgresql:// target needs psycopg 3: pip install "
                         "'rungbench[postgres]'", path=where) from exc
    try:
        raw = psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(timeout)))
        raw.execute(f"SET lock_timeout = {int(timeout * 1000)}")
        if readonly:
            raw.execute("SET default_transaction_read_only = on")
    except psycopg.Error as exc:
        raise InputError(f"cannot connect: {str(exc).strip()}", path=where) from exc
    return Database(raw, "postgresql", where)


# ---------------------------------------------------------------- a throw-away server


def find_postgres_bin() -> Path | None:
    """Directory of Debian's newest PostgreSQL server binaries (``initdb``, ``pg_ctl``)."""
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name
                        .isdigit() else 0)
    return candidates[-1].parent if candidates else None


def postgres_unavailable() -> str | None:
    """Why :func:`postgres_server` cannot run here (None when it can)."""
    if find_postgres_bin() is None:
        return ("PostgreSQL server binaries absent (/usr/lib/postgresql/*/bin/initdb): "
                "install Debian's postgresql package (make engines)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg 3 not installed: pip install 'rungbench[postgres]'"
    if os.geteuid() == 0:
        import pwd

        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no postgres user to run initdb as"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class PostgresServer:
    """A running throw-away server."""

    url: str
    """URL of its ``postgres`` database (user ``rungbench``, password included)."""
    port: int
    """Loopback TCP port it listens on."""
    data_dir: Path
    """Its data directory (removed on exit)."""

    def database_url(self, name: str) -> str:
        """URL of database ``name`` on this server."""
        return self.url.rsplit("/", 1)[0] + "/" + name

    def create_database(self, name: str) -> str:
        """Create an empty database ``name`` (letters, digits, ``_``) and return its URL."""
        if not name.replace("_", "").isalnum():
            raise InputError(f"database name {name!r} is not an identifier", field="name")
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.database_url(name)


@contextlib.contextmanager
def postgres_server(*, startup_timeout: float = 60.0) -> Iterator[PostgresServer]:
    """Start a PostgreSQL server in a temporary directory on 127.0.0.1; stop and remove it.

    As root the server runs as the ``postgres`` user (``initdb`` refuses root). Raises
    :class:`InputError` (with the server's log) when it cannot start.
    """
    reason = postgres_unavailable()
    if reason is not None:
        raise InputError(reason)
    bindir = find_postgres_bin()
    assert bindir is not None
    root = Path(tempfile.mkdtemp(prefix="rungbench-pg-"))
    user: str | None = None
    if os.geteuid() == 0:
        user = "postgres"
        shutil.chown(root, user, user)
    data, log = root / "data", root / "server.log"
    password = secrets.token_hex(16)
    (root / "pw").write_text(password + "\n")
    if user is not None:
        shutil.chown(root / "pw", user, user)

    def run(*cmd: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(cmd), user=user, cwd=root, capture_output=True, text=True,
                              timeout=startup_timeout, check=False)

    started = False
    try:
        done = run(str(bindir / "initdb"), "-D", str(data), "-U", "rungbench", "--pwfile",
                   str(root / "pw"), "-A", "scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8",
                   "--no-sync")  # a throw-away cluster: skip initdb's own fsyncs only
        if done.returncode != 0:
            raise InputError(f"initdb failed: {done.stderr.strip()[-400:]}", path=str(data))
        (root / "pw").unlink()
        port = 0
        for _ in range(5):  # another process may take the free port first: try another
            port = _free_port()
            options = (f"-c listen_addresses=127.0.0.1 -c port={port} "
                       f"-c unix_socket_directories={root}")
            done = run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t",
                       str(int(startup_timeout)), "-o", options, "start")
            if done.returncode == 0:
                started = True
                break
        if not started:
            tail = log.read_text(errors="replace")[-400:] if log.exists() else done.stderr
            raise InputError(f"PostgreSQL did not start: {tail.strip()}", path=str(data))
        url = f"postgresql://rungbench:{password}@127.0.0.1:{port}/postgres"
        yield PostgresServer(url, port, data)
    finally:
        if started:
            # immediate: no shutdown checkpoint, since the data directory is removed next
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)
