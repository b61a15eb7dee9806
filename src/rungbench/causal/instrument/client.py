"""The agent side of the claim store: a client that can only insert, over the socket.

The client never touches the database file; it sends one JSON line per event
(``logger.py`` documents the protocol) and returns the committed :class:`Receipt`, or raises
:class:`~rungbench.errors.Refusal` with the logger's machine-readable reasons. Receipts are
the anchors that let ``verify`` see a truncated tail.
"""

from __future__ import annotations

import hashlib
import json
import socket
from pathlib import Path
from types import TracebackType
from typing import Any

from rungbench.causal.instrument.claims import Receipt
from rungbench.errors import Reason, Refusal, RungbenchError


class LoggerUnavailable(RungbenchError):
    """Raised when no logger answers on the socket, or it closes the connection."""


class ClaimClient:
    """One connection to a logger; use as a context manager."""

    def __init__(self, socket_path: str | Path, *, timeout: float = 30.0) -> None:
        self.socket_path = str(socket_path)
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._reader: Any = None
        self.receipts: list[Receipt] = []
        """Every receipt this client was given, in order."""

    def connect(self) -> ClaimClient:
        """Open the connection (raises LoggerUnavailable)."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.socket_path)
        except OSError as exc:
            sock.close()
            raise LoggerUnavailable(f"no logger on {self.socket_path}: {exc}") from exc
        self._sock, self._reader = sock, sock.makefile("rb")
        return self

    def close(self) -> None:
        """Close the connection."""
        if self._reader is not None:
            self._reader.close()
        if self._sock is not None:
            self._sock.close()
        self._sock = self._reader = None

    def __enter__(self) -> ClaimClient:
        return self.connect()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def request(self, document: Any) -> dict[str, Any]:
        """Send one raw request document and return the logger's reply (no checks)."""
        return self.request_line(json.dumps(document).encode("utf-8"))

    def request_line(self, line: bytes) -> dict[str, Any]:
        """Send raw bytes as one request line; return the parsed reply."""
        if self._sock is None:
            self.connect()
        assert self._sock is not None
        try:
            self._sock.sendall(line + b"\n")
            reply = self._reader.readline()
        except OSError as exc:
            raise LoggerUnavailable(f"logger on {self.socket_path} failed: {exc}") from exc
        if not reply:
            raise LoggerUnavailable(f"logger on {self.socket_path} closed the connection")
        parsed = json.loads(reply)
        if not isinstance(parsed, dict):
            raise LoggerUnavailable(f"logger sent {parsed!r}")
        return parsed

    def insert(self, event_type: str, fields: dict[str, Any]) -> Receipt:
        """Insert one event; return its receipt once it is durable, or raise Refusal."""
        reply = self.request({"op": "insert", "type": event_type, "fields": fields})
        if not reply.get("ok"):
            raise refusal_from(reply)
        r = reply["receipt"]
        receipt = Receipt(str(r["table"]), int(r["log_seq"]), str(r["hash"]))
        self.receipts.append(receipt)
        return receipt

    def ping(self) -> dict[str, Any]:
        """The logger's schema and protocol versions."""
        return self.request({"op": "ping"})


def refusal_from(reply: dict[str, Any]) -> Refusal:
    """The Refusal a refused reply describes."""
    reasons = [Reason(str(r.get("code", "unknown")), str(r.get("detail", "")), r.get("subject"))
               for r in reply.get("reasons", [])] or [Reason("unknown", str(reply))]
    return Refusal(reasons, gate="claim logger")


def span_hash(text: str) -> str:
    """``sha256:`` of a transcript span (opportunities store the hash, not the text)."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def tool_call_event(episode_id: str, seq: int) -> dict[str, Any]:
    """A valid ``tool_call`` event (benchmarks and tests)."""
    return {"episode_id": episode_id, "seq": seq, "tool": "causal",
            "args_hash": span_hash(f"{episode_id}/{seq}/args"),
            "result_hash": span_hash(f"{episode_id}/{seq}/result"), "returned_edges": 1,
            "latency_ms": 3, "cost_usd": 0.0001}


def insert_many(socket_path: str | Path, episode_id: str, n: int) -> list[Receipt]:
    """Insert ``n`` tool-call events over one connection; return their receipts."""
    with ClaimClient(socket_path) as client:
        for seq in range(n):
            client.insert("tool_call", tool_call_event(episode_id, seq))
        return list(client.receipts)


def throughput(socket_path: str | Path, clients: int, events_per_client: int,
               *, prefix: str = "bench:throughput") -> dict[str, Any]:
    """Events per second through the socket with ``clients`` concurrent connections.

    Each client is a thread inserting acknowledged (durable) events one at a time.
    """
    import threading
    import time

    results: list[list[Receipt]] = [[] for _ in range(clients)]
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            results[i] = insert_many(socket_path, f"{prefix}:{time.time_ns()}:{i}",
                                     events_per_client)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - t0
    if errors:
        raise errors[0]
    n = sum(len(r) for r in results)
    return {"clients": clients, "events": n, "seconds": round(seconds, 4),
            "events_per_second": round(n / seconds, 1)}
