"""Ledger: hash chain, insert-only, tampering named by row, concurrent appends without loss.

Every test taking ``ledger_target`` runs twice: on an SQLite file and on a real PostgreSQL
server (tests/evidence/conftest.py)."""

from __future__ import annotations

import hashlib
import itertools
import multiprocessing
import re
import socket
import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from rungbench.errors import InputError, IntegrityError
from rungbench.evidence import ledger as ledger_module
from rungbench.evidence.database import Database, PostgresServer, connect, is_url, redact
from rungbench.evidence.ledger import GENESIS, BadRow, Ledger, event_hash, verify_chain

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _clock() -> datetime:
    return T0


def _integrity_errors() -> tuple[type[Exception], ...]:
    try:
        import psycopg
    except ImportError:
        return (sqlite3.IntegrityError,)
    return (sqlite3.IntegrityError, psycopg.IntegrityError)


INTEGRITY_ERRORS = _integrity_errors()
"""What a refused statement raises: sqlite3's or psycopg's IntegrityError."""


def _ledger(target: str | Path, n: int) -> Ledger:
    ledger = Ledger(target, clock=_clock)
    for i in range(n):
        ledger.append("test.event", {"i": i, "note": f"event {i}"})
    return ledger


def _raw(target: str) -> Database:
    """A raw autocommit connection with the append-only triggers dropped, as a tamperer would."""
    db = connect(target)
    on = " ON ledger_events" if db.dialect == "postgresql" else ""
    for verb in ("update", "delete"):
        db.execute(f"DROP TRIGGER ledger_events_no_{verb}{on}")
    return db


def _where(target: str) -> str:
    """How messages name the ledger: the path, or the URL without its password."""
    return re.escape(redact(target) if is_url(target) else target)


def test_first_event_hash_known_answer(ledger_target: str) -> None:
    """Row 1 links to GENESIS and its hash is sha256 of the hand-written canonical body."""
    with _ledger(ledger_target, 0) as ledger:
        event = ledger.append("run.start", {"b": 2, "a": "x"})
    body = (
        '{"kind":"run.start","payload":{"a":"x","b":2},"prev_hash":"sha256:'
        + "0" * 64
        + '","seq":1,"time":"2026-01-02T03:04:05.000000+00:00"}'
    )
    assert event.prev_hash == GENESIS
    assert event.hash == "sha256:" + hashlib.sha256(body.encode()).hexdigest()


def test_chain_links_and_verifies(ledger_target: str) -> None:
    """Each row's prev_hash is the previous row's hash; the whole chain verifies."""
    path = ledger_target
    with _ledger(path, 5) as ledger:
        events = list(ledger.events())
        assert [e.seq for e in events] == [1, 2, 3, 4, 5]
        for before, after in itertools.pairwise(events):
            assert after.prev_hash == before.hash
        for e in events:
            assert e.hash == event_hash(e.seq, e.prev_hash, e.kind, e.payload, e.time)
        assert ledger.head() == events[-1].hash
        assert ledger.count() == 5
    report = verify_chain(path)
    assert report.ok and report.count == 5 and report.head == events[-1].hash


def test_api_is_insert_only() -> None:
    """The Ledger class offers no method to update, delete or rewrite an event."""
    names = [n for n in dir(Ledger) if not n.startswith("_")]
    assert not [n for n in names if any(w in n for w in ("update", "delete", "remove", "set"))]


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE ledger_events SET kind = 'x' WHERE seq = 1",
        "DELETE FROM ledger_events WHERE seq = 2",
    ],
)
def test_triggers_abort_update_and_delete(ledger_target: str, statement: str) -> None:
    """Raw SQL UPDATE or DELETE is aborted by the append-only triggers on both backends."""
    path = ledger_target
    _ledger(path, 3).close()
    with connect(path) as db, pytest.raises(INTEGRITY_ERRORS, match="append-only"):
        db.execute(statement)
    report = verify_chain(path)
    assert report.ok and report.count == 3


def test_truncate_is_refused_on_postgresql(postgres: PostgresServer) -> None:
    """TRUNCATE (PostgreSQL's trigger-free way to empty a table) is refused by a guard too."""
    url = postgres.create_database("truncate_refused")
    _ledger(url, 2).close()
    with connect(url) as db, pytest.raises(INTEGRITY_ERRORS, match="TRUNCATE refused"):
        db.execute("TRUNCATE ledger_events")
    assert verify_chain(url).count == 2


def test_update_of_payload_names_the_row(ledger_target: str) -> None:
    """An UPDATE of one row's payload is caught at that row."""
    path = ledger_target
    _ledger(path, 6).close()
    with _raw(path) as db:
        db.execute(
            """UPDATE ledger_events SET payload = '{"i":99,"note":"event 3"}' WHERE seq = 4"""
        )
    report = verify_chain(path)
    assert report.first_bad is not None
    assert (report.first_bad.seq, report.first_bad.problem) == (4, "hash")
    assert report.count == 3


def test_update_with_recomputed_hash_breaks_next_link(ledger_target: str) -> None:
    """Editing a row and fixing its own hash is caught at the next row's link."""
    path = ledger_target
    _ledger(path, 5).close()
    with _raw(path) as db:
        seq, prev, kind, time = db.execute(
            "SELECT seq, prev_hash, kind, recorded_at FROM ledger_events WHERE seq = 2"
        ).fetchone()
        forged = event_hash(seq, prev, kind, {"forged": True}, time)
        db.execute(
            "UPDATE ledger_events SET payload = ?, hash = ? WHERE seq = 2",
            ('{"forged":true}', forged),
        )
    bad = verify_chain(path).first_bad
    assert bad is not None and (bad.seq, bad.problem) == (3, "link")


def test_delete_of_a_row_names_the_gap(ledger_target: str) -> None:
    """Deleting a middle row is caught at the row that follows the gap."""
    path = ledger_target
    _ledger(path, 6).close()
    with _raw(path) as db:
        db.execute("DELETE FROM ledger_events WHERE seq = 3")
    bad = verify_chain(path).first_bad
    assert bad is not None and (bad.seq, bad.problem) == (4, "seq_gap")


def test_swap_of_two_rows_names_the_first(ledger_target: str) -> None:
    """Swapping the full contents of rows 2 and 5 (seq kept) is caught at row 2."""
    path = ledger_target
    _ledger(path, 6).close()
    cols = "prev_hash, hash, kind, payload, recorded_at"
    with _raw(path) as db:
        two = db.execute(f"SELECT {cols} FROM ledger_events WHERE seq = 2").fetchone()
        five = db.execute(f"SELECT {cols} FROM ledger_events WHERE seq = 5").fetchone()
        sets = "prev_hash=?, hash=?, kind=?, payload=?, recorded_at=?"
        db.execute("UPDATE ledger_events SET hash = 'parked' WHERE seq = 5")
        db.execute(f"UPDATE ledger_events SET {sets} WHERE seq = 2", five)
        db.execute(f"UPDATE ledger_events SET {sets} WHERE seq = 5", two)
    bad = verify_chain(path).first_bad
    assert bad is not None and (bad.seq, bad.problem) == (2, "hash")


def test_swap_of_sequence_numbers_is_caught(ledger_target: str) -> None:
    """Reordering by swapping two rows' seq values is caught at the first moved row."""
    path = ledger_target
    _ledger(path, 5).close()
    with _raw(path) as db:
        db.execute("UPDATE ledger_events SET seq = -1 WHERE seq = 2")
        db.execute("UPDATE ledger_events SET seq = 2 WHERE seq = 4")
        db.execute("UPDATE ledger_events SET seq = 4 WHERE seq = -1")
    bad = verify_chain(path).first_bad
    assert bad is not None and bad.seq == 2


def test_whitespace_edit_of_payload_is_caught(ledger_target: str) -> None:
    """A payload rewritten with the same meaning but other bytes is still an edit."""
    path = ledger_target
    _ledger(path, 3).close()
    with _raw(path) as db:
        db.execute(
            """UPDATE ledger_events SET payload = '{"i": 1,"note":"event 1"}' WHERE seq = 2"""
        )
    bad = verify_chain(path).first_bad
    assert bad is not None and (bad.seq, bad.problem) == (2, "payload")


def test_truncated_tail_caught_only_with_anchor(ledger_target: str) -> None:
    """Deleting the last rows is caught against an anchor recorded earlier."""
    path = ledger_target
    with _ledger(path, 5) as ledger:
        anchor = ledger.head()
    with _raw(path) as db:
        db.execute("DELETE FROM ledger_events WHERE seq >= 4")
    assert verify_chain(path).ok
    bad = verify_chain(path, anchor=anchor).first_bad
    assert bad is not None and (bad.seq, bad.problem) == (4, "truncated")


def test_anchor_allows_later_appends(ledger_target: str) -> None:
    """Events appended after the anchor was taken do not fail the anchor check."""
    path = ledger_target
    with _ledger(path, 2) as ledger:
        anchor = ledger.head()
        ledger.append("later", {})
    assert verify_chain(path, anchor=anchor).ok


def test_require_ok_raises_integrity_error(ledger_target: str) -> None:
    """require_ok turns a bad chain into IntegrityError naming the path and row."""
    path = ledger_target
    _ledger(path, 3).close()
    with _raw(path) as db:
        db.execute("UPDATE ledger_events SET kind = 'other' WHERE seq = 1")
    with pytest.raises(IntegrityError, match=rf"{_where(path)}: ledger row seq 1 is bad"):
        verify_chain(path).require_ok(str(path))


def test_naive_clock_rejected(ledger_target: str) -> None:
    """A clock that returns a naive datetime is refused, never guessed to be UTC."""
    with Ledger(ledger_target, clock=lambda: datetime(2026, 1, 1)) as ledger:
        with pytest.raises(InputError, match="naive"):
            ledger.append("x", {})
        assert ledger.count() == 0


def test_times_are_stored_in_utc(ledger_target: str) -> None:
    """A timezone-aware clock in another zone is recorded as the same instant in UTC."""
    tz = timezone(timedelta(hours=5))
    with Ledger(ledger_target, clock=lambda: T0.astimezone(tz)) as ledger:
        event = ledger.append("x", {})
    assert event.time == "2026-01-02T03:04:05.000000+00:00"


def test_bad_paths_are_input_errors(tmp_path: Path) -> None:
    """verify_chain on a missing file or a non-database names the path."""
    with pytest.raises(InputError, match=r"missing\.sqlite"):
        verify_chain(tmp_path / "missing.sqlite")
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(InputError, match=r"junk\.sqlite"):
        verify_chain(junk)
    with pytest.raises(InputError, match=r"junk\.sqlite"):
        Ledger(junk)


def test_bad_postgresql_targets_are_input_errors(postgres: PostgresServer) -> None:
    """A database with no ledger table, or a server that does not answer, is an InputError
    naming the URL without its password."""
    empty = postgres.create_database("no_ledger_here")
    with pytest.raises(InputError, match="no table ledger_events") as err:
        verify_chain(empty)
    password = urlsplit(empty).password
    assert password and password not in str(err.value) and "***" in str(err.value)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = empty.replace(f":{postgres.port}/", f":{s.getsockname()[1]}/")
    for attempt in (lambda: verify_chain(dead), lambda: Ledger(dead, timeout=2)):
        with pytest.raises(InputError, match="cannot connect") as err:
            attempt()
        assert password not in str(err.value)


def test_same_events_give_the_same_chain_on_both_backends(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    """With the same clock, an SQLite and a PostgreSQL ledger store byte-identical rows."""
    url = postgres.create_database("same_chain")
    with _ledger(tmp_path / "l.sqlite", 20) as lite, _ledger(url, 20) as pg:
        assert (lite.dialect, pg.dialect) == ("sqlite", "postgresql")
        assert list(lite.events()) == list(pg.events())
        assert lite.head() == pg.head() == verify_chain(url).head


def test_payload_must_be_canonical_json(ledger_target: str) -> None:
    """A payload with NaN is refused before anything is written."""
    with Ledger(ledger_target) as ledger:
        with pytest.raises(InputError, match="non-finite"):
            ledger.append("x", {"v": float("nan")})
        assert ledger.count() == 0


def _append_many(path: str, tag: int, n: int) -> None:
    with Ledger(path) as ledger:
        for i in range(n):
            ledger.append("concurrent", {"writer": tag, "i": i})


def test_two_processes_append_without_loss(
    ledger_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two spawned processes appending 1,000 events each leave 2,000 events and a valid chain."""
    # spawned children unpickle the target by module name, so they need the repo root on sys.path
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))
    path = ledger_target
    Ledger(path).close()
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_append_many, args=(str(path), k, 1000)) for k in (0, 1)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert [w.exitcode for w in workers] == [0, 0]
    report = verify_chain(path)
    assert report.ok and report.count == 2000
    with Ledger(path) as ledger:
        seen = sorted((e.payload["writer"], e.payload["i"]) for e in ledger.events())
    assert seen == sorted((k, i) for k in (0, 1) for i in range(1000))


def _edit_payload(path: str, seq: int) -> None:
    with _raw(path) as db:
        db.execute("UPDATE ledger_events SET payload = '{\"i\":99}' WHERE seq = ?", (seq,))


@pytest.mark.parametrize("seq", [1, 3, 5])
def test_append_refuses_on_a_broken_chain(ledger_target: str, seq: int) -> None:
    """An append to a ledger whose row SEQ was edited raises naming the file and row."""
    path = ledger_target
    _ledger(path, 5).close()
    _edit_payload(path, seq)
    with Ledger(path) as ledger:
        with pytest.raises(IntegrityError, match=rf"{_where(path)}: ledger row seq {seq} is bad"):
            ledger.append("after", {})
        assert ledger.count() == 5


def test_append_refuses_on_forged_rows_added_by_another_writer(ledger_target: str) -> None:
    """A row inserted by another connection with a wrong hash stops this one's next append."""
    path = ledger_target
    with _ledger(path, 2) as ledger:
        ledger.append("verified", {})
        with _raw(path) as db:
            db.execute(
                "INSERT INTO ledger_events VALUES (4, ?, ?, 'x', '{}', '2026-01-01T00:00:00')",
                (ledger.head(), "sha256:" + "e" * 64),
            )
        with pytest.raises(IntegrityError, match="seq 4 is bad"):
            ledger.append("after", {})


def test_append_refuses_when_verified_rows_vanished(ledger_target: str) -> None:
    """Rows this connection verified and then lost from the end stop its next append."""
    path = ledger_target
    with _ledger(path, 4) as ledger:
        ledger.append("verified", {})
        with _raw(path) as db:
            db.execute("DELETE FROM ledger_events WHERE seq >= 4")
        with pytest.raises(IntegrityError, match=r"seq 5 is bad \(truncated\)"):
            ledger.append("after", {})


def test_append_checks_only_new_rows_after_the_first(
    ledger_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first append walks all 50 rows; the next re-checks only its known head and after."""
    path = ledger_target
    _ledger(path, 50).close()
    checked: list[int] = []
    real = ledger_module._check_row

    def counting(row: tuple[object, ...], expected_seq: int, prev: str) -> BadRow | None:
        checked.append(expected_seq)
        return real(row, expected_seq, prev)

    monkeypatch.setattr(ledger_module, "_check_row", counting)
    with Ledger(path) as ledger:
        ledger.append("first", {})
        assert checked == list(range(1, 51))
        checked.clear()
        ledger.append("second", {})
    assert checked == [51]
