"""The typed graph store: portable DDL, schema checks, migrations that keep every row."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from rungbench.causal.instrument.graph_store import (
    DDL,
    LEGACY_DDL,
    Edge,
    GraphStore,
    migrate_legacy,
    write_store,
)
from rungbench.errors import InputError, IntegrityError
from rungbench.evidence.database import PostgresServer, connect


def test_ddl_runs_on_postgresql(postgres: PostgresServer) -> None:
    """Every statement of DDL and LEGACY_DDL runs on a real PostgreSQL server."""
    with connect(postgres.create_database("graph_ddl")) as db:
        for statement in DDL:
            db.execute(statement)
        db.execute("CREATE SCHEMA legacy")
        db.execute("SET search_path TO legacy")
        for statement in LEGACY_DDL:
            db.execute(statement)
        db.commit()
        created = db.execute("SELECT count(*) FROM information_schema.tables "
                             "WHERE table_schema IN ('public', 'legacy')").fetchone()[0]
        assert created == 5


def test_store_round_trips_typed_edges_and_checks_its_schema(tmp_path: Path) -> None:
    """Edges come back field for field; a foreign SQLite file is refused by name."""
    edge = Edge("e1", "a", "b", "correlation", "-", "when c", "tested", "s1",
                "2026-10-03T00:00:00Z", "host", ("e2",))
    write_store(tmp_path / "g.sqlite", [edge], [("Alias A", "a")]).close()
    store = GraphStore.open(tmp_path / "g.sqlite")
    assert store.edges() == [edge] and store.aliases() == {"alias a": "a"}
    assert store.lookup_row(edge)
    sqlite3.connect(tmp_path / "other.sqlite").execute("CREATE TABLE t (x TEXT)")
    with pytest.raises(InputError, match=r"other\.sqlite"):
        GraphStore.open(tmp_path / "other.sqlite")


def _legacy(path: Path, n: int) -> sqlite3.Connection:
    conn = sqlite3.connect(path)
    conn.execute(LEGACY_DDL[0])
    conn.executemany("INSERT INTO causal_edges VALUES (?, ?)",
                     [(f"cause {i}", f"effect {i}") for i in range(n)])
    conn.commit()
    return conn


def test_migration_keeps_every_row_and_diffs_a_sample(tmp_path: Path) -> None:
    """Row counts match before and after; the seeded sample is identical field by field."""
    conn = _legacy(tmp_path / "old.sqlite", 250)
    report = migrate_legacy(conn, seed=7)
    conn.close()
    assert report.rows_before == report.rows_after == 250
    assert len(report.sample) == 20 and report.diffs == ()
    store = GraphStore.open(tmp_path / "old.sqlite")
    assert store.count() == 250 and store.edges()[0].status == "inferred"


def test_migration_that_loses_a_row_is_rolled_back(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A migration dropping a row raises IntegrityError and leaves the legacy table intact."""
    conn = _legacy(tmp_path / "old.sqlite", 30)
    original = Edge.row

    def lossy(self: Edge) -> tuple[str | None, ...]:
        row = original(self)
        return row if self.edge_id != "legacy-000003" else (row[0], "corrupted", *row[2:])

    monkeypatch.setattr(Edge, "row", lossy)
    with pytest.raises(IntegrityError, match=r"sample diffs"):
        migrate_legacy(conn, seed=1, sample_size=30)
    assert conn.execute("SELECT COUNT(*) FROM causal_edges").fetchone()[0] == 30
    assert [r[1] for r in conn.execute("PRAGMA table_info(causal_edges)")] == ["cause", "effect"]


# ---------------------------------------------------------------- both backends
# Tests taking ``store_target`` run on an SQLite file and on a real PostgreSQL server.

EDGES = [Edge(f"e{i}", f"n{i}", f"n{i + 1}", "causal_claim", "+-"[i % 2],
              None if i % 3 else "when hot", "asserted", "s1", None, None, (f"e{i + 1}",))
         for i in (10, 2, 1, 30, 3)] + [Edge("E_upper", "n1", "n3"), Edge("e_lower", "n3", "n1")]


def test_store_round_trips_on_both_backends(store_target: str) -> None:
    """Edges, aliases and sources come back field for field and in code-point id order."""
    from rungbench.causal.instrument.graph_store import SourceText

    write_store(store_target, EDGES, [("Node One", "n1")],
                [SourceText("s1", "source", "n1 raises n2")]).close()
    store = GraphStore.open(store_target)
    try:
        assert store.edges() == sorted(EDGES, key=lambda e: e.edge_id)
        assert [e.edge_id for e in store.out_edges("n1")] == ["E_upper", "e1"]
        assert store.aliases() == {"node one": "n1"} and store.count() == len(EDGES)
        assert store.sources() == [SourceText("s1", "source", "n1 raises n2")]
        assert store.lookup("n10", "n11", "+", None) and not store.lookup("n10", "n11", "-",
                                                                            None)
        assert all(store.lookup_row(e) for e in EDGES) and store.has_node("n31")
        assert {e.edge_id for e in store.touching("n3")} == {"e2", "e3", "E_upper", "e_lower"}
    finally:
        store.close()


def test_opened_store_is_read_only_and_create_refuses_an_existing_one(
    store_target: str,
) -> None:
    """open() cannot write on either backend; create() on an existing store is refused."""
    write_store(store_target, EDGES[:2]).close()
    with pytest.raises(InputError, match="already exists"):
        GraphStore.create(store_target)
    store = GraphStore.open(store_target)
    try:
        with pytest.raises(Exception, match=r"(?i)read.only|readonly"):
            store.add([Edge("new", "a", "b")])
        assert store.count() == 2
    finally:
        store.close()


def test_scratch_changes_are_rolled_back(store_target: str) -> None:
    """Rows added inside scratch() are gone afterwards, on both backends."""
    store = write_store(store_target, EDGES[:1])
    try:
        with store.scratch():
            store._sql.execute("INSERT INTO causal_edges VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                               Edge("tmp", "x", "y").row())
            assert store.count() == 2
        assert store.count() == 1
    finally:
        store.close()


def test_a_foreign_database_is_refused(store_target: str) -> None:
    """A database without the typed schema is refused by name (password hidden)."""
    from rungbench.evidence.database import connect, redact

    with connect(store_target) as db:
        db.execute("CREATE TABLE causal_edges (cause TEXT, effect TEXT)")
        db.execute("CREATE TABLE store_meta (schema_version INTEGER NOT NULL)")
        db.execute("INSERT INTO store_meta VALUES (1)")
    with pytest.raises(InputError, match="schema mismatch") as err:
        GraphStore.open(store_target)
    assert redact(store_target) in str(err.value)


def _legacy_at(target: str, n: int) -> None:
    from rungbench.evidence.database import connect

    with connect(target) as db:
        db.execute(LEGACY_DDL[0])
        db.executemany("INSERT INTO causal_edges VALUES (?, ?)",
                       [(f"cause {i}", f"effect {i}") for i in range(n)])


def test_migration_keeps_every_row_on_both_backends(store_target: str) -> None:
    """The legacy migration keeps all 120 rows in insertion order on SQLite and PostgreSQL."""
    from rungbench.evidence.database import connect

    _legacy_at(store_target, 120)
    with connect(store_target) as db:
        report = migrate_legacy(db, seed=3)
    assert report.rows_before == report.rows_after == 120 and report.diffs == ()
    store = GraphStore.open(store_target)
    try:
        edges = store.edges()
        assert [(e.edge_id, e.cause) for e in edges[:2]] == [("legacy-000001", "cause 0"),
                                                              ("legacy-000002", "cause 1")]
        assert len(edges) == 120 and {e.status for e in edges} == {"inferred"}
    finally:
        store.close()


def test_lossy_migration_is_rolled_back_on_both_backends(
    store_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A migration that corrupts a row raises and leaves the legacy table as it was."""
    from rungbench.evidence.database import connect

    _legacy_at(store_target, 25)
    original = Edge.row

    def lossy(self: Edge) -> tuple[str | None, ...]:
        row = original(self)
        return row if self.edge_id != "legacy-000004" else (row[0], "corrupted", *row[2:])

    monkeypatch.setattr(Edge, "row", lossy)
    with connect(store_target) as db:
        with pytest.raises(IntegrityError, match=r"sample diffs"):
            migrate_legacy(db, seed=1, sample_size=25)
        assert db.columns("causal_edges") == ("cause", "effect")
        assert db.execute("SELECT COUNT(*) FROM causal_edges").fetchone()[0] == 25
        assert "store_meta" not in db.tables()
