"""An OpenAI-compatible chat-completions server on loopback, backed by any Agent.

Tests, the runner benchmark and the demo point the real ``openai`` client at it,
so the whole path (HTTP, SDK parsing, error mapping, retries) is exercised
without a network. Faults can be injected per request payload, in arrival order:
``429`` with Retry-After, ``500``, a stalled reply (client timeout), a body that
is not JSON, a tool call with garbage arguments, a refusal, and a dropped
connection. The server counts requests per payload digest, so a test can prove
that a completed cell is never sent again.

The server checks the bearer key it was given, as a real endpoint would.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import StrEnum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from rungbench.agents.protocol import Agent, Message, Request, Response
from rungbench.evidence.canonical import canonical_bytes, digest


class Fault(StrEnum):
    """A failure the loopback server can inject instead of a normal reply."""

    RATE_LIMIT = "429"
    SERVER_ERROR = "500"
    STALL = "stall"
    NOT_JSON = "not_json"
    GARBAGE_ARGUMENTS = "garbage_arguments"
    REFUSAL = "refusal"
    DROP = "drop"


FaultPlan = Callable[[str, int], Fault | None]
"""``(payload digest, 0-based arrival index for that payload) -> fault or None``."""

MetadataFn = Callable[[dict[str, Any]], dict[str, Any]]
"""Recovers an unknown request's metadata from its payload (e.g. a FEN in the prompt)."""

REFUSAL_TEXT = "I can't help with that request."
GARBAGE_ARGUMENTS = '{"move": e2e4,,'


class LoopbackServer:
    """A threaded HTTP server on 127.0.0.1 (port chosen by the OS) serving one Agent."""

    def __init__(
        self,
        agent: Agent,
        *,
        api_key: str,
        requests: Iterable[Request] = (),
        metadata_fn: MetadataFn | None = None,
        faults: Mapping[str, Sequence[Fault]] | None = None,
        fault_plan: FaultPlan | None = None,
        delay_s: float = 0.0,
        retry_after_s: float = 0.3,
        stall_s: float = 2.0,
        model: str = "loopback",
    ) -> None:
        self.agent = agent
        self.model = model
        self.delay_s = delay_s
        self.retry_after_s = retry_after_s
        self.stall_s = stall_s
        self.metadata_fn = metadata_fn
        self.faults = {k: tuple(v) for k, v in (faults or {}).items()}
        self.fault_plan = fault_plan
        self.counts: Counter[str] = Counter()
        """Requests received per payload digest (authorised ones only)."""
        self.last_body: dict[str, Any] | None = None
        """The most recent authorised request body, as received."""
        self.served: list[tuple[str, str]] = []
        """``(payload digest, fault value or "ok")`` in arrival order."""
        self.in_flight = 0
        """Authorised requests being served right now."""
        self.max_in_flight = 0
        """The most authorised requests ever served at once (proves a concurrency limit)."""
        self._known = {r.payload_digest(): r for r in requests}
        self._api_key = api_key
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _handler_for(self))
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The ``/v1`` base URL to give the OpenAI client."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> LoopbackServer:
        """Serve in a daemon thread; return self."""
        # a short poll interval makes stop() return in ~50 ms instead of ~500 ms
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def register(self, request: Request) -> None:
        """Make ``request`` (with its metadata) known, so its payload resolves to it."""
        with self._lock:
            self._known[request.payload_digest()] = request

    def authorised(self, header: str | None) -> bool:
        """Return whether an ``Authorization`` header carries this server's key."""
        return header == f"Bearer {self._api_key}"

    def admit(self, payload: dict[str, Any]) -> tuple[str, Fault | None]:
        """Count one arrival of ``payload``; return its digest and the fault to inject."""
        key = digest(payload)
        with self._lock:
            index = self.counts[key]
            self.counts[key] += 1
            planned = self.faults.get(key, ())
            fault = planned[index] if index < len(planned) else None
            if fault is None and self.fault_plan is not None:
                fault = self.fault_plan(key, index)
            self.served.append((key, fault.value if fault is not None else "ok"))
        return key, fault

    def enter(self) -> None:
        """Count one request as in flight (served until :meth:`leave`)."""
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self) -> None:
        """Count one in-flight request as answered."""
        with self._lock:
            self.in_flight -= 1

    def resolve(self, key: str, payload: dict[str, Any]) -> Request:
        """Return the frozen request for ``payload``: a known one, or one rebuilt from it."""
        with self._lock:
            known = self._known.get(key)
        if known is not None:
            return known
        messages = tuple(Message.from_json(m) for m in payload["messages"])
        return Request(
            case_id=f"loopback:{key[7:23]}",
            messages=messages,
            tools=tuple(payload.get("tools", ())),
            tool_choice=payload.get("tool_choice"),
            metadata=self.metadata_fn(payload) if self.metadata_fn is not None else {},
        )

    def completion(self, request: Request, fault: Fault | None) -> dict[str, Any]:
        """Return the chat-completion body for ``request`` (normal, garbage or refusal)."""
        if fault is Fault.REFUSAL:
            response = Response(text=REFUSAL_TEXT, refusal=REFUSAL_TEXT)
        else:
            response = self.agent.respond(request)
        calls = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": GARBAGE_ARGUMENTS
                    if fault is Fault.GARBAGE_ARGUMENTS
                    else c.arguments,
                },
            }
            for i, c in enumerate(response.tool_calls)
        ]
        message: dict[str, Any] = {
            "role": "assistant",
            "content": response.text,
            "refusal": response.refusal,
        }
        if calls:
            message["tool_calls"] = calls
        tokens_in = response.usage.tokens_in or len(canonical_bytes(request.payload())) // 4
        tokens_out = response.usage.tokens_out or max(1, len(json.dumps(message)) // 4)
        return {
            "id": f"chatcmpl-{request.digest()[7:23]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
            ],
            "usage": {
                "prompt_tokens": tokens_in,
                "completion_tokens": tokens_out,
                "total_tokens": tokens_in + tokens_out,
            },
        }


class _Server(ThreadingHTTPServer):
    """Threaded server with a backlog deep enough for bursts of 16+ concurrent clients."""

    daemon_threads = True
    request_queue_size = 128


def wire_payload(body: dict[str, Any]) -> dict[str, Any]:
    """Return the part of a chat-completions body that :meth:`Request.payload` describes."""
    out: dict[str, Any] = {"messages": body["messages"], "tools": body.get("tools", [])}
    if body.get("tool_choice") is not None:
        out["tool_choice"] = body["tool_choice"]
    return out


def _json(
    status: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> tuple[int, bytes, dict[str, str] | None]:
    return status, json.dumps(body).encode("utf-8"), headers


def _handler_for(server: LoopbackServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # without this, Nagle's algorithm and delayed ACKs add ~40 ms to every reply
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:
            """Stay quiet: tests and benchmarks read counters, not access logs."""

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            if not server.authorised(self.headers.get("Authorization")):
                self._send(401, {"error": {"message": "invalid api key", "type": "auth"}})
                return
            try:
                body = json.loads(raw)
                payload = wire_payload(body)
            except (ValueError, KeyError, TypeError) as exc:
                self._send(400, {"error": {"message": f"bad request body: {exc}"}})
                return
            server.last_body = body
            key, fault = server.admit(payload)
            server.enter()
            try:  # the reply is composed while counted in flight, written after
                reply = self._reply(key, payload, fault)
            finally:
                server.leave()
            if reply is None:  # Fault.DROP: close without answering
                self.close_connection = True
                return
            self._send_bytes(*reply)

        def _reply(
            self, key: str, payload: dict[str, Any], fault: Fault | None
        ) -> tuple[int, bytes, dict[str, str] | None] | None:
            if server.delay_s:
                time.sleep(server.delay_s)
            if fault is Fault.DROP:
                return None
            if fault is Fault.RATE_LIMIT:
                headers = {"Retry-After": f"{server.retry_after_s:g}"}
                return _json(429, {"error": {"message": "rate limited", "type": "rate_limit"}},
                             headers)
            if fault is Fault.SERVER_ERROR:
                return _json(500, {"error": {"message": "upstream failure", "type": "server"}})
            if fault is Fault.STALL:
                time.sleep(server.stall_s)
            if fault is Fault.NOT_JSON:
                return 200, b"<html><body>502 gateway hiccup</body></html>", None
            try:
                body = server.completion(server.resolve(key, payload), fault)
            except Exception as exc:  # the backing agent failed: a 500, as a real server would
                return _json(
                    500, {"error": {"message": f"agent failed: {type(exc).__name__}: {exc}"}}
                )
            return _json(200, body)

        def _send(
            self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
        ) -> None:
            self._send_bytes(status, json.dumps(body).encode("utf-8"), headers)

        def _send_bytes(
            self, status: int, data: bytes, headers: dict[str, str] | None = None
        ) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

    return Handler
