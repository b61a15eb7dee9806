"""The append-only claim store of seed 003 "Runtime instrumentation": tables, events, chains.

Seven tables, as in the seed (``causal_opportunity``, ``causal_claim``,
``causal_tool_call``, ``experiment``, ``intervention_prediction``, ``graph_write``,
``model_revision``), each with the seed's columns plus the columns that make it an
append-only, hash-chained log:

- ``episode_id`` and ``seq`` on every table (the seed keys every event by them; three
  of its tables lack them in the seed's DDL, so they are added);
- ``event`` — the event type that wrote the row (a table can hold more than one, so that
  an intention, an action and an outcome are separate rows: ``experiment_proposed`` vs
  ``experiment_executed``, ``prediction`` vs ``resolution``);
- ``log_seq`` (1, 2, 3, … per table, assigned by the logger), ``logged_t`` (the logger's
  clock), ``peer_uid`` (the Unix uid of the socket peer that sent the event, from the
  kernel's ``SO_PEERCRED``, not from the client's word; NULL for library appends),
  ``prev_hash`` and ``hash``.

A row never changes. Fields the seed fills "after the fact" (``executed_seq``,
``observed_effect``, ``resolver``) arrive as a later row with the same key; readers
(``weekly.py``) join them.

**Chains.** Every table is its own chain: ``hash`` is the digest of the canonical JSON of
``{"table": NAME, "row": every column but hash}``, and ``prev_hash`` is the previous
row's ``hash`` (:data:`GENESIS` for row 1). :func:`verify_store` names each row that was
edited (its content no longer hashes to its ``hash``), deleted (a ``log_seq`` gap) or
reordered (its ``prev_hash`` is the hash of a row other than its predecessor). As in
``evidence/ledger.py``, a keyless chain cannot see a truncated or wholly recomputed tail;
the anchor is the head the logger acknowledges to clients (``heads`` argument).

**DDL and backends.** Plain types only (TEXT, BIGINT, DOUBLE PRECISION) and no SQLite-only
syntax in :data:`TABLE_DDL`, so the same statements create the tables on SQLite and on
PostgreSQL. Integers are BIGINT because events carry integers up to 2**53 (PostgreSQL's
INTEGER stops at 2**31 − 1; SQLite gives BIGINT the same integer affinity as INTEGER).
The guards refusing UPDATE and DELETE are derived per dialect from the table name by
:func:`rungbench.evidence.database.append_only_guards` (SQLite triggers; a plpgsql trigger
function with UPDATE, DELETE and TRUNCATE triggers on PostgreSQL). Every function here
takes an ``sqlite3.Connection`` or a :class:`~rungbench.evidence.database.Database` (an
SQLite file or a ``postgresql://`` URL opened by :func:`open_target`), and
:func:`verify_store` / :func:`production_unchanged` take a path or a URL. Stored values of
DOUBLE PRECISION columns are hashed as floats (an integer ``cost_usd`` of 0 is stored and
hashed as 0.0), since both backends hand them back as floats.

**Several writers.** :class:`Appender` keeps each chain's head in memory for a single writer
(the logger). :meth:`Appender.transaction` is for more than one: it takes the writer lock
(``BEGIN IMMEDIATE`` on SQLite; ``LOCK TABLE`` of every chained table ``IN EXCLUSIVE MODE``
on PostgreSQL), re-reads the heads, and commits, so appends from several processes at once
keep every chain valid.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rungbench.errors import IntegrityError, Reason, Refusal
from rungbench.evidence.canonical import canonical_bytes
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

SCHEMA_VERSION = "rungbench.claims/1"
"""Version of the tables, events and hash rule; bump it with any change to them."""

GENESIS = "sha256:" + "0" * 64
"""``prev_hash`` of each table's first row."""

CHAIN_COLUMNS = ("log_seq", "logged_t", "event", "peer_uid", "prev_hash", "hash")
"""Columns the logger adds to every row (never sent by a client)."""

ColumnType = Literal["TEXT", "BIGINT", "DOUBLE PRECISION"]

Connection = sqlite3.Connection | Database
"""A raw SQLite connection or a backend-neutral :class:`Database`."""

TABLES: dict[str, tuple[tuple[str, ColumnType], ...]] = {
    "causal_opportunity": (
        ("episode_id", "TEXT"), ("seq", "BIGINT"), ("t", "TEXT"),
        ("detector_version", "TEXT"), ("kind", "TEXT"), ("text_span_hash", "TEXT"),
        ("routed_to", "TEXT")),
    "causal_claim": (
        ("claim_id", "TEXT"), ("episode_id", "TEXT"), ("seq", "BIGINT"), ("t", "TEXT"),
        ("author", "TEXT"), ("rung", "TEXT"), ("cause", "TEXT"), ("effect", "TEXT"),
        ("polarity", "TEXT"), ("condition", "TEXT"), ("confidence", "DOUBLE PRECISION"),
        ("status", "TEXT"), ("evidence_ids", "TEXT"), ("competing_ids", "TEXT")),
    "causal_tool_call": (
        ("episode_id", "TEXT"), ("seq", "BIGINT"), ("tool", "TEXT"), ("args_hash", "TEXT"),
        ("result_hash", "TEXT"), ("returned_edges", "BIGINT"), ("latency_ms", "BIGINT"),
        ("cost_usd", "DOUBLE PRECISION")),
    "experiment": (
        ("exp_id", "TEXT"), ("episode_id", "TEXT"), ("seq", "BIGINT"),
        ("proposed_seq", "BIGINT"), ("executed_seq", "BIGINT"), ("discriminates", "TEXT"),
        ("predicted", "TEXT"), ("observed", "TEXT"), ("cost", "DOUBLE PRECISION")),
    "intervention_prediction": (
        ("pred_id", "TEXT"), ("claim_id", "TEXT"), ("episode_id", "TEXT"), ("seq", "BIGINT"),
        ("action", "TEXT"), ("predicted_effect", "TEXT"), ("p", "DOUBLE PRECISION"),
        ("executed", "BIGINT"), ("observed_effect", "TEXT"), ("resolved_t", "TEXT"),
        ("resolver", "TEXT")),
    "graph_write": (
        ("episode_id", "TEXT"), ("seq", "BIGINT"), ("op", "TEXT"), ("cause", "TEXT"),
        ("effect", "TEXT"), ("provenance", "TEXT"), ("source_claim_id", "TEXT")),
    "model_revision": (
        ("rev_id", "TEXT"), ("claim_id", "TEXT"), ("episode_id", "TEXT"), ("seq", "BIGINT"),
        ("old_status", "TEXT"), ("new_status", "TEXT"), ("trigger_evidence_id", "TEXT")),
}
"""Seed columns of each table (plus ``episode_id``/``seq`` where the seed lacks them)."""

TABLE_NAMES = tuple(TABLES)

PRIMARY_KEYS = {"causal_claim": "claim_id"}
"""The seed's one declared primary key; the other tables are keyed by ``log_seq``."""

OPPORTUNITY_KINDS = ("why", "what_if", "which_fix", "root_cause", "will_X_help")
ROUTES = ("causal()", "graph", "prose", "none")
RUNGS = ("observation", "intervention", "counterfactual")
POLARITIES = ("positive", "negative")
CLAIM_STATUSES = ("hypothesis", "asserted", "retracted")
RESOLVERS = ("telemetry", "sandbox", "operator")
"""Independent resolvers (seed: system telemetry, a sandbox result, or Bink)."""
GRAPH_OPS = ("insert", "update", "delete")


def column_names(table: str) -> tuple[str, ...]:
    """Every column of ``table`` in stored order (seed columns, then chain columns)."""
    return tuple(c for c, _ in TABLES[table]) + CHAIN_COLUMNS


def table_ddl(table: str) -> str:
    """``CREATE TABLE`` for ``table``: plain types, valid on SQLite and PostgreSQL."""
    cols = [f"{name} {kind}" + (" PRIMARY KEY" if PRIMARY_KEYS.get(table) == name else "")
            for name, kind in TABLES[table]]
    cols += ["log_seq BIGINT NOT NULL UNIQUE", "logged_t TEXT NOT NULL",
             "event TEXT NOT NULL", "peer_uid BIGINT", "prev_hash TEXT NOT NULL",
             "hash TEXT NOT NULL"]
    return f"CREATE TABLE {table} (\n  " + ",\n  ".join(cols) + "\n)"


def index_ddl(table: str) -> list[str]:
    """Indexes for the logger's reference checks and the weekly joins (portable SQL)."""
    out = [f"CREATE INDEX {table}_episode ON {table} (episode_id, seq)"]
    for key in ("claim_id", "exp_id", "pred_id", "rev_id"):
        if key in dict(TABLES[table]) and PRIMARY_KEYS.get(table) != key:
            out.append(f"CREATE INDEX {table}_{key} ON {table} ({key})")
    return out


TABLE_DDL: tuple[str, ...] = tuple(
    stmt for t in TABLE_NAMES for stmt in [table_ddl(t), *index_ddl(t)])
"""Every statement that creates the store; each is valid SQLite and PostgreSQL."""


def guard_ddl(table: str, dialect: Dialect) -> list[str]:
    """The guards refusing UPDATE and DELETE on ``table`` in ``dialect`` (defence in depth).

    Whoever owns the table can drop them; the chain is what finds such an edit.
    """
    return append_only_guards(table, dialect)


def sqlite_guard_ddl(table: str) -> list[str]:
    """SQLite triggers refusing UPDATE and DELETE on ``table`` (:func:`guard_ddl`)."""
    return guard_ddl(table, "sqlite")


STORE_META_DDL = "CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
"""The schema-version table (portable SQL)."""


def create_store(db: Connection) -> None:
    """Create the tables, indexes and guards in an empty database (SQLite or PostgreSQL)."""
    sql = wrap(db)
    if isinstance(db, sqlite3.Connection):
        if _missing_tables(sql) is None:
            return
        with db:
            _create(sql)
        return
    with sql.transaction(schema=True):
        _create(sql)


def _missing_tables(sql: Database) -> list[str] | None:
    """None when every chained table exists; the full list when none does; else refuse."""
    existing = sql.tables()
    missing = [t for t in TABLE_NAMES if t not in existing]
    if not missing:
        return None
    if len(missing) != len(TABLE_NAMES):
        raise IntegrityError(f"claim store is partial: tables {missing} are missing")
    return missing


def _create(sql: Database) -> None:
    if _missing_tables(sql) is None:  # another process created it while we waited
        return
    for stmt in TABLE_DDL:
        sql.execute(stmt)
    for t in TABLE_NAMES:
        for stmt in guard_ddl(t, sql.dialect):
            sql.execute(stmt)
    sql.execute(STORE_META_DDL)
    sql.execute("INSERT INTO store_meta VALUES ('schema', ?)", (SCHEMA_VERSION,))


def open_target(target: str | Path, *, readonly: bool = False, create: bool = False,
                timeout: float = 30.0) -> Database:
    """Open a claim store at a file path or a ``postgresql://`` URL and check its schema.

    ``create``: create the tables first when the database has none (never half a store).
    A missing file is an IntegrityError unless ``create``; a reader never creates anything.
    """
    if not is_url(target) and not create and not Path(target).is_file():
        raise IntegrityError(f"{target}: no claim store at this path")
    db = connect(target, readonly=readonly, timeout=timeout)
    try:
        if create:
            create_store(db)
        check_schema(db, db.where)
    except BaseException:
        db.close()
        raise
    return db


def check_schema(db: Connection, path: str) -> None:
    """Refuse a database that is not a claim store of this schema version (IntegrityError)."""
    sql = wrap(db)
    where = redact(path)
    try:
        row = sql.execute("SELECT value FROM store_meta WHERE key='schema'").fetchone()
    except DB_ERRORS as exc:
        raise IntegrityError(f"{where}: not a claim store ({exc})") from exc
    if row is None or row[0] != SCHEMA_VERSION:
        raise IntegrityError(f"{where}: schema {row and row[0]!r}, expected {SCHEMA_VERSION!r}")
    for t in TABLE_NAMES:
        cols = sql.columns(t)
        if cols != column_names(t):
            raise IntegrityError(f"{where}: table {t} has columns {cols}")


# ---------------------------------------------------------------- events and validation

FieldCheck = Callable[[Any], str | None]
"""Returns None when the value is valid, else a short description of what is wrong."""


def _text(max_len: int = 4096) -> FieldCheck:
    def check(v: Any) -> str | None:
        if not isinstance(v, str) or not v.strip():
            return "must be a non-empty string"
        return None if len(v) <= max_len else f"longer than {max_len} characters"
    return check


def _one_of(values: Sequence[str]) -> FieldCheck:
    def check(v: Any) -> str | None:
        return None if v in values else f"must be one of {', '.join(values)}"
    return check


def _int(minimum: int = 0) -> FieldCheck:
    def check(v: Any) -> str | None:
        ok = isinstance(v, int) and not isinstance(v, bool) and minimum <= v < 2**53
        return None if ok else f"must be an integer >= {minimum}"
    return check


def _real(lo: float = 0.0, hi: float = math.inf) -> FieldCheck:
    def check(v: Any) -> str | None:
        ok = (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
              and lo <= v <= hi)
        return None if ok else f"must be a finite number in [{lo}, {hi}]"
    return check


_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def _digest(v: Any) -> str | None:
    return None if isinstance(v, str) and _DIGEST.match(v) else "must be sha256:<64 hex>"


def _time(v: Any) -> str | None:
    return None if isinstance(v, str) and _TIME.match(v) else "must be UTC ISO-8601 …Z"


def _ids(v: Any) -> str | None:
    ok = isinstance(v, list) and all(isinstance(x, str) and x for x in v) and len(v) <= 256
    return None if ok else "must be a list of non-empty strings"


def _bit(v: Any) -> str | None:
    return None if v in (0, 1) and not isinstance(v, bool) else "must be 0 or 1"


@dataclass(frozen=True)
class EventSpec:
    """One event type of the socket protocol and the table it appends to."""

    table: str
    """Table the event appends one row to."""
    required: Mapping[str, FieldCheck]
    """Fields the event must carry, with their checks."""
    optional: Mapping[str, FieldCheck] = field(default_factory=dict)
    """Fields it may carry (stored NULL when absent)."""
    unique: tuple[str, ...] = ()
    """Fields whose values no earlier row of the same event type may share."""
    refers: tuple[tuple[str, str, str], ...] = ()
    """(field, event type, field) references that must already be stored."""


_EPISODE = {"episode_id": _text(256), "seq": _int(0)}

EVENTS: dict[str, EventSpec] = {
    "opportunity": EventSpec(
        "causal_opportunity",
        {**_EPISODE, "t": _time, "detector_version": _text(64),
         "kind": _one_of(OPPORTUNITY_KINDS), "text_span_hash": _digest},
        {"routed_to": _one_of(ROUTES)}, unique=("episode_id", "seq")),
    "claim": EventSpec(
        "causal_claim",
        {"claim_id": _text(256), **_EPISODE, "t": _time, "author": _text(128),
         "rung": _one_of(RUNGS), "cause": _text(), "effect": _text(),
         "polarity": _one_of(POLARITIES), "confidence": _real(0.0, 1.0),
         "status": _one_of(CLAIM_STATUSES), "evidence_ids": _ids, "competing_ids": _ids},
        {"condition": _text()}, unique=("claim_id",)),
    "tool_call": EventSpec(
        "causal_tool_call",
        {**_EPISODE, "tool": _text(128), "args_hash": _digest, "result_hash": _digest,
         "returned_edges": _int(0), "latency_ms": _int(0), "cost_usd": _real()},
        unique=("episode_id", "seq")),
    "experiment_proposed": EventSpec(
        "experiment",
        {"exp_id": _text(256), **_EPISODE, "proposed_seq": _int(0), "discriminates": _ids,
         "predicted": _text()},
        {"cost": _real()}, unique=("exp_id",)),
    "experiment_executed": EventSpec(
        "experiment",
        {"exp_id": _text(256), **_EPISODE, "executed_seq": _int(0), "observed": _text()},
        unique=("exp_id",), refers=(("exp_id", "experiment_proposed", "exp_id"),)),
    "prediction": EventSpec(
        "intervention_prediction",
        {"pred_id": _text(256), "claim_id": _text(256), **_EPISODE, "action": _text(),
         "predicted_effect": _text(), "p": _real(0.0, 1.0)},
        unique=("pred_id",), refers=(("claim_id", "claim", "claim_id"),)),
    "resolution": EventSpec(
        "intervention_prediction",
        {"pred_id": _text(256), **_EPISODE, "executed": _bit, "observed_effect": _text(),
         "resolved_t": _time, "resolver": _one_of(RESOLVERS)},
        unique=("pred_id",), refers=(("pred_id", "prediction", "pred_id"),)),
    "graph_write": EventSpec(
        "graph_write",
        {**_EPISODE, "op": _one_of(GRAPH_OPS), "cause": _text(), "effect": _text(),
         "provenance": _text()},
        {"source_claim_id": _text(256)}, unique=("episode_id", "seq")),
    "model_revision": EventSpec(
        "model_revision",
        {"rev_id": _text(256), "claim_id": _text(256), **_EPISODE,
         "old_status": _one_of(CLAIM_STATUSES), "new_status": _one_of(CLAIM_STATUSES),
         "trigger_evidence_id": _text(256)},
        unique=("rev_id",), refers=(("claim_id", "claim", "claim_id"),)),
}
"""Every event type the logger accepts; anything else is refused ``unknown_event_type``."""

LIST_FIELDS = ("evidence_ids", "competing_ids", "discriminates")
"""Fields sent as JSON lists and stored as canonical JSON text."""


def refusal(code: str, detail: str, subject: str | None = None) -> Refusal:
    """The logger's refusal: one machine-readable reason."""
    return Refusal([Reason(code, detail, subject)], gate="claim store")


def validate_event(event_type: Any, fields: Any, *, namespace: str | None = None,
                   reserved: Sequence[str] = ()) -> dict[str, Any]:
    """The row values of a valid event, else a :class:`Refusal` naming the bad field.

    ``namespace``: every ``episode_id`` must start with it (a benchmark logger);
    ``reserved``: prefixes no ``episode_id`` may start with (the production logger refuses
    the benchmark namespace). Reason codes: ``unknown_event_type``, ``not_an_object``,
    ``unknown_field``, ``missing_field``, ``invalid_field``, ``namespace``.
    """
    if not isinstance(event_type, str) or event_type not in EVENTS:
        raise refusal("unknown_event_type", f"event type {event_type!r} is not one of "
                      f"{', '.join(EVENTS)}", "type")
    if not isinstance(fields, dict):
        raise refusal("not_an_object", "fields must be a JSON object", "fields")
    spec = EVENTS[event_type]
    allowed = {**spec.required, **spec.optional}
    for name in sorted(fields):
        if name not in allowed:
            raise refusal("unknown_field", f"{event_type} has no field {name!r}", name)
    for name in spec.required:
        if name not in fields or fields[name] is None:
            raise refusal("missing_field", f"{event_type} needs field {name!r}", name)
    for name, check in allowed.items():
        if fields.get(name) is not None and (problem := check(fields[name])) is not None:
            raise refusal("invalid_field", f"{name} {problem} (got {fields[name]!r:.80})", name)
    episode = fields["episode_id"]
    if namespace is not None and not episode.startswith(namespace):
        raise refusal("namespace", f"episode_id {episode!r} is outside namespace "
                      f"{namespace!r}", "episode_id")
    for prefix in reserved:
        if episode.startswith(prefix):
            raise refusal("namespace", f"episode_id {episode!r} is in the reserved "
                          f"namespace {prefix!r}", "episode_id")
    return {k: (_list_text(v) if k in LIST_FIELDS else v) for k, v in fields.items()
            if v is not None}


def _list_text(values: list[str]) -> str:
    return canonical_bytes(values).decode("utf-8")


# ---------------------------------------------------------------- hashing and appends


def row_hash(table: str, row: Mapping[str, Any]) -> str:
    """``sha256:`` digest of the canonical JSON of the row without its ``hash``."""
    body = {k: row.get(k) for k in column_names(table) if k != "hash"}
    return "sha256:" + hashlib.sha256(canonical_bytes({"table": table, "row": body})).hexdigest()


@dataclass(frozen=True)
class Receipt:
    """What the logger acknowledges for one stored event: the chain head it created."""

    table: str
    """Table the row went to."""
    log_seq: int
    """The row's position in its table's chain."""
    hash: str
    """The row's hash (an anchor for :func:`verify_store`)."""

    def to_json(self) -> dict[str, Any]:
        """JSON form sent back over the socket."""
        return {"table": self.table, "log_seq": self.log_seq, "hash": self.hash}


_FLOAT_COLUMNS = {t: frozenset(c for c, kind in cols if kind == "DOUBLE PRECISION")
                  for t, cols in TABLES.items()}


class Appender:
    """Appends validated events to a store (SQLite or PostgreSQL), extending each table's chain.

    Holds each table's head in memory; the caller serialises calls and commits, or uses
    :meth:`transaction`, which takes the writer lock and re-reads the heads.
    """

    def __init__(self, db: Connection) -> None:
        self.db = db
        self._sql = wrap(db)
        self.heads: dict[str, tuple[int, str]] = {t: head(db, t) for t in TABLE_NAMES}

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Appender]:
        """One write transaction holding the writer lock; heads re-read first, committed on
        success, rolled back (and heads re-read) on any exception."""
        self._sql.begin(write=True, lock=TABLE_NAMES)
        try:
            self.reload()
            yield self
            self._sql.commit()
        except BaseException:
            with contextlib.suppress(*DB_ERRORS):
                self._sql.rollback()
            with contextlib.suppress(*DB_ERRORS):
                self.reload()
            raise

    def append(self, event_type: str, values: Mapping[str, Any], logged_t: str,
               peer_uid: int | None = None) -> Receipt:
        """Insert one row (inside the caller's transaction); Refusal on key or reference."""
        spec = EVENTS[event_type]
        self._check_keys(event_type, spec, values)
        n, prev = self.heads[spec.table]
        floats = _FLOAT_COLUMNS[spec.table]
        row: dict[str, Any] = {c: float(values[c]) if c in floats and values.get(c) is not None
                               else values.get(c) for c, _ in TABLES[spec.table]}
        row.update(log_seq=n + 1, logged_t=logged_t, event=event_type, peer_uid=peer_uid,
                   prev_hash=prev)
        row["hash"] = row_hash(spec.table, row)
        cols = column_names(spec.table)
        self._sql.execute(f"INSERT INTO {spec.table} ({', '.join(cols)}) VALUES "
                        f"({', '.join('?' for _ in cols)})", [row[c] for c in cols])
        self.heads[spec.table] = (n + 1, row["hash"])
        return Receipt(spec.table, n + 1, row["hash"])

    def reload(self) -> None:
        """Re-read every head (after a rolled-back transaction)."""
        self.heads = {t: head(self.db, t) for t in TABLE_NAMES}

    def _check_keys(self, event_type: str, spec: EventSpec, values: Mapping[str, Any]) -> None:
        if spec.unique:
            where = " AND ".join(f"{k} = ?" for k in spec.unique)
            hit = self._sql.execute(
                f"SELECT 1 FROM {spec.table} WHERE event = ? AND {where} LIMIT 1",
                [event_type, *(values[k] for k in spec.unique)]).fetchone()
            if hit is not None:
                key = ", ".join(f"{k}={values[k]!r}" for k in spec.unique)
                raise refusal("duplicate_key", f"{event_type} with {key} is already stored",
                              spec.unique[0])
        for name, other, other_field in spec.refers:
            table = EVENTS[other].table
            hit = self._sql.execute(
                f"SELECT 1 FROM {table} WHERE event = ? AND {other_field} = ? LIMIT 1",
                (other, values[name])).fetchone()
            if hit is None:
                raise refusal("unknown_reference", f"no stored {other} with {other_field}="
                              f"{values[name]!r}", name)


def head(db: Connection, table: str) -> tuple[int, str]:
    """(row count, last hash) of ``table``'s chain; (0, GENESIS) when empty."""
    row = wrap(db).execute(f"SELECT log_seq, hash FROM {table} ORDER BY log_seq DESC LIMIT 1"
                     ).fetchone()
    return (0, GENESIS) if row is None else (int(row[0]), str(row[1]))


def row_counts(db: Connection) -> dict[str, int]:
    """Rows per table (the test-isolation gate compares these before and after a run)."""
    sql = wrap(db)
    return {t: int(sql.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]) for t in TABLE_NAMES}


def require_unchanged(before: Mapping[str, int], after: Mapping[str, int]) -> None:
    """Seed "Test isolation": a benchmark run must leave production row counts unchanged."""
    changed = [Reason("production_rows_changed", f"{t}: {before.get(t)} rows before the run, "
                      f"{after.get(t)} after", t)
               for t in sorted(set(before) | set(after)) if before.get(t) != after.get(t)]
    if changed:
        raise Refusal(changed, gate="test isolation")


@contextlib.contextmanager
def production_unchanged(production_db: str | Path) -> Iterator[dict[str, int]]:
    """Run a benchmark inside the block; fail it unless production row counts are unchanged.

    Seed "Test isolation": benchmark episodes go to a scratch store under the ``bench:``
    namespace; "a pre-run and post-run row count on production memory tables must match
    exactly; any difference fails the run" (Refusal ``production_rows_changed``).
    """
    yield (before := _counts_at(production_db))
    require_unchanged(before, _counts_at(production_db))


def _counts_at(target: str | Path) -> dict[str, int]:
    db = open_target(target, readonly=True)
    try:
        return row_counts(db)
    finally:
        db.close()


# ---------------------------------------------------------------- chain verification


@dataclass(frozen=True)
class ChainProblem:
    """One row where a table's chain breaks."""

    table: str
    """Table whose chain breaks."""
    log_seq: int
    """The row named (for ``deleted``, the first missing position)."""
    code: Literal["edited", "deleted", "reordered", "broken_link", "bad_anchor"]
    """What happened to it."""
    detail: str
    """Human-readable account naming the row's key."""

    def to_json(self) -> dict[str, Any]:
        """JSON form for ``logger verify --json``."""
        return {"table": self.table, "log_seq": self.log_seq, "code": self.code,
                "detail": self.detail}


@dataclass(frozen=True)
class StoreReport:
    """Result of verifying every chain of a store."""

    path: str
    """The database file verified."""
    rows: Mapping[str, int]
    """Rows per table."""
    heads: Mapping[str, str]
    """Last hash per table."""
    problems: tuple[ChainProblem, ...]
    """Every break found (empty when intact)."""

    @property
    def ok(self) -> bool:
        """True when no chain breaks."""
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        """JSON form for ``logger verify --json``."""
        return {"path": self.path, "ok": self.ok, "rows": dict(self.rows),
                "heads": dict(self.heads), "problems": [p.to_json() for p in self.problems]}

    def require_ok(self) -> None:
        """Raise IntegrityError naming the first broken rows."""
        if self.problems:
            named = "; ".join(f"{p.table} row {p.log_seq} {p.code}: {p.detail}"
                              for p in self.problems[:5])
            raise IntegrityError(f"{self.path}: {len(self.problems)} chain problem(s): {named}")


def _key(table: str, row: Mapping[str, Any]) -> str:
    for k in ("claim_id", "exp_id", "pred_id", "rev_id"):
        if row.get(k) is not None:
            return f"{k}={row[k]!r}"
    return f"episode_id={row.get('episode_id')!r} seq={row.get('seq')!r}"


def verify_table(db: Connection, table: str,
                 anchor: tuple[int, str] | None = None) -> tuple[list[ChainProblem], int, str]:
    """Walk ``table``'s chain; return its problems, row count and last hash."""
    cols = column_names(table)
    rows = [dict(zip(cols, r, strict=True))
            for r in wrap(db).execute(f"SELECT {', '.join(cols)} FROM {table} ORDER BY log_seq")]
    stored = {r["hash"]: r["log_seq"] for r in rows}
    problems: list[ChainProblem] = []
    expected, prev = 1, GENESIS
    for r in rows:
        seq = r["log_seq"]
        if not isinstance(seq, int) or isinstance(seq, bool):
            problems.append(ChainProblem(table, -1, "edited", f"log_seq {seq!r} is not an "
                                         f"integer ({_key(table, r)})"))
            continue
        if row_hash(table, r) != r["hash"]:
            problems.append(ChainProblem(table, seq, "edited", f"row {seq} ({_key(table, r)}) "
                                         "no longer hashes to its stored hash"))
        elif seq > expected:
            problems.append(ChainProblem(table, expected, "deleted", f"rows {expected}–{seq - 1}"
                                         f" are missing before row {seq} ({_key(table, r)})"))
        elif r["prev_hash"] != prev:
            other = stored.get(r["prev_hash"])
            if other is not None:
                problems.append(ChainProblem(table, seq, "reordered", f"row {seq} "
                                             f"({_key(table, r)}) follows row {other}, "
                                             f"not row {seq - 1}"))
            else:
                problems.append(ChainProblem(table, seq, "broken_link", f"row {seq} "
                                             f"({_key(table, r)}) links to an unknown hash"))
        expected, prev = seq + 1, r["hash"]
    n = len(rows)
    if anchor is not None:
        a_seq, a_hash = anchor
        found = next((r for r in rows if r["log_seq"] == a_seq), None)
        if found is None or found["hash"] != a_hash:
            problems.append(ChainProblem(table, a_seq, "bad_anchor", f"acknowledged row "
                                         f"{a_seq} with hash {a_hash} is not in the chain"))
    return problems, n, prev


def verify_connection(db: Connection, path: str,
                      anchors: Mapping[str, tuple[int, str]] | None = None) -> StoreReport:
    """Verify every table's chain through an open connection."""
    check_schema(db, path)
    problems: list[ChainProblem] = []
    rows: dict[str, int] = {}
    heads: dict[str, str] = {}
    for t in TABLE_NAMES:
        found, rows[t], heads[t] = verify_table(db, t, (anchors or {}).get(t))
        problems.extend(found)
    return StoreReport(redact(path), rows, heads, tuple(problems))


def open_readonly(path: str | Path) -> sqlite3.Connection:
    """Open an existing store read-only (a reader never creates or migrates a file)."""
    p = Path(path)
    if not p.is_file():
        raise IntegrityError(f"{p}: no claim store at this path")
    return sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro", uri=True)


def verify_store(path: str | Path,
                 anchors: Mapping[str, tuple[int, str]] | None = None) -> StoreReport:
    """Verify every chain of the store at ``path``, a file or a ``postgresql://`` URL
    (``anchors``: acknowledged heads)."""
    if not is_url(path):
        lite = open_readonly(path)
        try:
            return verify_connection(lite, str(path), anchors)
        finally:
            lite.close()
    db = connect(path, readonly=True)
    try:
        return verify_connection(db, db.where, anchors)
    finally:
        db.close()


def anchors_from(receipts: Iterable[Receipt]) -> dict[str, tuple[int, str]]:
    """The latest acknowledged head per table from a client's receipts."""
    out: dict[str, tuple[int, str]] = {}
    for r in receipts:
        if r.table not in out or r.log_seq > out[r.table][0]:
            out[r.table] = (r.log_seq, r.hash)
    return out


def decode_list(text: str | None) -> list[str]:
    """A stored list field back as a list (NULL is an empty list)."""
    if text is None:
        return []
    value = json.loads(text)
    if not isinstance(value, list):
        raise IntegrityError(f"list field holds {type(value).__name__}")
    return [str(v) for v in value]
