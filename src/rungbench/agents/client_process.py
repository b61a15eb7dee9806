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


async def read_frame(reader: asyncio.StreamReader) -> Any:
    """The next frame's value; raises ``asyncio.IncompleteReadError`` at end of stream."""
    (size,) = FRAME.unpack(await reader.readexactly(FRAME.size))
    return pickle.loads(await reader.readexactly(size))


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
    reader, writer = await asyncio.open_unix_connection(sock=sock)
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
        writer.write(frame(reply))

    while True:
        try:
            ident, request = await read_frame(reader)
        except (asyncio.IncompleteReadError, ConnectionError):  # the runner is gone
            break
        task = asyncio.create_task(one(ident, request))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    for task in tasks:
        task.cancel()
    writer.close()


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
        self.writer: asyncio.StreamWriter | None = None
        self.reading: asyncio.Task[None] | None = None
        self._opening: asyncio.Future[None] | None = None
        self.alive = True

    async def opened(self) -> None:
        """Return once the runner's end is open (the first caller opens it)."""
        if self._opening is None:
            self._opening = asyncio.ensure_future(self._open())
        await asyncio.shield(self._opening)

    async def _open(self) -> None:
        reader, self.writer = await asyncio.open_unix_connection(sock=self.sock)
        self.reading = asyncio.create_task(self._read(reader))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                ident, response, failed = await read_frame(reader)
                future = self.pending.pop(ident, None)
                if future is None or future.done():
                    continue
                if failed is None:
                    future.set_result(response)
                else:
                    outcome, detail, status, retry_after = failed
                    future.set_exception(CallFailure(Outcome(outcome), detail, status=status,
                                                     retry_after=retry_after))
        except (asyncio.IncompleteReadError, ConnectionError, pickle.UnpicklingError,
                ValueError, TypeError, EOFError):
            pass
        finally:
            self.alive = False
            code = self.process.exitcode
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(CallFailure(
                        Outcome.NETWORK_ERROR,
                        f"client process {self.process.name} exited (code {code}) "
                        "with the call in flight"))
            self.pending.clear()

    def stop(self) -> None:
        """End the socket (the helper exits at once), then make sure it has: callable from
        any thread, the loop's included (the shutdown needs no loop turn)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.process.join(JOIN_S)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(JOIN_S)
        if self.writer is not None:
            self.writer.close()
        else:
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
        ident = next(self._ids)
        future: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        helper.pending[ident] = future
        assert helper.writer is not None
        helper.writer.write(frame((ident, request)))
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
            if helper.reading is not None:
                await helper.reading

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
