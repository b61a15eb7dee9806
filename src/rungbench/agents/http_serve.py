"""A small HTTP/1.1 server on an asyncio event loop: keep-alive, one request at a time per
connection, ``Content-Length`` bodies.

It is the transport of :class:`~rungbench.agents.loopback.LoopbackServer`: one event loop
thread serves every connection (no thread per connection), so a slow reply (a latency or
a stall being simulated) costs a timer, not a thread, and the parsing is a few byte
splits. It is a real server on a real socket: clients talk to it over TCP like to any
endpoint.

Supported: ``HTTP/1.1`` (keep-alive unless ``Connection: close``) and ``HTTP/1.0``
(closed after the reply unless ``Connection: keep-alive``), ``Expect: 100-continue``,
pipelined requests (answered in order). Refused with a status: a malformed request line
or header (400), a header block over :data:`MAX_HEADER_BYTES` (431), a body over
:data:`MAX_BODY_BYTES` (413), a chunked request body (411: send ``Content-Length``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http import HTTPStatus

MAX_HEADER_BYTES = 64 * 1024
"""Largest request line plus headers accepted."""
MAX_BODY_BYTES = 64 * 1024 * 1024
"""Largest request body accepted."""
SERVER_NAME = "rungbench-loopback"


@dataclass(frozen=True)
class HttpRequest:
    """One parsed request."""

    method: str
    target: str
    """The request target as sent (path and query)."""
    version: str
    """``HTTP/1.1`` or ``HTTP/1.0``."""
    headers: dict[str, str]
    """Header values by lower-cased name (a repeated header keeps its last value)."""
    body: bytes

    def header(self, name: str) -> str | None:
        """Return a header's value (``name`` in any case), or None."""
        return self.headers.get(name.lower())


@dataclass(frozen=True)
class HttpReply:
    """A reply to send: status, body and extra headers (``Content-Type`` is JSON unless set)."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[HttpRequest], Awaitable[HttpReply | None]]
"""Answers one request; None closes the connection without answering (a dropped call)."""


class BadRequest(Exception):
    """A request that cannot be parsed; carries the status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def parse_head(head: bytes) -> tuple[str, str, str, dict[str, str]]:
    """Parse a request line and its header lines (without the blank line) or raise
    :class:`BadRequest`."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or parts[2] not in ("HTTP/1.1", "HTTP/1.0") or not parts[0].isalpha():
        raise BadRequest(400, f"bad request line {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise BadRequest(400, f"bad header line {line[:80]!r}")
        headers[name.lower()] = value.strip()
    return parts[0], parts[1], parts[2], headers


def body_length(headers: dict[str, str]) -> int:
    """Return the declared body length, or raise :class:`BadRequest`."""
    if "transfer-encoding" in headers:
        raise BadRequest(411, "chunked request bodies are not supported; send Content-Length")
    text = headers.get("content-length", "0")
    if not text.isdigit():
        raise BadRequest(400, f"bad Content-Length {text[:40]!r}")
    length = int(text)
    if length > MAX_BODY_BYTES:
        raise BadRequest(413, f"body of {length} bytes is over {MAX_BODY_BYTES}")
    return length


def keeps_alive(version: str, headers: dict[str, str]) -> bool:
    """Whether the connection stays open after this request's reply."""
    tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
    if version == "HTTP/1.0":
        return "keep-alive" in tokens
    return "close" not in tokens


def reply_bytes(reply: HttpReply, *, close: bool) -> bytes:
    """Return the reply's status line, headers and body."""
    try:
        reason = HTTPStatus(reply.status).phrase
    except ValueError:
        reason = "Unknown"
    headers = {"Content-Type": "application/json", **reply.headers}
    lines = [f"HTTP/1.1 {reply.status} {reason}", f"Server: {SERVER_NAME}",
             f"Content-Length: {len(reply.body)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + reply.body


class _Connection(asyncio.Protocol):
    """One client connection: buffers bytes, answers complete requests in order."""

    def __init__(self, handler: Handler, open_set: set[_Connection]) -> None:
        self.handler = handler
        self.open_set = open_set
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.busy = False
        self.closed = False
        self.continued = False
        """Whether ``100 Continue`` was sent for the request at the head of the buffer."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.open_set.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.open_set.discard(self)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.busy:
            self._next()

    def _next(self) -> None:
        """Start answering the request at the head of the buffer, if it is complete."""
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buffer) > MAX_HEADER_BYTES:
                self._fail(431, "request header block too large")
            return
        try:
            method, target, version, headers = parse_head(bytes(self.buffer[:end]))
            length = body_length(headers)
        except BadRequest as exc:
            self._fail(exc.status, str(exc))
            return
        if len(self.buffer) < end + 4 + length:
            if headers.get("expect", "").lower() == "100-continue" and not self.continued:
                self.continued = True
                self._write(b"HTTP/1.1 100 Continue\r\n\r\n")
            return
        body = bytes(self.buffer[end + 4 : end + 4 + length])
        del self.buffer[: end + 4 + length]
        self.continued = False
        self.busy = True
        request = HttpRequest(method, target, version, headers, body)
        task = asyncio.ensure_future(self._answer(request, keeps_alive(version, headers)))
        task.add_done_callback(_retrieve)

    async def _answer(self, request: HttpRequest, keep: bool) -> None:
        try:
            reply = await self.handler(request)
        except Exception as exc:  # the handler failed: a 500, as any server would answer
            reply = HttpReply(500, _error_body(f"server failed: {type(exc).__name__}"))
        if reply is None:  # drop the connection without answering
            self._close()
            return
        self._write(reply_bytes(reply, close=not keep))
        if not keep:
            self._close()
            return
        self.busy = False
        if self.buffer and not self.closed:
            self._next()

    def _fail(self, status: int, message: str) -> None:
        self._write(reply_bytes(HttpReply(status, _error_body(message)), close=True))
        self._close()

    def _write(self, data: bytes) -> None:
        if self.transport is not None and not self.closed:
            self.transport.write(data)

    def _close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


def _error_body(message: str) -> bytes:
    return json.dumps({"error": {"message": message}}).encode("utf-8")


def _retrieve(task: asyncio.Future[None]) -> None:
    """Consume a finished task's exception (a connection lost mid-reply), so none is logged."""
    if not task.cancelled():
        task.exception()


class HttpServer:
    """Serve ``handler`` on a socket bound at construction, from an event loop thread."""

    def __init__(self, handler: Handler, host: str = "127.0.0.1", backlog: int = 1024) -> None:
        self.handler = handler
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(backlog)
        self.sock.setblocking(False)
        host, port = self.sock.getsockname()[:2]
        self._address = (str(host), int(port))
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self._open: set[_Connection] = set()

    @property
    def address(self) -> tuple[str, int]:
        """``(host, port)`` the socket is bound to."""
        return self._address

    def start(self) -> None:
        """Start the loop thread; return once the server accepts connections."""
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self.loop = loop
            try:
                protocol = lambda: _Connection(self.handler, self._open)  # noqa: E731
                self._server = loop.run_until_complete(
                    loop.create_server(protocol, sock=self.sock)
                )
            except BaseException as exc:  # handed to start()'s caller
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                self._shutdown(loop)

        self._thread = threading.Thread(target=run, name="rungbench-loopback", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise failure[0]

    def stop(self) -> None:
        """Stop accepting, drop every connection and pending reply, close the socket."""
        loop, thread = self.loop, self._thread
        if loop is not None and thread is not None and thread.is_alive():
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
        with contextlib.suppress(OSError):
            self.sock.close()

    def _shutdown(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._server is not None:
            self._server.close()
        for connection in list(self._open):
            connection._close()
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        if tasks:
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()
