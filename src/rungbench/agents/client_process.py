"""The provider's SDK client in helper processes: HTTP work off the runner's interpreter lock.

In one process, every call's SDK work (request building, HTTP, reading the reply) and the
runner's own work (digests, records, classification) take turns on one interpreter lock,
which bounds throughput at high concurrency whatever the cores. With
``OpenAIProvider(..., client_processes=N)`` the calls are sent by ``N`` helper processes
instead, each running the same provider, with the same SDK client, on its own loop; the
runner's process only pickles a :class:`~rungbench.agents.protocol.Request` into a local
socket and reads back the :class:`~rungbench.agents.protocol.Response` (or the
:class:`~rungbench.agents.outcomes.CallFailure`) the helper produced. What a call returns
is what the in-process provider returns for it (the helper *is* that provider), so a run's
records do not depend on ``N``.

What holds:

* A helper is spawned (not forked: the runner's threads and locks are not copied) on the
  first call and holds the API key in memory only: it reaches it through the spawn pipe,
  never through the command line, the environment of other processes or a file.
* Calls go round-robin to the helpers; the caller bounds calls in flight (the runner's
  semaphore), so the bound is global, not per helper.
* A helper that dies fails every call it held as ``network_error`` (a reliability
  outcome the runner counts and retries: the request may have left) and is replaced on
  the next call. A helper whose runner dies (SIGKILL included) sees its socket close and
  exits.
* Frames are a 4-byte length and a pickle, over a socket pair private to the two
  processes; nothing else can write to it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import multiprocessing
import pickle
import signal
import socket
import struct
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rungbench.agents.outcomes import CallFailure, Outcome
from rungbench.agents.protocol import Request, Response

if TYPE_CHECKING:
    from rungbench.agents.openai_provider import Pricing

FRAME = struct.Struct("!I")
"""Length prefix of a frame: unsigned 32-bit, network order."""
KEY_ENV = "RUNGBENCH_CLIENT_KEY"
"""The name under which a helper's provider reads the key (from its own mapping)."""
JOIN_S = 5.0
"""How long :meth:`ClientPool.close` waits for a helper to exit before killing it."""


@dataclass(frozen=True)
class ClientSpec:
    """What a helper needs to build the provider (the key is never shown)."""

    model: str
    base_url: str
    key: str = field(repr=False)
    timeout_s: float
    params: dict[str, Any]
    pricing: Pricing


def frame(value: object) -> bytes:
    """``value`` pickled, behind its length."""
    body = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return FRAME.pack(len(body)) + body


class Channel(asyncio.Protocol):
    """Frames both ways over one stream socket, cheaply: every whole frame a read brings is
    handed to ``on_frame`` (several per read at high concurrency), and the frames sent in
    one loop turn leave in one write; ``on_lost`` is called once, when the stream ends or
    brings bytes that are not a frame (the channel is closed then)."""

    def __init__(self, on_frame: Callable[[Any], None], on_lost: Callable[[], None]) -> None:
        self.on_frame = on_frame
        self.on_lost = on_lost
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._out: list[bytes] = []
        self._lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        at, size = 0, len(buffer)
        try:
            while size - at >= FRAME.size:
                (length,) = FRAME.unpack_from(buffer, at)
                if size - at - FRAME.size < length:
                    break
                value = pickle.loads(buffer[at + FRAME.size:at + FRAME.size + length])
                at += FRAME.size + length
                self.on_frame(value)
        except Exception:  # not a frame of ours: the stream is broken
            self.close()
            return
        del buffer[:at]

    def send(self, value: object) -> None:
        """Queue one frame; the frames of this loop turn are written together."""
        if not self._out:
            asyncio.get_running_loop().call_soon(self._flush)
        self._out.append(frame(value))

    def _flush(self) -> None:
        out, self._out = self._out, []
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(b"".join(out))

    def close(self) -> None:
        """Close the stream (``on_lost`` runs)."""
        if self.transport is not None:
            self.transport.close()
        self.connection_lost(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._lost:
            self._lost = True
            self.on_lost()


def failure_fields(failure: CallFailure) -> tuple[str, str, int | None, float | None]:
    """A :class:`CallFailure` as plain values (what crosses the socket)."""
    return failure.outcome.value, failure.detail, failure.status, failure.retry_after


def helper_main(sock: socket.socket, spec: ClientSpec) -> None:
    """A helper process: serve calls from ``sock`` with an in-process provider until the
    socket closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the runner's to handle
    from rungbench.agents.openai_provider import OpenAIProvider

    provider = OpenAIProvider(spec.model, base_url=spec.base_url, api_key_env=KEY_ENV,
                              timeout_s=spec.timeout_s, params=spec.params,
                              pricing=spec.pricing, environ={KEY_ENV: spec.key})
    try:
        provider.drive(lambda: _serve(sock, provider))
    finally:
        provider.close()


async def _serve(sock: socket.socket, provider: Any) -> None:
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[None] = loop.create_future()
    tasks: set[asyncio.Task[None]] = set()

    async def one(ident: int, request: Request) -> None:
        reply: tuple[int, Response | None, tuple[str, str, int | None, float | None] | None]
        try:
            reply = (ident, await provider.respond_async(request), None)
        except CallFailure as failure:
            reply = (ident, None, failure_fields(failure))
        except Exception as exc:  # the caller must hear of every call, whatever happened
            reply = (ident, None, (Outcome.PROVIDER_ERROR.value,
                                   f"client process: {type(exc).__name__}", None, None))
        channel.send(reply)

    def received(value: Any) -> None:
        ident, request = value
        task = loop.create_task(one(ident, request))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    def lost() -> None:  # the runner is gone (or closed the provider)
        if not ended.done():
            ended.set_result(None)

    channel = Channel(received, lost)
    await loop.create_unix_connection(lambda: channel, sock=sock)
    await ended
    for task in tasks:
        task.cancel()
    channel.close()


class _Helper:
    """One helper process and the runner's end of its socket."""

    def __init__(self, spec: ClientSpec, ident: int) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        ctx = multiprocessing.get_context("spawn")
        # a daemonic process may not have children: then the helper is not daemonic
        # either, and exits when its socket closes (close() or this process's death)
        self.process = ctx.Process(target=helper_main, args=(theirs, spec),
                                   name=f"rungbench-client-{ident}",
                                   daemon=not multiprocessing.current_process().daemon)
        self.process.start()
        theirs.close()
        self.sock = ours
        self.pending: dict[int, asyncio.Future[Response]] = {}
        self.channel = Channel(self._received, self._lost)
        self._opening: asyncio.Future[None] | None = None
        self.alive = True

    async def opened(self) -> None:
        """Return once the runner's end is open (the first caller opens it)."""
        if self._opening is None:
            self._opening = asyncio.ensure_future(self._open())
        await asyncio.shield(self._opening)

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.create_unix_connection(lambda: self.channel, sock=self.sock)

    def _received(self, value: Any) -> None:
        ident, response, failed = value
        future = self.pending.pop(ident, None)
        if future is None or future.done():
            return
        if failed is None:
            future.set_result(response)
        else:
            outcome, detail, status, retry_after = failed
            future.set_exception(CallFailure(Outcome(outcome), detail, status=status,
                                             retry_after=retry_after))

    def _lost(self) -> None:
        self.alive = False
        pending, self.pending = self.pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(CallFailure(
                    Outcome.NETWORK_ERROR,
                    f"client process {self.process.name} exited (code "
                    f"{self.process.exitcode}) with the call in flight"))

    def stop(self) -> None:
        """End the socket (the helper exits at once), then make sure it has: callable from
        any thread, the loop's included (the shutdown needs no loop turn)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.process.join(JOIN_S)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(JOIN_S)
        if self.channel.transport is None:
            self.sock.close()


class ClientPool:
    """``processes`` helpers serving one provider's calls (see the module docstring).

    Built and used on the provider's loop; :meth:`respond` is that loop's coroutine.
    """

    def __init__(self, spec: ClientSpec, processes: int) -> None:
        if processes < 1:
            raise ValueError(f"a client pool needs at least one process, got {processes}")
        self.spec = spec
        self.helpers: list[_Helper | None] = [None] * processes
        self._turn = itertools.count()
        self._ids = itertools.count(1)
        self.started = 0
        """Helpers started so far (replacements included)."""
        atexit.register(_stop_all, weakref.ref(self))

    async def respond(self, request: Request) -> Response:
        """Send ``request`` through the next helper; return its response (or raise its
        :class:`CallFailure`)."""
        slot = next(self._turn) % len(self.helpers)
        helper = self.helpers[slot]
        if helper is None or not helper.alive:
            if helper is not None:
                self.helpers[slot] = None
                await asyncio.to_thread(helper.stop)
            helper = self.helpers[slot]  # another call may have replaced it meanwhile
            if helper is None:
                self.started += 1
                helper = _Helper(self.spec, self.started)
                self.helpers[slot] = helper  # before any await: one helper per slot
        await helper.opened()
        if not helper.alive:  # it died while opening
            raise CallFailure(Outcome.NETWORK_ERROR,
                              f"client process {helper.process.name} exited before the call")
        ident = next(self._ids)
        future: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        helper.pending[ident] = future
        helper.channel.send((ident, request))
        return await future

    def pids(self) -> list[int]:
        """Process ids of the helpers started and not yet replaced (in slot order)."""
        return [h.process.pid for h in self.helpers
                if h is not None and h.process.pid is not None]

    async def close(self) -> None:
        """Stop every helper (each exits once its socket closes)."""
        helpers = [h for h in self.helpers if h is not None]
        self.helpers = [None] * len(self.helpers)
        for helper in helpers:
            helper.stop()
            helper.channel.close()  # fails whatever it still held

    def stop_now(self) -> None:
        """Stop every helper from any thread (interpreter exit, the loop may be gone)."""
        helpers = [h for h in self.helpers if h is not None]
        self.helpers = [None] * len(self.helpers)
        for helper in helpers:
            with contextlib.suppress(OSError):
                helper.sock.shutdown(socket.SHUT_RDWR)
            helper.process.join(JOIN_S)
            if helper.process.is_alive():
                helper.process.kill()


def _stop_all(ref: weakref.ref[ClientPool]) -> None:
    pool = ref()
    if pool is not None:
        pool.stop_now()
