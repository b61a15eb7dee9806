"""The typed causal graph store of seed 003 (proposal P5), on SQLite (default) or PostgreSQL.

Tables (:data:`DDL`):

- ``causal_edges`` — one typed edge per row: ``cause``, ``effect`` (direction is column
  order), ``relation_kind`` (causal_claim · correlation · dependency · chronology ·
  part_of · other), ``polarity`` (``+`` causes, ``-`` prevents), ``condition`` (NULL when
  unconditional), ``status`` (asserted | inferred | tested), ``source_id``,
  ``observed_at``, ``scope``, ``contrary_ids`` (a JSON array of edge ids, ``[]`` if none);
- ``node_alias`` — ``alias`` → canonical ``node`` (aliases are stored lower-cased);
- ``source_text`` — the declared text stores the leakage scan reads (``kind`` is
  ``source``, ``summary`` or ``episode``);
- ``store_meta`` — ``schema_version``.

**Portability.** The DDL uses only ``TEXT``/``INTEGER`` columns, ``PRIMARY KEY``,
``NOT NULL``, ``CHECK (... IN (...))`` and ``CREATE INDEX``: no ``AUTOINCREMENT``,
``WITHOUT ROWID``, ``STRICT``, ``IF NOT EXISTS`` on indexes or type affinity tricks.
It was checked by running every statement of :data:`DDL` and :data:`LEGACY_DDL` on a
throw-away PostgreSQL 15 server (``initdb`` + ``pg_ctl`` + ``psql``):
``tests/causal/instrument/test_graph_store.py::test_ddl_runs_on_postgresql`` does it
whenever the PostgreSQL binaries are installed.

**PostgreSQL.** :meth:`GraphStore.create`, :meth:`GraphStore.open`, :func:`write_store` and
:func:`migrate_legacy` also take a ``postgresql://`` URL (or an open
:class:`~rungbench.evidence.database.Database`): the store is the database's tables, made
by the same :data:`DDL`. ``open`` is a read-only session (``default_transaction_read_only``),
as a file store is opened ``mode=ro``. Row order never depends on the server's collation:
lists ordered by a text key are sorted in Python (code-point order, which is SQLite's
``BINARY`` order), so both backends return the same lists. On PostgreSQL the legacy table's
row order is its physical order (``ctid``), which is insertion order for a table that was
only ever inserted into; SQLite's is ``rowid``.

**Migration.** :func:`migrate_legacy` turns the untyped production table
(``causal_edges(cause, effect)``, :data:`LEGACY_DDL`) into the typed one; it counts rows
before and after and compares a seeded sample of rows field by field, and raises
:class:`~rungbench.errors.IntegrityError` (the transaction rolled back) on any loss.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rungbench.errors import InputError, IntegrityError
from rungbench.evidence.database import DB_ERRORS, Database, connect, is_url, redact, wrap

SCHEMA_VERSION = 1
RELATION_KINDS = ("causal_claim", "correlation", "dependency", "chronology", "part_of", "other")
STATUSES = ("asserted", "inferred", "tested")
POLARITIES = ("+", "-")
SOURCE_KINDS = ("source", "summary", "episode")


def _in(values: Sequence[str]) -> str:
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"


DDL: tuple[str, ...] = (
    "CREATE TABLE causal_edges ("
    " edge_id TEXT PRIMARY KEY,"
    " cause TEXT NOT NULL,"
    " effect TEXT NOT NULL,"
    f" relation_kind TEXT NOT NULL CHECK (relation_kind IN {_in(RELATION_KINDS)}),"
    f" polarity TEXT NOT NULL CHECK (polarity IN {_in(POLARITIES)}),"
    " condition TEXT,"
    f" status TEXT NOT NULL CHECK (status IN {_in(STATUSES)}),"
    " source_id TEXT,"
    " observed_at TEXT,"
    " scope TEXT,"
    " contrary_ids TEXT NOT NULL)",
    "CREATE INDEX causal_edges_cause ON causal_edges (cause)",
    "CREATE INDEX causal_edges_effect ON causal_edges (effect)",
    "CREATE TABLE node_alias (alias TEXT PRIMARY KEY, node TEXT NOT NULL)",
    "CREATE TABLE source_text ("
    " source_id TEXT PRIMARY KEY,"
    f" kind TEXT NOT NULL CHECK (kind IN {_in(SOURCE_KINDS)}),"
    " body TEXT NOT NULL)",
    "CREATE TABLE store_meta (schema_version INTEGER NOT NULL)",
)
"""Typed schema; every statement is also valid PostgreSQL (see the module docstring)."""

LEGACY_DDL: tuple[str, ...] = ("CREATE TABLE causal_edges (cause TEXT, effect TEXT)",)
"""The untyped production table the migration starts from (direction = column order)."""

EDGE_COLUMNS = ("edge_id", "cause", "effect", "relation_kind", "polarity", "condition",
                "status", "source_id", "observed_at", "scope", "contrary_ids")


@dataclass(frozen=True)
class Edge:
    """One typed edge of the store."""

    edge_id: str
    """Stable identifier (primary key)."""
    cause: str
    """Canonical name of the cause node (direction is cause → effect)."""
    effect: str
    """Canonical name of the effect node."""
    relation_kind: str = "causal_claim"
    """One of :data:`RELATION_KINDS`; only ``causal_claim`` edges are causal."""
    polarity: str = "+"
    """``+`` (cause raises / produces effect) or ``-`` (cause prevents effect)."""
    condition: str | None = None
    """The condition under which the edge holds, or None when unconditional."""
    status: str = "asserted"
    """asserted (stated by a source) · inferred (by an extractor) · tested (experiment)."""
    source_id: str | None = None
    """Id of the ``source_text`` row the edge was extracted from."""
    observed_at: str | None = None
    """ISO-8601 time the source was observed."""
    scope: str | None = None
    """Scope in which the claim was made (host, service, episode)."""
    contrary_ids: tuple[str, ...] = ()
    """Ids of edges that contradict this one."""

    def row(self) -> tuple[str | None, ...]:
        """The edge as a ``causal_edges`` row (``contrary_ids`` JSON-encoded)."""
        return (self.edge_id, self.cause, self.effect, self.relation_kind, self.polarity,
                self.condition, self.status, self.source_id, self.observed_at, self.scope,
                json.dumps(list(self.contrary_ids)))


@dataclass(frozen=True)
class SourceText:
    """One row of a declared text store (source document, summary or episode)."""

    source_id: str
    """Primary key, referenced by ``causal_edges.source_id``."""
    kind: str
    """One of :data:`SOURCE_KINDS`."""
    body: str
    """The text."""


def normalize(name: str) -> str:
    """Lower-case and collapse whitespace: the store's node-name normal form."""
    return " ".join(name.lower().split())


def _edge(row: Sequence[object]) -> Edge:
    (edge_id, cause, effect, kind, polarity, condition, status, source_id, observed_at,
     scope, contrary) = row
    return Edge(str(edge_id), str(cause), str(effect), str(kind), str(polarity),
                None if condition is None else str(condition), str(status),
                None if source_id is None else str(source_id),
                None if observed_at is None else str(observed_at),
                None if scope is None else str(scope), tuple(json.loads(str(contrary))))


class GraphStore:
    """A typed graph store on one connection: an SQLite file or ``:memory:`` (``conn`` a
    ``sqlite3.Connection``), or a PostgreSQL database (``conn`` a ``Database``)."""

    def __init__(self, conn: sqlite3.Connection | Database, path: str) -> None:
        self.conn = conn
        self.path = redact(path)
        self._sql = wrap(conn)
        self._aliases: dict[str, str] | None = None

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._sql.dialect

    @classmethod
    def create(cls, path: str | Path) -> GraphStore:
        """Create a new store (the file must not exist; a database must hold no store)."""
        where = str(path)
        if is_url(where):
            db = connect(where)
            try:
                with db.transaction(schema=True):
                    if "causal_edges" in db.tables():
                        raise InputError("graph store already exists", path=db.where)
                    _create_schema(db)
            except BaseException:
                db.close()
                raise
            return cls(db, where)
        if where != ":memory:" and Path(where).exists():
            raise InputError("graph store already exists", path=where)
        conn = sqlite3.connect(where, check_same_thread=False)
        with conn:
            _create_schema(wrap(conn))
        return cls(conn, where)

    @classmethod
    def open(cls, path: str | Path) -> GraphStore:
        """Open an existing store read-only, verifying its schema; InputError otherwise."""
        where = str(path)
        if is_url(where):
            db = connect(where, readonly=True)
        elif not Path(where).is_file():
            raise InputError("no graph store at this path", path=where)
        else:
            db = wrap(sqlite3.connect(f"file:{where}?mode=ro", uri=True,
                                      check_same_thread=False))
        try:
            columns = db.columns("causal_edges")
            version = db.execute("SELECT schema_version FROM store_meta").fetchone()
        except DB_ERRORS as exc:
            db.raw.close()
            raise InputError(f"not a typed graph store ({exc})", path=redact(where)) from exc
        if columns != EDGE_COLUMNS or version is None or version[0] != SCHEMA_VERSION:
            db.raw.close()
            raise InputError(f"schema mismatch: columns {columns}, version {version}",
                             path=redact(where), field="causal_edges")
        return cls(db if db.dialect == "postgresql" else db.raw, where)

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def add(self, edges: Iterable[Edge] = (), aliases: Iterable[tuple[str, str]] = (),
            sources: Iterable[SourceText] = ()) -> None:
        """Insert edges, ``(alias, node)`` pairs and source texts in one transaction."""
        marks = ", ".join("?" * len(EDGE_COLUMNS))
        with self._atomic():
            self._sql.executemany(f"INSERT INTO causal_edges VALUES ({marks})",
                                  [e.row() for e in edges])
            self._sql.executemany("INSERT INTO node_alias VALUES (?, ?)",
                                  [(normalize(a), n) for a, n in aliases])
            self._sql.executemany("INSERT INTO source_text VALUES (?, ?, ?)",
                                  [(s.source_id, s.kind, s.body) for s in sources])
        self._aliases = None

    @contextmanager
    def _atomic(self) -> Iterator[None]:
        if isinstance(self.conn, sqlite3.Connection):
            with self.conn:
                yield
        else:
            with self.conn.transaction():
                yield

    def edges(self) -> list[Edge]:
        """Every edge, ordered by ``edge_id``."""
        sql = f"SELECT {', '.join(EDGE_COLUMNS)} FROM causal_edges ORDER BY edge_id"
        return _by_id([_edge(r) for r in self._sql.execute(sql)])

    def sources(self) -> list[SourceText]:
        """Every declared text, ordered by id."""
        rows = self._sql.execute("SELECT source_id, kind, body FROM source_text ORDER BY 1")
        return sorted((SourceText(str(a), str(b), str(c)) for a, b, c in rows),
                      key=lambda s: s.source_id)

    def aliases(self) -> dict[str, str]:
        """The alias table: normalized alias → canonical node (read once per connection)."""
        if self._aliases is None:
            rows = self._sql.execute("SELECT alias, node FROM node_alias")
            self._aliases = {str(a): str(n) for a, n in rows}
        return dict(self._aliases)

    def count(self) -> int:
        """Number of edges."""
        return int(self._sql.execute("SELECT COUNT(*) FROM causal_edges").fetchone()[0])

    def touching(self, node: str) -> list[Edge]:
        """Edges with ``node`` as cause or effect (exact string)."""
        sql = (f"SELECT {', '.join(EDGE_COLUMNS)} FROM causal_edges WHERE cause = ? "
               "UNION SELECT " + ", ".join(EDGE_COLUMNS) + " FROM causal_edges WHERE effect = ?")
        return [_edge(r) for r in self._sql.execute(sql, (node, node))]

    def out_edges(self, node: str) -> list[Edge]:
        """Edges whose cause is ``node``, ordered by ``edge_id``."""
        sql = f"SELECT {', '.join(EDGE_COLUMNS)} FROM causal_edges WHERE cause = ? ORDER BY 1"
        return _by_id([_edge(r) for r in self._sql.execute(sql, (node,))])

    def in_edges(self, node: str) -> list[Edge]:
        """Edges whose effect is ``node``, ordered by ``edge_id``."""
        sql = f"SELECT {', '.join(EDGE_COLUMNS)} FROM causal_edges WHERE effect = ? ORDER BY 1"
        return _by_id([_edge(r) for r in self._sql.execute(sql, (node,))])

    def has_node(self, node: str) -> bool:
        """Whether any edge names ``node`` (exact string)."""
        sql = ("SELECT 1 FROM causal_edges WHERE cause = ? UNION ALL "
               "SELECT 1 FROM causal_edges WHERE effect = ? LIMIT 1")
        return self._sql.execute(sql, (node, node)).fetchone() is not None

    def lookup(self, cause: str, effect: str, polarity: str, condition: str | None) -> bool:
        """Stage 1 of the control matrix: direct SQL for one exact typed causal edge."""
        sql = ("SELECT COUNT(*) FROM causal_edges WHERE cause = ? AND effect = ? AND "
               "relation_kind = 'causal_claim' AND polarity = ? AND "
               + ("condition IS NULL" if condition is None else "condition = ?"))
        args: tuple[str, ...] = (cause, effect, polarity) + (() if condition is None
                                                             else (condition,))
        return int(self._sql.execute(sql, args).fetchone()[0]) > 0

    def lookup_row(self, edge: Edge) -> bool:
        """Stage 1 of the control matrix: direct SQL for one exact row (every field)."""
        sql = ("SELECT cause, effect, relation_kind, polarity, condition FROM causal_edges "
               "WHERE edge_id = ?")
        got = self._sql.execute(sql, (edge.edge_id,)).fetchone()
        return got is not None and tuple(got) == (edge.cause, edge.effect, edge.relation_kind,
                                                  edge.polarity, edge.condition)

    @contextmanager
    def scratch(self) -> Iterator[GraphStore]:
        """A savepoint: changes made inside are rolled back on exit (scratch copies).

        On PostgreSQL (where a savepoint needs a transaction) it is a transaction that is
        always rolled back.
        """
        if self._sql.dialect == "postgresql":
            self._sql.begin(write=False)
            try:
                yield self
            finally:
                self._sql.rollback()
                self._aliases = None
            return
        self._sql.execute("SAVEPOINT scratch")
        try:
            yield self
        finally:
            self._sql.execute("ROLLBACK TO SAVEPOINT scratch")
            self._sql.execute("RELEASE SAVEPOINT scratch")


def _by_id(edges: list[Edge]) -> list[Edge]:
    """Edges in code-point order of ``edge_id`` whatever the server's collation."""
    return sorted(edges, key=lambda e: e.edge_id)


def _create_schema(db: Database) -> None:
    for statement in DDL:
        db.execute(statement)
    db.execute("INSERT INTO store_meta (schema_version) VALUES (?)", (SCHEMA_VERSION,))


def write_store(path: str | Path, edges: Iterable[Edge], aliases: Iterable[tuple[str, str]] = (),
                sources: Iterable[SourceText] = ()) -> GraphStore:
    """Create a store at ``path`` holding exactly the given rows."""
    store = GraphStore.create(path)
    store.add(edges, aliases, sources)
    return store


@dataclass(frozen=True)
class MigrationReport:
    """What :func:`migrate_legacy` checked."""

    rows_before: int
    """Rows in the legacy table before the migration."""
    rows_after: int
    """Rows in the typed table after it (must equal ``rows_before``)."""
    sample: tuple[tuple[str, str, str], ...]
    """The sampled rows as ``(edge_id, cause, effect)`` after migration."""
    diffs: tuple[str, ...]
    """Field differences found in the sample (empty on success)."""
    seed: int
    """Seed of the sample."""


def migrate_legacy(conn: sqlite3.Connection | Database, *, seed: int, sample_size: int = 20,
                   default_kind: str = "causal_claim") -> MigrationReport:
    """Migrate ``causal_edges(cause, effect)`` to the typed schema in one transaction.

    Legacy rows become ``status = 'inferred'`` (an extractor wrote them),
    ``relation_kind = default_kind``, ``polarity = '+'``, no condition, no provenance, ids
    ``legacy-000001``… in the legacy table's row order. Row counts are compared before and
    after, and a seeded sample of legacy rows is diffed against its migrated rows; any
    difference raises IntegrityError and the transaction is rolled back.
    """
    if default_kind not in RELATION_KINDS:
        raise InputError(f"unknown relation kind {default_kind!r}", field="default_kind")
    db = wrap(conn)
    if db.dialect == "postgresql":
        with db.transaction(lock=("causal_edges",)):  # one transaction, writers held off
            legacy = [(str(c), str(e)) for c, e in
                      db.execute("SELECT cause, effect FROM causal_edges ORDER BY ctid")]
            return _migrate(db, legacy, seed, sample_size, default_kind)
    legacy = [(str(c), str(e)) for c, e in
              db.execute("SELECT cause, effect FROM causal_edges ORDER BY rowid")]
    db.execute("SAVEPOINT migrate")
    try:
        report = _migrate(db, legacy, seed, sample_size, default_kind)
        db.execute("RELEASE SAVEPOINT migrate")
        db.raw.commit()
    except BaseException:
        db.execute("ROLLBACK TO SAVEPOINT migrate")
        db.execute("RELEASE SAVEPOINT migrate")
        raise
    return report


def _migrate(db: Database, legacy: list[tuple[str, str]], seed: int, sample_size: int,
             default_kind: str) -> MigrationReport:
    """The migration's statements and checks (the caller owns the transaction)."""
    before = len(legacy)
    db.execute("ALTER TABLE causal_edges RENAME TO causal_edges_v0")
    _create_schema(db)
    rows = [Edge(f"legacy-{i:06d}", c, e, default_kind, status="inferred").row()
            for i, (c, e) in enumerate(legacy, start=1)]
    db.executemany(f"INSERT INTO causal_edges VALUES ({', '.join('?' * 11)})", rows)
    after = int(db.execute("SELECT COUNT(*) FROM causal_edges").fetchone()[0])
    old = int(db.execute("SELECT COUNT(*) FROM causal_edges_v0").fetchone()[0])
    rng = np.random.default_rng(seed)
    picks = sorted(rng.choice(before, size=min(sample_size, before), replace=False).tolist()
                   ) if before else []
    diffs: list[str] = []
    sample: list[tuple[str, str, str]] = []
    for i in picks:
        edge_id = f"legacy-{i + 1:06d}"
        got = db.execute("SELECT cause, effect FROM causal_edges WHERE edge_id = ?",
                         (edge_id,)).fetchone()
        if got is None or (str(got[0]), str(got[1])) != legacy[i]:
            diffs.append(f"{edge_id}: legacy {legacy[i]} vs migrated {got}")
        else:
            sample.append((edge_id, str(got[0]), str(got[1])))
    if after != before or old != before or diffs:
        raise IntegrityError(f"migration lost rows: {before} before, {after} after; "
                             f"sample diffs: {diffs[:3]}")
    db.execute("DROP TABLE causal_edges_v0")
    return MigrationReport(before, after, tuple(sample), tuple(diffs), seed)
