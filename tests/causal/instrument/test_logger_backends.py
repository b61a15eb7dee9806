"""The logger on both backends: the same socket suite on SQLite and on a real PostgreSQL server
(acknowledged = durable, guards refuse raw UPDATE/DELETE, a raw-SQL edit is named by verify)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rungbench.causal.instrument import logger
from rungbench.causal.instrument.claims import Receipt, anchors_from, verify_store
from rungbench.causal.instrument.client import (
    ClaimClient,
    LoggerUnavailable,
    insert_many,
    tool_call_event,
)
from rungbench.errors import InputError
from rungbench.evidence.database import INTEGRITY_ERRORS, connect, is_url

CLAIM = {"claim_id": "c1", "episode_id": "e1", "seq": 1, "t": "2026-10-01T00:00:00Z",
         "author": "piper", "rung": "intervention", "cause": "swap_pressure",
         "effect": "oom_kill", "polarity": "positive", "confidence": 0.7,
         "status": "asserted", "evidence_ids": ["log:1"], "competing_ids": []}


@pytest.fixture
def config(store_target: str) -> Iterator[logger.LoggerConfig]:
    """A logger config (not started) on the test's backend; its state directory removed after."""
    d = Path(tempfile.mkdtemp(prefix="rbl-", dir="/tmp"))
    d.chmod(0o711)
    try:
        yield logger.LoggerConfig(str(d / "state"), allow_root=True,
                                  db_url=store_target if is_url(store_target) else None)
    finally:
        pid = logger.read_pid(Path(d / "state" / logger.PID_NAME))
        if pid is not None and logger._alive(pid):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(d, ignore_errors=True)


def test_concurrent_clients_give_one_intact_chain(config: logger.LoggerConfig) -> None:
    """Two clients × 300 events through the socket: 600 distinct receipts, the chain verifies
    against the acknowledged heads, and the store is where the config says."""
    with logger.running(config):
        out: dict[int, list[Receipt]] = {}
        threads = [threading.Thread(target=lambda i=i: out.__setitem__(
            i, insert_many(config.socket_path, f"ep{i}", 300))) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    receipts = out[0] + out[1]
    assert len({r.log_seq for r in receipts}) == 600
    report = verify_store(config.store, anchors_from(receipts))
    assert report.ok and report.rows["causal_tool_call"] == 600
    assert config.db_path.exists() == (config.db_url is None)


def test_refusals_and_bound_parameters_on_both_backends(config: logger.LoggerConfig) -> None:
    """Verbs other than insert, duplicates and unknown references are refused with their code;
    an injection attempt is stored as a plain value."""
    with logger.running(config), ClaimClient(config.socket_path) as c:
        c.insert("claim", CLAIM)
        reply = c.request({"op": "update", "type": "claim", "fields": CLAIM})
        assert [r["code"] for r in reply["reasons"]] == ["verb_refused"]
        reply = c.request({"op": "insert", "type": "claim", "fields": CLAIM})
        assert [r["code"] for r in reply["reasons"]] == ["duplicate_key"]
        evil = {**CLAIM, "claim_id": "c2'; DELETE FROM causal_claim;--"}
        assert c.request({"op": "insert", "type": "claim", "fields": evil})["ok"] is True
        c.insert("claim", {**CLAIM, "claim_id": "c3", "seq": 3})  # the batch after a refusal
    with connect(config.store, readonly=True) as db:
        rows = db.execute("SELECT claim_id FROM causal_claim ORDER BY log_seq").fetchall()
    assert [r[0] for r in rows] == ["c1", evil["claim_id"], "c3"]
    assert verify_store(config.store).ok


def test_sigkill_loses_no_acknowledged_event_on_either_backend(
        config: logger.LoggerConfig) -> None:
    """kill -9 mid-stream: every acknowledged event is in the store, the restarted logger
    verifies the chain and extends it."""
    logger.start(config)
    acked: list[Receipt] = []
    with pytest.raises(LoggerUnavailable), ClaimClient(config.socket_path) as c:
        for seq in range(100_000):
            acked.append(c.insert("tool_call", tool_call_event("kill", seq)))
            if seq == 150:
                pid = logger.read_pid(config.pid_path)
                assert pid is not None
                os.kill(pid, signal.SIGKILL)
    assert 150 < len(acked) < 100_000
    # the socket closes while the kernel tears the process down, before the pid is gone:
    # wait for the death itself, as an operator restarting after kill -9 would
    deadline = time.monotonic() + 10
    while logger._alive(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    with logger.running(config):
        report = verify_store(config.store, anchors_from(acked))
        assert report.ok, report.problems
        assert report.rows["causal_tool_call"] >= len(acked)
        with ClaimClient(config.socket_path) as c:
            c.insert("tool_call", tool_call_event("kill", 10**6))
    assert verify_store(config.store).ok


def test_raw_sql_tamper_is_refused_then_detected(config: logger.LoggerConfig) -> None:
    """Raw UPDATE/DELETE hit the append-only guards; with the guard dropped, an edited row is
    named by verify (file and URL alike) and the logger refuses to extend the broken chain."""
    with logger.running(config), ClaimClient(config.socket_path) as c:
        c.insert("claim", CLAIM)
        c.insert("claim", {**CLAIM, "claim_id": "c2", "seq": 2})
    with connect(config.store) as db:
        for sql in ("UPDATE causal_claim SET confidence = 0.1", "DELETE FROM causal_claim"):
            with pytest.raises(INTEGRITY_ERRORS):
                db.execute(sql)
        on = " ON causal_claim" if db.dialect == "postgresql" else ""
        db.execute(f"DROP TRIGGER causal_claim_no_update{on}")
        db.execute("UPDATE causal_claim SET confidence = 0.99 WHERE claim_id = 'c2'")
    report = verify_store(config.store)
    assert [(p.table, p.log_seq, p.code) for p in report.problems] == [
        ("causal_claim", 2, "edited")]
    with pytest.raises(Exception, match="chain"):
        logger.serve(config)


def test_cli_runs_the_logger_on_the_given_database(config: logger.LoggerConfig) -> None:
    """`causal logger start --db URL` keeps the store there; `verify --db` takes the same
    target (file or URL) and names an edit with exit 1."""
    exe = str(Path(sys.executable).parent / "rungbench")
    target = ["--db", config.db_url] if config.db_url else []
    r = subprocess.run([exe, "causal", "logger", "start", "--state-dir", config.state_dir,
                        "--allow-root", *target, "--json"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    try:
        with ClaimClient(config.socket_path) as c:
            c.insert("claim", CLAIM)
    finally:
        subprocess.run([exe, "causal", "logger", "stop", "--state-dir", config.state_dir],
                       capture_output=True, timeout=60, check=True)
    r = subprocess.run([exe, "causal", "logger", "verify", "--db", config.store, "--json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and json.loads(r.stdout)["rows"]["causal_claim"] == 1
    with connect(config.store) as db:
        on = " ON causal_claim" if db.dialect == "postgresql" else ""
        db.execute(f"DROP TRIGGER causal_claim_no_update{on}")
        db.execute("UPDATE causal_claim SET author = 'mallory'")
    r = subprocess.run([exe, "causal", "logger", "verify", "--db", config.store, "--json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and json.loads(r.stdout)["problems"][0]["code"] == "edited"
    assert "password" not in r.stdout and "password" not in r.stderr


def test_db_url_must_be_a_postgresql_url() -> None:
    """A logger's --db is a database URL; a file path there is an input error naming it."""
    with pytest.raises(InputError, match="postgresql"):
        logger.LoggerConfig("/tmp/x", db_url="/tmp/claims.sqlite")
