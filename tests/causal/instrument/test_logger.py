"""The logger process through its real Unix socket: insert-only, durable, owner-only file."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import skip_unless_ci

from rungbench.causal.instrument import logger
from rungbench.causal.instrument.claims import Receipt, anchors_from, verify_store
from rungbench.causal.instrument.client import ClaimClient, insert_many, tool_call_event
from rungbench.errors import Refusal

CLAIM = {"claim_id": "c1", "episode_id": "e1", "seq": 1, "t": "2026-10-01T00:00:00Z",
         "author": "piper", "rung": "intervention", "cause": "swap_pressure",
         "effect": "oom_kill", "polarity": "positive", "confidence": 0.7,
         "status": "asserted", "evidence_ids": ["log:1"], "competing_ids": []}


def _state_dir() -> Path:
    """A short temp dir under /tmp (socket paths are limited to 107 bytes)."""
    d = Path(tempfile.mkdtemp(prefix="rbl-", dir="/tmp"))
    d.chmod(0o711)
    return d


@pytest.fixture
def state() -> Iterator[logger.LoggerConfig]:
    d = _state_dir()
    config = logger.LoggerConfig(str(d / "state"), allow_root=True)
    logger.start(config)
    try:
        yield config
    finally:
        if logger.read_pid(config.pid_path) is not None:
            logger.stop(config)
        shutil.rmtree(d, ignore_errors=True)


def _count(config: logger.LoggerConfig, table: str) -> int:
    db = sqlite3.connect(config.db_path)
    try:
        return int(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    finally:
        db.close()


def _codes(reply: dict[str, object]) -> list[str]:
    assert reply["ok"] is False
    return [r["code"] for r in reply["reasons"]]  # type: ignore[attr-defined]


def test_update_and_delete_verbs_are_refused(state: logger.LoggerConfig) -> None:
    """UPDATE, DELETE and raw SQL through the socket are refused verb_refused; nothing changes."""
    with ClaimClient(state.socket_path) as c:
        c.insert("claim", CLAIM)
        for op in ("update", "delete", "UPDATE", "sql"):
            reply = c.request({"op": op, "type": "claim",
                               "fields": {"claim_id": "c1", "confidence": 0.1}})
            assert _codes(reply) == ["verb_refused"]
        reply = c.request({"op": "insert", "type": "claim",
                           "fields": {**CLAIM, "claim_id": "c2'; DELETE FROM causal_claim;--"}})
        assert reply["ok"] is True  # a bound parameter, never SQL
    assert _count(state, "causal_claim") == 2
    db = sqlite3.connect(state.db_path)
    assert db.execute("SELECT confidence FROM causal_claim WHERE claim_id='c1'"
                      ).fetchone() == (0.7,)
    db.close()


def test_unknown_type_and_missing_field_are_refused_with_reason(
        state: logger.LoggerConfig) -> None:
    """Unknown event types, missing, unknown and invalid fields get machine-readable reasons."""
    with ClaimClient(state.socket_path) as c:
        assert _codes(c.request({"op": "insert", "type": "belief", "fields": {}})) == [
            "unknown_event_type"]
        missing = {k: v for k, v in CLAIM.items() if k != "cause"}
        reply = c.request({"op": "insert", "type": "claim", "fields": missing})
        assert _codes(reply) == ["missing_field"]
        assert reply["reasons"][0]["subject"] == "cause"
        assert _codes(c.request({"op": "insert", "type": "claim",
                                 "fields": {**CLAIM, "owner": "x"}})) == ["unknown_field"]
        assert _codes(c.request({"op": "insert", "type": "claim",
                                 "fields": {**CLAIM, "rung": "vibes"}})) == ["invalid_field"]
        assert _codes(c.request_line(b"{not json")) == ["malformed_json"]
        assert _codes(c.request({"op": "insert", "type": "prediction", "fields": {
            "pred_id": "p1", "claim_id": "nope", "episode_id": "e1", "seq": 2,
            "action": "restart", "predicted_effect": "clears", "p": 0.5}})) == [
            "unknown_reference"]
        c.insert("claim", CLAIM)
        assert _codes(c.request({"op": "insert", "type": "claim", "fields": CLAIM})) == [
            "duplicate_key"]
        with pytest.raises(Refusal) as err:
            c.insert("claim", {**CLAIM, "claim_id": "c9", "episode_id": "bench:x"})
        assert err.value.codes == ("namespace",)
    assert _count(state, "causal_claim") == 1


def test_two_clients_thousand_events_each_give_a_valid_chain(
        state: logger.LoggerConfig) -> None:
    """Two concurrent clients × 1,000 events: 2,000 rows, distinct receipts, intact chain."""
    out: dict[int, list[Receipt]] = {}
    threads = [threading.Thread(target=lambda i=i: out.__setitem__(
        i, insert_many(state.socket_path, f"ep{i}", 1000))) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    receipts = out[0] + out[1]
    assert len({r.log_seq for r in receipts}) == 2000
    report = verify_store(state.db_path, anchors_from(receipts))
    assert report.ok, report.problems
    assert report.rows["causal_tool_call"] == 2000


def test_sigkill_loses_no_acknowledged_event() -> None:
    """A logger SIGKILLed mid-stream keeps every acknowledged event (fsync before the ack)."""
    d = _state_dir()
    config = logger.LoggerConfig(str(d / "state"), allow_root=True)
    logger.start(config)
    acked: list[Receipt] = []
    try:
        with ClaimClient(config.socket_path) as c:
            for seq in range(100_000):
                acked.append(c.insert("tool_call", tool_call_event("kill", seq)))
                if seq == 300:
                    pid = logger.read_pid(config.pid_path)
                    assert pid is not None
                    os.kill(pid, signal.SIGKILL)
    except Exception:
        pass
    assert 300 < len(acked) < 100_000
    logger.start(config)  # restart verifies every chain before accepting
    try:
        report = verify_store(config.db_path, anchors_from(acked))
        assert report.ok, report.problems
        assert report.rows["causal_tool_call"] >= len(acked)
        with ClaimClient(config.socket_path) as c:
            c.insert("tool_call", tool_call_event("kill", 10**6))
    finally:
        logger.stop(config)
        shutil.rmtree(d, ignore_errors=True)


def test_cli_start_stop_verify_names_an_edited_row() -> None:
    """`logger start` daemonizes with a pid file, `stop` is clean, `verify` names an edit."""
    d = _state_dir()
    sd = str(d / "state")
    exe = [str(Path(sys.executable).parent / "rungbench")]
    try:
        r = subprocess.run([*exe, "causal", "logger", "start", "--state-dir", sd,
                            "--allow-root", "--json"], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        assert doc["answering"] and doc["db_mode"] == "0o600"
        assert Path(sd, "logger.pid").read_text().strip() == str(doc["pid"])
        with ClaimClient(Path(sd, "logger.sock")) as c:
            c.insert("claim", CLAIM)
            c.insert("claim", {**CLAIM, "claim_id": "c2", "seq": 2})
        r = subprocess.run([*exe, "causal", "logger", "stop", "--state-dir", sd, "--json"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert not Path(sd, "logger.pid").exists() and not Path(sd, "logger.sock").exists()
        r = subprocess.run([*exe, "causal", "logger", "verify", "--state-dir", sd],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "chains intact" in r.stdout
        db = sqlite3.connect(Path(sd, "claims.sqlite"))
        db.execute("DROP TRIGGER causal_claim_no_update")
        db.execute("UPDATE causal_claim SET confidence = 0.99 WHERE claim_id = 'c2'")
        db.commit()
        db.close()
        r = subprocess.run([*exe, "causal", "logger", "verify", "--state-dir", sd, "--json"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 1
        problems = json.loads(r.stdout)["problems"]
        assert [(p["table"], p["log_seq"], p["code"]) for p in problems] == [
            ("causal_claim", 2, "edited")]
        assert "claim_id='c2'" in problems[0]["detail"]
        r = subprocess.run([*exe, "causal", "logger", "start", "--state-dir", sd,
                            "--allow-root"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 3 and "chain" in r.stderr  # a broken store is never extended
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_root_without_user_is_refused() -> None:
    """As root, the logger refuses to start without --user (or an explicit --allow-root)."""
    if os.geteuid() != 0:
        skip_unless_ci("the refusal applies only when the test runs as root")
    d = _state_dir()
    try:
        with pytest.raises(Refusal) as err:
            logger.start(logger.LoggerConfig(str(d / "s")))
        assert err.value.codes == ("root_without_user",)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _can_create_users() -> str | None:
    if os.geteuid() != 0:
        return "needs root to create the logger and agent users"
    if shutil.which("useradd") is None or shutil.which("userdel") is None:
        return "useradd/userdel not installed"
    return None


@pytest.fixture
def two_users() -> Iterator[tuple[str, str]]:
    reason = _can_create_users()
    if reason is not None:
        skip_unless_ci(reason)
    tag = uuid.uuid4().hex[:6]
    names = (f"rblog{tag}", f"rbagt{tag}")
    for n in names:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                        "/usr/sbin/nologin", n], check=True, capture_output=True)
    try:
        yield names
    finally:
        for n in names:
            subprocess.run(["userdel", n], capture_output=True)


def test_privilege_drop_agent_cannot_open_the_store(two_users: tuple[str, str]) -> None:
    """--user: the logger runs as that user, the file is 0600 theirs, the agent only inserts."""
    log_user, agent_user = two_users
    d = _state_dir()
    config = logger.LoggerConfig(str(d / "state"), user=log_user)
    logger.start(config)
    try:
        pid = logger.read_pid(config.pid_path)
        assert pid is not None
        uid = pwd.getpwnam(log_user).pw_uid
        assert os.stat(f"/proc/{pid}").st_uid == uid
        status_lines = Path(f"/proc/{pid}/status").read_text().splitlines()
        uids = next(line for line in status_lines if line.startswith("Uid:")).split()[1:]
        assert set(uids) == {str(uid)}  # real, effective, saved, filesystem
        st = config.db_path.stat()
        assert st.st_uid == uid and stat.S_IMODE(st.st_mode) == 0o600
        for suffix in ("-wal", "-shm"):
            side = Path(f"{config.db_path}{suffix}").stat()
            assert side.st_uid == uid and stat.S_IMODE(side.st_mode) == 0o600
        assert stat.S_IMODE(Path(config.state_dir).stat().st_mode) == 0o711
        # The agent speaks the documented protocol over a raw socket, with the system
        # interpreter: the project's venv lives under /root, which the agent cannot read.
        agent = ("import os, sys, json, socket\n"
                 "out = {}\n"
                 "try:\n"
                 "    open(sys.argv[1], 'rb')\n"
                 "    out['open'] = 'opened'\n"
                 "except PermissionError:\n"
                 "    out['open'] = 'denied'\n"
                 "try:\n"
                 "    os.listdir(sys.argv[4])\n"
                 "    out['list'] = 'listed'\n"
                 "except PermissionError:\n"
                 "    out['list'] = 'denied'\n"
                 "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[2]); f = s.makefile('rb')\n"
                 "def ask(doc):\n"
                 "    s.sendall(json.dumps(doc).encode() + b'\\n')\n"
                 "    return json.loads(f.readline())\n"
                 "r = ask({'op': 'insert', 'type': 'claim', 'fields': json.loads(sys.argv[3])})\n"
                 "out['receipt'] = r['receipt']['log_seq']\n"
                 "out['delete'] = ask({'op': 'delete', 'type': 'claim'})['ok']\n"
                 "print(json.dumps(out))\n")
        python = shutil.which("python3", path="/usr/bin:/bin")
        if python is None:
            skip_unless_ci("no system python3 the agent user can execute")
        r = subprocess.run([python, "-c", agent, str(config.db_path),
                            str(config.socket_path), json.dumps(CLAIM), config.state_dir],
                           user=agent_user, group=agent_user, capture_output=True, text=True,
                           timeout=60, cwd="/tmp", extra_groups=[])
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout) == {"open": "denied", "list": "denied", "receipt": 1,
                                      "delete": False}
    finally:
        logger.stop(config)
        shutil.rmtree(d, ignore_errors=True)


def test_benchmark_logger_accepts_only_its_namespace() -> None:
    """A scratch logger with namespace bench: refuses production episode ids."""
    d = _state_dir()
    config = logger.LoggerConfig(str(d / "s"), allow_root=True, namespace="bench:",
                                 reserved=())
    with logger.running(config), ClaimClient(config.socket_path) as c:
        c.insert("claim", {**CLAIM, "episode_id": "bench:w1"})
        with pytest.raises(Refusal) as err:
            c.insert("claim", {**CLAIM, "claim_id": "c2"})
        assert err.value.codes == ("namespace",)
    shutil.rmtree(d, ignore_errors=True)


def test_rows_record_the_kernel_peer_uid_and_resolvers_are_restricted() -> None:
    """Rows carry the sender's SO_PEERCRED uid; resolution from a non-resolver uid is refused."""
    d = _state_dir()
    me = os.geteuid()
    config = logger.LoggerConfig(str(d / "s"), allow_root=True, resolver_uids=(me + 1,))
    pred = {"pred_id": "p1", "claim_id": "c1", "episode_id": "e1", "seq": 2,
            "action": "restart", "predicted_effect": "clears", "p": 0.6}
    resolution = {"pred_id": "p1", "episode_id": "e1", "seq": 3, "executed": 1,
                  "observed_effect": "clears", "resolved_t": "2026-10-02T00:00:00Z",
                  "resolver": "telemetry"}
    with logger.running(config), ClaimClient(config.socket_path) as c:
        c.insert("claim", CLAIM)
        c.insert("prediction", pred)
        with pytest.raises(Refusal) as err:
            c.insert("resolution", resolution)
        assert err.value.codes == ("not_a_resolver",)
    db = sqlite3.connect(config.db_path)
    assert db.execute("SELECT peer_uid FROM causal_claim").fetchall() == [(me,)]
    assert db.execute("SELECT COUNT(*) FROM intervention_prediction").fetchone() == (1,)
    db.close()
    config = logger.LoggerConfig(str(d / "s"), allow_root=True, resolver_uids=(me,))
    with logger.running(config), ClaimClient(config.socket_path) as c:
        assert c.insert("resolution", resolution).log_seq == 2
    shutil.rmtree(d, ignore_errors=True)


def test_stop_waits_for_queued_events() -> None:
    """A clean stop after acknowledged inserts leaves every row and no socket or pid file."""
    d = _state_dir()
    config = logger.LoggerConfig(str(d / "s"), allow_root=True)
    logger.start(config)
    receipts = insert_many(config.socket_path, "e", 50)
    t0 = time.monotonic()
    logger.stop(config)
    assert time.monotonic() - t0 < 10
    assert verify_store(config.db_path, anchors_from(receipts)).rows["causal_tool_call"] == 50
    assert not config.socket_path.exists() and not config.pid_path.exists()
    shutil.rmtree(d, ignore_errors=True)


def test_store_commits_are_fsynced(tmp_path: Path) -> None:
    """The logger's connection is WAL with synchronous=FULL: each commit fsyncs the WAL."""
    db = logger.open_store(tmp_path / "claims.sqlite")
    try:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
        assert stat.S_IMODE((tmp_path / "claims.sqlite").stat().st_mode) == 0o600
    finally:
        db.close()


@pytest.mark.parametrize(("args", "code", "needle"), [
    (["start", "--state-dir", "{file}", "--allow-root"], 1, "file exists"),
    (["stop", "--state-dir", "{dir}/none"], 3, "not_running"),
    (["verify", "--db", "{file}"], 1, "not a claim store"),
    (["verify", "--db", "{file}", "--state-dir", "{dir}"], 2, "exactly one"),
    (["start", "--state-dir", "{dir}/x", "--user", "nosuchuser"], 1, "no such user"),
])
def test_cli_bad_arguments_fail_in_one_line(args: list[str], code: int, needle: str) -> None:
    """Bad logger invocations exit 1/2/3 with one line naming the problem, no daemon left."""
    d = _state_dir()
    (d / "file").write_text("garbage")
    exe = str(Path(sys.executable).parent / "rungbench")
    argv = [a.format(file=d / "file", dir=d) for a in args]
    try:
        r = subprocess.run([exe, "causal", "logger", *argv], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == code
        assert len(r.stderr.strip().splitlines()) == 1 and needle in r.stderr
        assert "Traceback" not in r.stderr
        assert not list(d.rglob("logger.pid"))
    finally:
        shutil.rmtree(d, ignore_errors=True)
