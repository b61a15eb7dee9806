"""Claim-store tables, event validation, hash chains and the test-isolation gate."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from rungbench.causal.instrument import claims
from rungbench.errors import Refusal

CLAIM = {"claim_id": "c1", "episode_id": "e1", "seq": 1, "t": "2026-10-01T00:00:00Z",
         "author": "piper", "rung": "intervention", "cause": "swap", "effect": "oom",
         "polarity": "positive", "confidence": 0.7, "status": "asserted",
         "evidence_ids": ["log:1"], "competing_ids": ["c0"]}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "claims.sqlite"
    db = sqlite3.connect(path, isolation_level=None)
    claims.create_store(db)
    app = claims.Appender(db)
    db.execute("BEGIN")
    for i in range(1, 6):
        values = claims.validate_event("claim", {**CLAIM, "claim_id": f"c{i}", "seq": i})
        app.append("claim", values, "2026-10-01T00:00:00.000000Z")
    db.execute("COMMIT")
    db.close()
    yield path


def _raw(path: Path, *sql: str) -> None:
    db = sqlite3.connect(path)
    for table in ("causal_claim",):
        for verb in ("update", "delete"):
            db.execute(f"DROP TRIGGER IF EXISTS {table}_no_{verb}")
    for stmt in sql:
        db.execute(stmt)
    db.commit()
    db.close()


def _problems(path: Path) -> list[tuple[str, int, str]]:
    return [(p.table, p.log_seq, p.code) for p in claims.verify_store(path).problems]


def test_intact_store_verifies(store: Path) -> None:
    """Five appended claims form an intact chain of five rows."""
    report = claims.verify_store(store)
    assert report.ok and report.rows["causal_claim"] == 5


def test_raw_sql_edit_is_found_and_named(store: Path) -> None:
    """An UPDATE of one claim's confidence is found at that row, naming its claim_id."""
    _raw(store, "UPDATE causal_claim SET confidence = 0.99 WHERE claim_id = 'c3'")
    report = claims.verify_store(store)
    assert [(p.log_seq, p.code) for p in report.problems] == [(3, "edited")]
    assert "claim_id='c3'" in report.problems[0].detail


def test_deleted_row_is_found_and_named(store: Path) -> None:
    """Deleting row 2 is reported as rows 2–2 missing before row 3."""
    _raw(store, "DELETE FROM causal_claim WHERE claim_id = 'c2'")
    assert _problems(store) == [("causal_claim", 2, "deleted")]


def test_reordered_rows_are_found(store: Path) -> None:
    """Swapping rows 2 and 3 names both as edited (their positions are hashed) and row 4 as
    reordered (it now follows the row it was chained to, at position 2)."""
    _raw(store, "UPDATE causal_claim SET log_seq = 99 WHERE log_seq = 2",
         "UPDATE causal_claim SET log_seq = 2 WHERE log_seq = 3",
         "UPDATE causal_claim SET log_seq = 3 WHERE log_seq = 99")
    assert _problems(store) == [("causal_claim", 2, "edited"), ("causal_claim", 3, "edited"),
                                ("causal_claim", 4, "reordered")]


def test_truncated_tail_is_found_against_an_anchor(store: Path) -> None:
    """A deleted last row leaves a valid chain, but not the acknowledged head."""
    head = claims.verify_store(store).heads["causal_claim"]
    _raw(store, "DELETE FROM causal_claim WHERE log_seq = 5")
    assert claims.verify_store(store).ok
    report = claims.verify_store(store, {"causal_claim": (5, head)})
    assert [(p.log_seq, p.code) for p in report.problems] == [(5, "bad_anchor")]


def test_sqlite_guards_refuse_update_and_delete(store: Path) -> None:
    """Inside the file, UPDATE and DELETE on a chained table abort."""
    db = sqlite3.connect(store)
    for stmt in ("UPDATE causal_claim SET confidence = 0", "DELETE FROM causal_claim"):
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            db.execute(stmt)
    db.close()


@pytest.mark.parametrize(("event", "fields", "code"), [
    ("belief", {}, "unknown_event_type"),
    ("claim", {k: v for k, v in CLAIM.items() if k != "effect"}, "missing_field"),
    ("claim", {**CLAIM, "confidence": 1.5}, "invalid_field"),
    ("claim", {**CLAIM, "confidence": float("nan")}, "invalid_field"),
    ("claim", {**CLAIM, "seq": True}, "invalid_field"),
    ("claim", {**CLAIM, "extra": 1}, "unknown_field"),
    ("claim", [1], "not_an_object"),
    ("claim", {**CLAIM, "episode_id": "bench:1"}, "namespace"),
])
def test_invalid_events_are_refused(event: str, fields: object, code: str) -> None:
    """Each malformed event is refused with its reason code."""
    with pytest.raises(Refusal) as err:
        claims.validate_event(event, fields, reserved=("bench:",))
    assert err.value.codes == (code,)


def test_isolation_gate_compares_row_counts() -> None:
    """Equal production row counts pass; any difference fails naming the table."""
    before = {"causal_claim": 3, "experiment": 1}
    claims.require_unchanged(before, dict(before))
    with pytest.raises(Refusal) as err:
        claims.require_unchanged(before, {"causal_claim": 4, "experiment": 1})
    assert err.value.codes == ("production_rows_changed",)
    assert err.value.reasons[0].subject == "causal_claim"


def test_every_table_is_keyed_by_episode_and_seq() -> None:
    """Every table carries episode_id, seq and the chain columns."""
    for table in claims.TABLE_NAMES:
        cols = claims.column_names(table)
        assert {"episode_id", "seq", "log_seq", "prev_hash", "hash"} <= set(cols)


def _postgres_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "needs root to run a throwaway PostgreSQL server as the postgres user"
    if not all(shutil.which(b) for b in ("initdb", "pg_ctl", "psql")):
        return "PostgreSQL binaries (initdb, pg_ctl, psql) not installed"
    try:
        import pwd
        pwd.getpwnam("postgres")
    except KeyError:
        return "no postgres user"
    return None


def test_ddl_runs_on_postgresql() -> None:
    """The same CREATE TABLE/INDEX statements run on a real PostgreSQL server."""
    reason = _postgres_unavailable()
    if reason is not None:
        pytest.skip(reason)
    d = Path(tempfile.mkdtemp(prefix="rbpg-", dir="/tmp"))
    shutil.chown(d, "postgres", "postgres")
    data = d / "data"

    def as_pg(*cmd: str, **kw: object) -> subprocess.CompletedProcess[str]:
        result: subprocess.CompletedProcess[str] = subprocess.run(
            list(cmd), user="postgres", capture_output=True, text=True, timeout=120,
            cwd=str(d), **kw)  # type: ignore[call-overload]
        return result

    try:
        assert as_pg("initdb", "-D", str(data), "-A", "trust").returncode == 0
        r = as_pg("pg_ctl", "-D", str(data), "-w", "-l", str(d / "log"), "-o",
                  f"-c listen_addresses='' -c unix_socket_directories={d}", "start")
        assert r.returncode == 0, r.stderr
        script = ";\n".join(claims.TABLE_DDL) + ";\n"
        r = as_pg("psql", "-h", str(d), "-d", "postgres", "-v", "ON_ERROR_STOP=1",
                  "-q", "-c", script)
        assert r.returncode == 0, r.stderr
        r = as_pg("psql", "-h", str(d), "-d", "postgres", "-At", "-c",
                  "SELECT count(*) FROM information_schema.tables WHERE table_schema='public'")
        assert r.stdout.strip() == str(len(claims.TABLE_NAMES))
    finally:
        as_pg("pg_ctl", "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(d, ignore_errors=True)
