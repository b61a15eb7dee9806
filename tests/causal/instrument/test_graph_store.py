"""The typed graph store: portable DDL, schema checks, migrations that keep every row."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import tempfile
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

PG_BIN = Path("/usr/lib/postgresql/15/bin")


@pytest.mark.skipif(not (PG_BIN / "initdb").exists(), reason="PostgreSQL 15 binaries absent")
def test_ddl_runs_on_postgresql() -> None:
    """Every statement of DDL and LEGACY_DDL runs on a throw-away PostgreSQL 15 server."""
    root = Path(tempfile.mkdtemp(prefix="rbgs-", dir="/tmp"))
    run_as: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root: run as postgres in a folder it owns
        shutil.chown(root, "postgres", "postgres")
        run_as = ["runuser", "-u", "postgres", "--"]
    data, sock = root / "pg", str(root)
    try:
        subprocess.run([*run_as, str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust",
                        "-U", "pg"], check=True, capture_output=True)
        subprocess.run([*run_as, str(PG_BIN / "pg_ctl"), "-D", str(data), "-w", "-l",
                        str(root / "log"), "-o", f"-k {sock} -c listen_addresses='' -p 54329",
                        "start"], check=True, capture_output=True)
        script = ";\n".join(DDL) + ";\nCREATE SCHEMA legacy;\nSET search_path TO legacy;\n" \
            + ";\n".join(LEGACY_DDL) + ";\n"
        done = subprocess.run([*run_as, str(PG_BIN / "psql"), "-h", sock, "-p", "54329",
                               "-U", "pg", "-d", "postgres", "-v", "ON_ERROR_STOP=1"],
                              input=script, text=True, capture_output=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.count("CREATE TABLE") == 5
    finally:
        subprocess.run([*run_as, str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate",
                        "stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


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
