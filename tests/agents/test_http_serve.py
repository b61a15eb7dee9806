"""The asyncio HTTP/1.1 server under the loopback endpoint, over raw sockets."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from rungbench.agents.http_serve import (
    MAX_HEADER_BYTES,
    HttpReply,
    HttpRequest,
    HttpServer,
    body_length,
    keeps_alive,
    parse_head,
)


async def _echo(request: HttpRequest) -> HttpReply | None:
    """Echo the body; ``/drop`` drops the connection, ``/boom`` raises, ``/slow`` waits."""
    if request.target == "/drop":
        return None
    if request.target == "/boom":
        raise RuntimeError("handler failed")
    if request.target == "/slow":
        await asyncio.sleep(0.05)
    return HttpReply(200, request.method.encode() + b" " + request.body, {"X-Seen": "1"})


@pytest.fixture
def server() -> Iterator[HttpServer]:
    """An echo server, stopped after the test."""
    http = HttpServer(_echo)
    http.start()
    yield http
    http.stop()


def _connect(server: HttpServer) -> socket.socket:
    sock = socket.create_connection(server.address, timeout=5)
    return sock


def _post(target: str, body: bytes, extra: str = "", version: str = "HTTP/1.1") -> bytes:
    return (f"POST {target} {version}\r\nHost: x\r\nContent-Length: {len(body)}\r\n{extra}"
            "\r\n").encode() + body


_READERS: dict[socket.socket, Any] = {}


def _reader(sock: socket.socket) -> Any:
    """One buffered reader per socket, so bytes past one reply stay for the next."""
    if sock not in _READERS:
        _READERS[sock] = sock.makefile("rb")
    return _READERS[sock]


def _read_reply(sock: socket.socket) -> tuple[bytes, bytes]:
    """Read one reply with a Content-Length: (head, body)."""
    reader = _reader(sock)
    lines = []
    while (line := reader.readline()) not in (b"\r\n", b""):
        lines.append(line.rstrip(b"\r\n"))
    if not lines:
        raise ConnectionError("closed before a reply")
    length = next(int(line.split(b":")[1]) for line in lines
                  if line.lower().startswith(b"content-length:"))
    return b"\r\n".join(lines), reader.read(length)


def _closed(sock: socket.socket) -> bool:
    try:
        return bool(_reader(sock).read(1) == b"")
    except ConnectionResetError:
        return True


def test_keep_alive_serves_several_requests_on_one_connection(server: HttpServer) -> None:
    """Two requests on one HTTP/1.1 connection get two replies, with status, length and the
    handler's headers."""
    with _connect(server) as sock:
        for body in (b"one", b"two"):
            sock.sendall(_post("/x", body))
            head, got = _read_reply(sock)
            assert head.startswith(b"HTTP/1.1 200 OK") and b"X-Seen: 1" in head
            assert got == b"POST " + body


def test_pipelined_requests_are_answered_in_order(server: HttpServer) -> None:
    """Requests sent back to back before any reply are answered in the order sent, even
    when the first one is slow."""
    with _connect(server) as sock:
        sock.sendall(_post("/slow", b"first") + _post("/x", b"second"))
        assert _read_reply(sock)[1] == b"POST first"
        assert _read_reply(sock)[1] == b"POST second"


def test_connection_close_and_http10_close_after_the_reply(server: HttpServer) -> None:
    """``Connection: close`` and a plain HTTP/1.0 request get their reply, then EOF."""
    for extra, version in (("Connection: close\r\n", "HTTP/1.1"), ("", "HTTP/1.0")):
        with _connect(server) as sock:
            sock.sendall(_post("/x", b"bye", extra, version))
            head, body = _read_reply(sock)
            assert b"Connection: close" in head and body == b"POST bye"
            assert _closed(sock)


def test_a_body_split_across_packets_is_read_whole(server: HttpServer) -> None:
    """A body that arrives in pieces, after ``Expect: 100-continue``, is answered once whole
    (after an interim 100)."""
    with _connect(server) as sock:
        sock.sendall(b"POST /x HTTP/1.1\r\nContent-Length: 6\r\nExpect: 100-continue\r\n\r\n")
        assert _reader(sock).readline() == b"HTTP/1.1 100 Continue\r\n"
        assert _reader(sock).readline() == b"\r\n"
        sock.sendall(b"abc")
        sock.sendall(b"def")
        assert _read_reply(sock)[1] == b"POST abcdef"


def test_a_dropped_reply_closes_the_connection_without_bytes(server: HttpServer) -> None:
    """A handler that answers None closes the connection with nothing sent."""
    with _connect(server) as sock:
        sock.sendall(_post("/drop", b""))
        assert _closed(sock)


def test_a_failing_handler_is_a_500_and_the_server_goes_on(server: HttpServer) -> None:
    """An exception in the handler answers 500; the next request on the connection works."""
    with _connect(server) as sock:
        sock.sendall(_post("/boom", b""))
        head, body = _read_reply(sock)
        assert head.startswith(b"HTTP/1.1 500") and b"RuntimeError" in body
        sock.sendall(_post("/x", b"after"))
        assert _read_reply(sock)[1] == b"POST after"


@pytest.mark.parametrize(("raw", "status"), [
    (b"NOT A REQUEST\r\n\r\n", b"400"),
    (b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", b"411"),
    (b"POST /x HTTP/1.1\r\nContent-Length: nine\r\n\r\n", b"400"),
    (b"POST /x HTTP/1.1\r\nX: " + b"a" * (MAX_HEADER_BYTES + 10), b"431"),
])
def test_malformed_requests_get_a_status_and_a_close(server: HttpServer, raw: bytes,
                                                     status: bytes) -> None:
    """A request that cannot be read is answered with its status, then the connection
    closes."""
    with _connect(server) as sock:
        sock.sendall(raw)
        head, _ = _read_reply(sock)
        assert head.split(b" ")[1] == status
        assert _closed(sock)


def test_stop_closes_open_connections_and_the_port() -> None:
    """After stop, an idle keep-alive connection is closed and the port refuses new ones."""
    http = HttpServer(_echo)
    http.start()
    sock = _connect(http)
    sock.sendall(_post("/x", b"hi"))
    _read_reply(sock)
    http.stop()
    assert _closed(sock)
    sock.close()
    with pytest.raises(OSError):
        socket.create_connection(http.address, timeout=1).close()


def test_head_parsing_helpers() -> None:
    """Header names are lower-cased; keep-alive follows the version and Connection header;
    a body length must be digits."""
    method, target, version, headers = parse_head(
        b"POST /v1/chat HTTP/1.0\r\nContent-Length: 3\r\nConnection: Keep-Alive")
    assert (method, target, version, headers["content-length"]) == (
        "POST", "/v1/chat", "HTTP/1.0", "3")
    assert keeps_alive("HTTP/1.0", headers) and not keeps_alive("HTTP/1.0", {})
    assert keeps_alive("HTTP/1.1", {}) and not keeps_alive("HTTP/1.1", {"connection": "close"})
    assert body_length({"content-length": "12"}) == 12 and body_length({}) == 0
