"""The logger process: sole owner of the claim store, insert-only over a Unix socket.

Seed 003 "Runtime instrumentation": the store is "written by a logger running as a separate
Unix user from Piper and her workers. Piper's process gets INSERT on a socket, not file
access."

**Protocol** (``rungbench.claims-socket/1``): newline-delimited JSON over a Unix stream
socket, one response line per request line, in order.

- ``{"op": "insert", "type": EVENT, "fields": {...}}`` →
  ``{"ok": true, "receipt": {"table", "log_seq", "hash"}}`` once the row is committed and
  fsynced (SQLite WAL, ``synchronous=FULL``; PostgreSQL with ``synchronous_commit`` on, its
  default): an acknowledged event survives a SIGKILL.
- ``{"op": "ping"}`` → ``{"ok": true, "schema": ..., "protocol": ...}``.
- Anything else → ``{"ok": false, "refused": true, "reasons": [{"code", "detail",
  "subject"}]}``. Codes: ``verb_refused`` (update, delete or any verb other than insert and
  ping), ``malformed_json``, ``too_large``, ``unknown_event_type``, ``not_an_object``,
  ``unknown_field``, ``missing_field``, ``invalid_field``, ``namespace``, ``duplicate_key``,
  ``unknown_reference``, ``not_a_resolver``, ``storage_error``.

Every row records the sender's uid as the kernel reports it (``SO_PEERCRED``); with
``--resolver-uid`` only those uids may write ``resolution`` events.

There is no verb that reads, updates or deletes rows, and field values are bound
parameters, never SQL.

**Ownership.** The state directory holds ``claims.sqlite`` (mode 0600), ``logger.sock``
(mode 0666: any local user may insert), ``logger.pid`` and ``logger.log``. Started as root
with ``--user NAME``, the logger opens the store and binds the socket, hands the directory
(mode 0711: traversable, not listable) and files to NAME, then drops to NAME's uid and gid
with no supplementary groups; the agent's user can connect but cannot open the file. As
root without ``--user`` it refuses to start unless explicitly allowed.

**Backends.** The store is ``claims.sqlite`` in the state directory unless
``LoggerConfig.db_url`` names a ``postgresql://`` database, where the same tables, guards and
chains live (:mod:`rungbench.evidence.database`); the socket, pid file and log stay in the
state directory. Each batch takes the writer lock (SQLite ``BEGIN IMMEDIATE``, PostgreSQL
``LOCK TABLE … IN EXCLUSIVE MODE``) and re-reads the chain heads, so two loggers sharing
one PostgreSQL database extend one chain per table rather than forking it.

**Writes** go through one writer thread that drains every queued event, appends them in
one transaction (a savepoint each, so one refused event does not undo its neighbours),
commits once and then acknowledges them all (group commit).
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import queue
import signal
import socket
import socketserver
import sqlite3
import stat
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rungbench.causal.instrument.claims import (
    SCHEMA_VERSION,
    TABLE_NAMES,
    Appender,
    StoreReport,
    create_store,
    open_target,
    refusal,
    validate_event,
    verify_connection,
)
from rungbench.errors import InputError, Reason, Refusal
from rungbench.evidence.database import DB_ERRORS, INTEGRITY_ERRORS, Database, is_url, redact

PROTOCOL = "rungbench.claims-socket/1"
"""Version of the socket protocol."""

MAX_LINE = 65536
"""Longest request line accepted (bytes); longer lines are refused ``too_large``."""

DB_NAME, SOCKET_NAME, PID_NAME, LOG_NAME = ("claims.sqlite", "logger.sock", "logger.pid",
                                            "logger.log")

RESOLVER_ONLY = ("resolution",)
"""Event types a logger with ``resolver_uids`` accepts only from those uids."""

BENCH_NAMESPACE = "bench:"
"""Episode-id prefix of benchmark episodes (seed "Test isolation"); a production logger
refuses it, a benchmark logger (``namespace="bench:"``) accepts nothing else."""


@dataclass(frozen=True)
class LoggerConfig:
    """How one logger runs."""

    state_dir: str
    """Directory holding the store, socket, pid file and log."""
    user: str | None = None
    """Unix user to drop to after binding (required when started as root)."""
    allow_root: bool = False
    """Run as root without dropping privileges (tests and development only)."""
    namespace: str | None = None
    """Only episode ids with this prefix are accepted (a benchmark logger)."""
    reserved: tuple[str, ...] = (BENCH_NAMESPACE,)
    """Episode-id prefixes refused (a production logger refuses the benchmark namespace)."""
    resolver_uids: tuple[int, ...] | None = None
    """When set, only peers with these uids may write ``resolution`` events (seed: the
    observed effect is filled by an independent resolver, never by Piper's later word)."""
    db_url: str | None = None
    """A ``postgresql://`` URL holding the store instead of the state directory's file."""

    def __post_init__(self) -> None:
        if self.db_url is not None and not is_url(self.db_url):
            raise InputError(f"not a postgresql:// URL: {redact(self.db_url)!r}",
                             field="db_url")

    @property
    def store(self) -> str:
        """Where the claim store lives: the PostgreSQL URL, else the state directory's file."""
        return self.db_url if self.db_url is not None else str(self.db_path)

    @property
    def db_path(self) -> Path:
        """The claim store."""
        return Path(self.state_dir) / DB_NAME

    @property
    def socket_path(self) -> Path:
        """The Unix socket clients connect to."""
        return Path(self.state_dir) / SOCKET_NAME

    @property
    def pid_path(self) -> Path:
        """The pid file (present while the logger runs)."""
        return Path(self.state_dir) / PID_NAME

    @property
    def log_path(self) -> Path:
        """Where a daemonized logger writes its stderr."""
        return Path(self.state_dir) / LOG_NAME

    def to_json(self) -> dict[str, Any]:
        """JSON form passed to a daemonized child."""
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> LoggerConfig:
        """Inverse of :meth:`to_json`."""
        uids = doc.get("resolver_uids")
        return cls(**{**doc, "reserved": tuple(doc.get("reserved", ())),
                      "resolver_uids": None if uids is None else tuple(uids)})


def utc_now() -> str:
    """The logger's clock, UTC ISO-8601 with microseconds."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# ---------------------------------------------------------------- the store and its writer


def open_store(path: Path) -> sqlite3.Connection:
    """Open (creating if absent) the store with durable commits; file mode 0600."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    os.close(fd)
    os.chmod(path, 0o600)
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")  # the WAL is fsynced at every commit
    create_store(db)
    return db


def open_store_target(config: LoggerConfig) -> Database:
    """Open (creating if absent) the logger's store on its backend, durable commits."""
    if config.db_url is None:
        return Database(open_store(config.db_path), "sqlite", str(config.db_path))
    return open_target(config.db_url, create=True)


@dataclass
class _Pending:
    event_type: str
    values: dict[str, Any]
    peer_uid: int | None
    done: threading.Event = field(default_factory=threading.Event)
    reply: dict[str, Any] = field(default_factory=dict)


class Writer:
    """The one thread that writes: drains the queue, commits a batch, then acknowledges."""

    def __init__(self, db: sqlite3.Connection | Database) -> None:
        self.db = db if isinstance(db, Database) else Database(db, "sqlite", "<store>",
                                                               owned=False)
        self.appender = Appender(self.db)
        self.queue: queue.Queue[_Pending | None] = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="claims-writer", daemon=True)

    def start(self) -> None:
        """Start the writer thread."""
        self.thread.start()

    def stop(self) -> None:
        """Write everything queued, then stop."""
        self.queue.put(None)
        self.thread.join()

    def submit(self, event_type: str, values: dict[str, Any],
               peer_uid: int | None = None) -> dict[str, Any]:
        """Queue one validated event and wait for its committed receipt or refusal."""
        pending = _Pending(event_type, values, peer_uid)
        self.queue.put(pending)
        pending.done.wait()
        return pending.reply

    def _run(self) -> None:
        stopping = False
        while not stopping:
            batch: list[_Pending] = []
            item = self.queue.get()
            while True:
                if item is None:
                    stopping = True
                else:
                    batch.append(item)
                try:
                    item = self.queue.get_nowait()
                except queue.Empty:
                    break
            if batch:
                self._write(batch)

    def _write(self, batch: list[_Pending]) -> None:
        logged_t = utc_now()
        replies: list[dict[str, Any]] = []
        try:
            self.db.begin(write=True, lock=TABLE_NAMES)
            self.appender.reload()  # another writer of a shared database may have appended
            for p in batch:
                replies.append(self._append_one(p, logged_t))
            self.db.commit()
        except DB_ERRORS as exc:
            with contextlib.suppress(*DB_ERRORS):
                self.db.rollback()
            with contextlib.suppress(*DB_ERRORS):
                self.appender.reload()
            replies = [refused_reply(refusal("storage_error", f"not stored: {exc}"))] * len(batch)
        for p, reply in zip(batch, replies, strict=True):
            p.reply = reply
            p.done.set()

    def _append_one(self, p: _Pending, logged_t: str) -> dict[str, Any]:
        self.db.execute("SAVEPOINT ev")
        heads = dict(self.appender.heads)
        try:
            receipt = self.appender.append(p.event_type, p.values, logged_t, p.peer_uid)
        except Refusal as exc:
            self.db.execute("ROLLBACK TO ev")
            self.appender.heads = heads
            return refused_reply(exc)
        except INTEGRITY_ERRORS as exc:
            self.db.execute("ROLLBACK TO ev")
            self.appender.heads = heads
            return refused_reply(refusal("duplicate_key", str(exc)))
        self.db.execute("RELEASE ev")
        return {"ok": True, "receipt": receipt.to_json()}


def refused_reply(exc: Refusal) -> dict[str, Any]:
    """The protocol's refusal line."""
    return {"ok": False, "refused": True, "reasons": [r.to_json() for r in exc.reasons]}


def handle_line(line: bytes, writer: Writer, config: LoggerConfig,
                peer_uid: int | None = None) -> dict[str, Any]:
    """The response to one request line (pure protocol logic around the writer)."""
    if len(line) > MAX_LINE:
        return refused_reply(refusal("too_large", f"request longer than {MAX_LINE} bytes"))
    try:
        request = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        return refused_reply(refusal("malformed_json", f"request is not JSON: {exc}"))
    if not isinstance(request, dict):
        return refused_reply(refusal("malformed_json", "request must be a JSON object"))
    op = request.get("op")
    if op == "ping":
        return {"ok": True, "schema": SCHEMA_VERSION, "protocol": PROTOCOL}
    if op != "insert":
        return refused_reply(refusal("verb_refused", f"verb {op!r} refused: the store is "
                                     "insert-only (verbs: insert, ping)", "op"))
    extra = sorted(set(request) - {"op", "type", "fields"})
    if extra:
        return refused_reply(refusal("unknown_field", f"request has unknown keys {extra}",
                                     extra[0]))
    try:
        values = validate_event(request.get("type"), request.get("fields"),
                                namespace=config.namespace, reserved=config.reserved)
    except Refusal as exc:
        return refused_reply(exc)
    if (request["type"] in RESOLVER_ONLY and config.resolver_uids is not None
            and peer_uid not in config.resolver_uids):
        return refused_reply(refusal("not_a_resolver", f"uid {peer_uid} may not write "
                                     f"{request['type']} events (resolver uids: "
                                     f"{list(config.resolver_uids)})", "type"))
    return writer.submit(str(request["type"]), values, peer_uid)


# ---------------------------------------------------------------- the socket server


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    allow_reuse_address = False
    request_queue_size = 128  # a burst of clients connecting at once on a loaded host
    writer: Writer
    config: LoggerConfig


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        peer_uid = peer_credentials(self.request)[1]
        while True:
            line = self.rfile.readline(MAX_LINE + 2)
            if not line:
                return
            if not line.endswith(b"\n") and len(line) > MAX_LINE:
                self._send(refused_reply(refusal("too_large", "request line too long")))
                return
            reply = handle_line(line.strip(), self.server.writer, self.server.config, peer_uid)
            self._send(reply)

    def _send(self, reply: dict[str, Any]) -> None:
        self.wfile.write(json.dumps(reply, sort_keys=True).encode("utf-8") + b"\n")
        self.wfile.flush()


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of a Unix socket (SO_PEERCRED)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", raw)
    return pid, uid, gid


def _prepare_dir(config: LoggerConfig) -> None:
    d = Path(config.state_dir)
    d.mkdir(parents=True, exist_ok=True)
    os.chmod(d, 0o711)  # clients reach the socket by name; nobody else lists the directory
    if config.pid_path.exists():
        pid = read_pid(config.pid_path)
        if pid is not None and _alive(pid):
            raise Refusal([Reason("already_running", f"logger pid {pid} owns {d}",
                                  str(config.pid_path))], gate="logger start")
        config.pid_path.unlink()
    if config.socket_path.exists():
        config.socket_path.unlink()  # stale socket of a dead logger (its pid is gone)


def _target_user(config: LoggerConfig) -> pwd.struct_passwd | None:
    if config.user is None:
        if os.geteuid() == 0 and not config.allow_root:
            raise Refusal([Reason("root_without_user", "the logger runs as root only with "
                                  "--allow-root; pass --user NAME to drop privileges")],
                          gate="logger start")
        return None
    try:
        user = pwd.getpwnam(config.user)
    except KeyError as exc:
        raise InputError(f"no such user {config.user!r}", field="user") from exc
    if os.geteuid() != 0 and user.pw_uid != os.geteuid():
        raise Refusal([Reason("not_root", f"only root can switch to user {config.user!r}")],
                      gate="logger start")
    if user.pw_uid == 0:
        raise Refusal([Reason("root_user", "the user to run as must be an unprivileged user")],
                      gate="logger start")
    return user


def _hand_over(config: LoggerConfig, user: pwd.struct_passwd) -> None:
    """Give the state to ``user`` and drop to it (after the socket is bound)."""
    for p in (config.db_path, Path(f"{config.db_path}-wal"), Path(f"{config.db_path}-shm"),
              config.pid_path, Path(config.state_dir)):
        if p.exists():
            os.chown(p, user.pw_uid, user.pw_gid)
    os.chown(config.socket_path, user.pw_uid, user.pw_gid)
    os.chmod(config.state_dir, 0o711)
    os.setgroups([])
    os.setgid(user.pw_gid)
    os.setuid(user.pw_uid)
    if os.getuid() != user.pw_uid or os.geteuid() != user.pw_uid:
        raise Refusal([Reason("privilege_drop_failed", "uid did not change")], gate="logger")


def serve(config: LoggerConfig, *, ready: threading.Event | None = None) -> None:
    """Run the logger in this process until SIGTERM or SIGINT; then stop cleanly.

    Verifies every chain of an existing store before accepting anything (a broken chain is
    never extended: IntegrityError).
    """
    user = _target_user(config)
    _prepare_dir(config)
    db = open_store_target(config)
    try:
        verify_connection(db, db.where).require_ok()
    except BaseException:
        db.close()
        raise
    writer = Writer(db)
    old_umask = os.umask(0o111)
    try:
        server = _Server(str(config.socket_path), _Handler)
    finally:
        os.umask(old_umask)
    os.chmod(config.socket_path, 0o666)
    server.writer, server.config = writer, config
    config.pid_path.write_text(f"{os.getpid()}\n")
    if user is not None:
        _hand_over(config, user)
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    writer.start()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                              name="claims-socket", daemon=True)
    thread.start()
    if ready is not None:
        ready.set()
    try:
        while not stop.wait(0.2):
            pass
    finally:
        server.shutdown()
        server.server_close()
        writer.stop()
        db.close()
        for p in (config.socket_path, config.pid_path):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()


# ---------------------------------------------------------------- start, stop, status


def read_pid(path: Path) -> int | None:
    """The pid in a pid file, None when the file is absent or not a pid."""
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    return int(text) if text.isdigit() else None


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a dead child of ours is reaped; a zombie is not alive)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state in ("Z", "X"):
            return False
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def ping(socket_path: Path, timeout: float = 2.0) -> bool:
    """True when a logger answers ``ping`` on ``socket_path``."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(str(socket_path))
            s.sendall(b'{"op": "ping"}\n')
            reply = s.makefile("rb").readline()
        return bool(json.loads(reply).get("ok"))
    except (OSError, ValueError):
        return False


def child_command(config: LoggerConfig) -> list[str]:
    """The command line of a logger child process running ``serve(config)``."""
    return [sys.executable, "-m", "rungbench.causal.instrument.logger",
            json.dumps(config.to_json())]


def start(config: LoggerConfig, *, timeout: float = 20.0) -> dict[str, Any]:
    """Start a detached logger and return once it answers on its socket."""
    _target_user(config)
    Path(config.state_dir).mkdir(parents=True, exist_ok=True)
    pid = read_pid(config.pid_path)
    if pid is not None and _alive(pid):
        raise Refusal([Reason("already_running", f"logger pid {pid} is running",
                              str(config.pid_path))], gate="logger start")
    fd = os.open(config.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "ab") as log:
        child = subprocess.Popen(child_command(config), stdin=subprocess.DEVNULL,
                                 stdout=log, stderr=log, start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if child.poll() is not None:
            tail = config.log_path.read_text(errors="replace").strip().splitlines()[-1:]
            raise Refusal([Reason("start_failed", f"logger exited {child.returncode}: "
                                  f"{' '.join(tail)}", str(config.log_path))],
                          gate="logger start")
        if ping(config.socket_path, timeout=0.5):
            return status(config) | {"started": True}
        time.sleep(0.05)
    child.terminate()
    raise Refusal([Reason("start_timeout", f"no answer on {config.socket_path} in {timeout} s")],
                  gate="logger start")


def stop(config: LoggerConfig, *, timeout: float = 20.0) -> dict[str, Any]:
    """SIGTERM the logger named by the pid file and wait for it to finish writing."""
    pid = read_pid(config.pid_path)
    if pid is None or not _alive(pid):
        raise Refusal([Reason("not_running", f"no running logger for {config.state_dir}",
                              str(config.pid_path))], gate="logger stop")
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid) or not config.pid_path.exists():
            _reap(pid)
            if not _alive(pid):
                return {"stopped": True, "pid": pid}
        time.sleep(0.05)
    raise Refusal([Reason("stop_timeout", f"logger pid {pid} still running after {timeout} s")],
                  gate="logger stop")


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def status(config: LoggerConfig) -> dict[str, Any]:
    """Pid, socket liveness and the store file's owner and mode."""
    out: dict[str, Any] = {"state_dir": config.state_dir, "pid": read_pid(config.pid_path),
                           "socket": str(config.socket_path),
                           "answering": ping(config.socket_path, timeout=0.5),
                           "db": redact(config.store)}
    if config.db_url is None and config.db_path.exists():
        st = config.db_path.stat()
        out["db_owner"] = pwd.getpwuid(st.st_uid).pw_name
        out["db_mode"] = oct(stat.S_IMODE(st.st_mode))
    return out


def verify(config_or_db: LoggerConfig | Path | str,
           anchors: dict[str, tuple[int, str]] | None = None) -> StoreReport:
    """Verify every chain of a store (a logger's, or a database path or URL)."""
    from rungbench.causal.instrument.claims import verify_store

    target = config_or_db.store if isinstance(config_or_db, LoggerConfig) else config_or_db
    return verify_store(target, anchors)


@contextlib.contextmanager
def running(config: LoggerConfig) -> Iterator[LoggerConfig]:
    """A started logger for the duration of the block, stopped after it."""
    start(config)
    try:
        yield config
    finally:
        stop(config)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry of a daemonized child: ``python -m rungbench.causal.instrument.logger CONFIG``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m rungbench.causal.instrument.logger CONFIG_JSON", file=sys.stderr)
        return 2
    try:
        serve(LoggerConfig.from_json(json.loads(args[0])))
    except Refusal as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return 3
    except (InputError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        print(f"error ({type(exc).__name__}): {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
