"""Claim-store tables, event validation, hash chains and the test-isolation gate.

Every test taking the ``store`` fixture runs twice: on an SQLite file and on a real
PostgreSQL server (tests/causal/instrument/conftest.py)."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from rungbench.causal.instrument import claims
from rungbench.errors import IntegrityError, Refusal
from rungbench.evidence.database import PostgresServer, connect

CLAIM = {"claim_id": "c1", "episode_id": "e1", "seq": 1, "t": "2026-10-01T00:00:00Z",
         "author": "piper", "rung": "intervention", "cause": "swap", "effect": "oom",
         "polarity": "positive", "confidence": 0.7, "status": "asserted",
         "evidence_ids": ["log:1"], "competing_ids": ["c0"]}


def _integrity_errors() -> tuple[type[Exception], ...]:
    try:
        import psycopg
    except ImportError:
        return (sqlite3.IntegrityError,)
    return (sqlite3.IntegrityError, psycopg.IntegrityError)


INTEGRITY_ERRORS = _integrity_errors()
"""What a statement refused by a guard raises: sqlite3's or psycopg's IntegrityError."""


@pytest.fixture
def store(store_target: str) -> str:
    """A claim store (SQLite file or PostgreSQL URL) holding five chained claims."""
    db = claims.open_target(store_target, create=True)
    app = claims.Appender(db)
    with app.transaction():
        for i in range(1, 6):
            values = claims.validate_event("claim", {**CLAIM, "claim_id": f"c{i}", "seq": i})
            app.append("claim", values, "2026-10-01T00:00:00.000000Z")
    db.close()
    return store_target


def _raw(target: str, *sql: str) -> None:
    """Drop causal_claim's guards and run ``sql`` autocommit, as a tamperer would."""
    with connect(target) as db:
        on = " ON causal_claim" if db.dialect == "postgresql" else ""
        for verb in ("update", "delete"):
            db.execute(f"DROP TRIGGER IF EXISTS causal_claim_no_{verb}{on}")
        for stmt in sql:
            db.execute(stmt)


def _problems(path: str) -> list[tuple[str, int, str]]:
    return [(p.table, p.log_seq, p.code) for p in claims.verify_store(path).problems]


def test_intact_store_verifies(store: str) -> None:
    """Five appended claims form an intact chain of five rows."""
    report = claims.verify_store(store)
    assert report.ok and report.rows["causal_claim"] == 5


def test_raw_sql_edit_is_found_and_named(store: str) -> None:
    """An UPDATE of one claim's confidence is found at that row, naming its claim_id."""
    _raw(store, "UPDATE causal_claim SET confidence = 0.99 WHERE claim_id = 'c3'")
    report = claims.verify_store(store)
    assert [(p.log_seq, p.code) for p in report.problems] == [(3, "edited")]
    assert "claim_id='c3'" in report.problems[0].detail


def test_deleted_row_is_found_and_named(store: str) -> None:
    """Deleting row 2 is reported as rows 2–2 missing before row 3."""
    _raw(store, "DELETE FROM causal_claim WHERE claim_id = 'c2'")
    assert _problems(store) == [("causal_claim", 2, "deleted")]


def test_reordered_rows_are_found(store: str) -> None:
    """Swapping rows 2 and 3 names both as edited (their positions are hashed) and row 4 as
    reordered (it now follows the row it was chained to, at position 2)."""
    _raw(store, "UPDATE causal_claim SET log_seq = 99 WHERE log_seq = 2",
         "UPDATE causal_claim SET log_seq = 2 WHERE log_seq = 3",
         "UPDATE causal_claim SET log_seq = 3 WHERE log_seq = 99")
    assert _problems(store) == [("causal_claim", 2, "edited"), ("causal_claim", 3, "edited"),
                                ("causal_claim", 4, "reordered")]


def test_truncated_tail_is_found_against_an_anchor(store: str) -> None:
    """A deleted last row leaves a valid chain, but not the acknowledged head."""
    head = claims.verify_store(store).heads["causal_claim"]
    _raw(store, "DELETE FROM causal_claim WHERE log_seq = 5")
    assert claims.verify_store(store).ok
    report = claims.verify_store(store, {"causal_claim": (5, head)})
    assert [(p.log_seq, p.code) for p in report.problems] == [(5, "bad_anchor")]


def test_guards_refuse_update_and_delete(store: str) -> None:
    """Raw UPDATE and DELETE on every chained table abort, on SQLite and on PostgreSQL."""
    db = claims.open_target(store)
    app = claims.Appender(db)
    with app.transaction():
        for event, fields in _episode():  # one row in every table: row triggers fire per row
            app.append(event, claims.validate_event(event, fields), "2026-10-01T00:00:00Z")
    db.close()
    with connect(store) as db:
        for table in claims.TABLE_NAMES:
            for stmt in (f"UPDATE {table} SET hash = 'x'", f"DELETE FROM {table}"):
                with pytest.raises(INTEGRITY_ERRORS, match=f"{table} is append-only"):
                    db.execute(stmt)
        if db.dialect == "postgresql":
            with pytest.raises(INTEGRITY_ERRORS, match="TRUNCATE refused"):
                db.execute("TRUNCATE causal_claim")
    report = claims.verify_store(store)
    assert report.ok and report.rows["causal_claim"] == 6


def test_raw_sql_edit_names_the_row_on_a_url_without_its_password(
    postgres: PostgresServer,
) -> None:
    """A tampered PostgreSQL store is reported at the row; the report hides the password."""
    url = postgres.create_database("claims_tamper")
    db = claims.open_target(url, create=True)
    app = claims.Appender(db)
    with app.transaction():
        for i in range(1, 4):
            app.append("claim", claims.validate_event("claim", {**CLAIM, "claim_id": f"c{i}"}),
                       "2026-10-01T00:00:00.000000Z")
    db.close()
    _raw(url, "UPDATE causal_claim SET cause = 'forged' WHERE claim_id = 'c2'")
    report = claims.verify_store(url)
    assert [(p.log_seq, p.code) for p in report.problems] == [(2, "edited")]
    password = url.split(":")[2].split("@")[0]
    with pytest.raises(IntegrityError, match=r"causal_claim row 2 edited") as err:
        report.require_ok()
    assert password not in str(err.value) and "***" in report.path


def test_same_events_hash_the_same_on_both_backends(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    """The same events give the same chain heads on SQLite and PostgreSQL."""
    heads = []
    for target in (str(tmp_path / "c.sqlite"), postgres.create_database("claims_same")):
        db = claims.open_target(target, create=True)
        app = claims.Appender(db)
        with app.transaction():
            for event, fields in _episode():
                app.append(event, claims.validate_event(event, fields),
                           "2026-10-01T00:00:00.000000Z", peer_uid=4_000_000_000)
        db.close()
        report = claims.verify_store(target)
        assert report.ok, report.problems
        heads.append(report.heads)
    assert heads[0] == heads[1]


def _episode() -> list[tuple[str, dict[str, object]]]:
    """One event of every type, with integers past 2**31 and an integer-valued cost."""
    big = 2**40
    digest = "sha256:" + "a" * 64
    ep = {"episode_id": "e9", "seq": big}
    return [
        ("opportunity", {**ep, "t": "2026-10-01T00:00:00Z", "detector_version": "d1",
                         "kind": "why", "text_span_hash": digest, "routed_to": "graph"}),
        ("claim", {**CLAIM, **ep, "claim_id": "k1"}),
        ("tool_call", {**ep, "tool": "causal", "args_hash": digest, "result_hash": digest,
                       "returned_edges": big, "latency_ms": 12, "cost_usd": 0}),
        ("experiment_proposed", {**ep, "exp_id": "x1", "proposed_seq": big,
                                 "discriminates": ["k1"], "predicted": "up", "cost": 3}),
        ("experiment_executed", {**ep, "exp_id": "x1", "executed_seq": big + 1,
                                 "observed": "up"}),
        ("prediction", {**ep, "pred_id": "p1", "claim_id": "k1", "action": "swap",
                        "predicted_effect": "oom", "p": 1}),
        ("resolution", {**ep, "pred_id": "p1", "executed": 1, "observed_effect": "oom",
                        "resolved_t": "2026-10-02T00:00:00Z", "resolver": "telemetry"}),
        ("graph_write", {**ep, "op": "insert", "cause": "a", "effect": "b",
                         "provenance": "k1", "source_claim_id": "k1"}),
        ("model_revision", {**ep, "rev_id": "r1", "claim_id": "k1", "old_status": "asserted",
                            "new_status": "retracted", "trigger_evidence_id": "x1"}),
    ]


def _append_claims(target: str, tag: int, n: int) -> None:
    db = claims.open_target(target)
    app = claims.Appender(db)
    for i in range(n):
        with app.transaction():
            app.append("claim", claims.validate_event(
                "claim", {**CLAIM, "claim_id": f"w{tag}-{i}", "seq": i}),
                "2026-10-01T00:00:00.000000Z")
    db.close()


def test_two_processes_append_and_keep_every_chain_valid(
    store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two spawned writers appending 200 claims each through Appender.transaction leave 405
    rows in one valid chain (the writer lock serialises them)."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[3]))
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_append_claims, args=(store, k, 200)) for k in (0, 1)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert [w.exitcode for w in workers] == [0, 0]
    report = claims.verify_store(store)
    assert report.ok, report.problems
    assert report.rows["causal_claim"] == 405


def test_production_gate_reads_a_url(store: str) -> None:
    """The test-isolation gate counts rows of a store named by path or URL."""
    with pytest.raises(Refusal) as err, claims.production_unchanged(store) as before:
        assert before["causal_claim"] == 5
        _append_claims(store, 7, 1)
    assert err.value.codes == ("production_rows_changed",)


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


def test_ddl_runs_on_postgresql(postgres: PostgresServer) -> None:
    """The same CREATE TABLE/INDEX statements run on a real PostgreSQL server."""
    with connect(postgres.create_database("claims_ddl")) as db:
        for statement in claims.TABLE_DDL:
            db.execute(statement)
        db.commit()
        assert set(claims.TABLE_NAMES) <= db.tables()
