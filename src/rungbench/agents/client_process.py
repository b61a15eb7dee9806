"""The provider's SDK client in helper processes: HTTP work off the runner's interpreter lock.

In one process, every call's SDK work (request building, HTTP, reading the reply) and the
runner's own work (digests, records, classification) take turns on one interpreter lock,
which bounds throughput at high concurrency whatever the cores. With
``client_processes=N`` (:class:`~rungbench.agents.openai_provider.OpenAIProvider`) the calls
are sent by ``N`` helper processes instead, each running the same provider, with the same
SDK client, on its own loop; the runner's process only pickles a
:class:`~rungbench.agents.protocol.Request` into a local socket and reads back the
:class:`~rungbench.agents.protocol.Response` (or the
:class:`~rungbench.agents.outcomes.CallFailure`) the helper produced. What a call returns
is what the in-process provider returns for it (the helper *is* that provider), so a run's
records do not depend on ``N``.

What holds:

* The helpers are started on the first call as fresh interpreters (not forks: the
  runner's threads and locks are not copied; not ``multiprocessing`` children: no exit
  hook of the runner, or of a process forked from it, terminates them). A helper holds
  the API key in memory only: it is the first frame on its socket, never on a command
  line, in an environment (values holding it are dropped from what a helper inherits) or
  in a file; it runs with ``-P``, so nothing is imported from the working directory.
* Calls go round-robin to the helpers; the caller bounds calls in flight (the runner's
  semaphore), so the bound is global, not per helper.
* A helper that dies fails every call it held as ``network_error`` (a reliability
  outcome the runner counts and retries: the request may have left) and is replaced on
  the next call. A helper alive but not answering (stopped, or wedged) cannot hold a call
  forever: its own SDK client times a call out after the provider's timeout, so a call it
  has not answered :meth:`ClientPool.deadline_s` after the helper said it was ready fails
  as ``timeout``, and the helper is killed (failing the other calls it held as
  ``network_error``) and replaced; a helper not ready within :data:`START_S` is killed the
  same way, its calls failing as ``network_error``. A helper whose runner dies (SIGKILL
  included) sees its socket close and exits; a child forked from the runner closes its
  copies of the sockets at once, so it keeps no helper alive. After
  :meth:`ClientPool.close` every waiting or later call fails as ``network_error``.
* Frames are a 4-byte length and a pickle, over a socket pair private to the two
  processes; nothing else can write to it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import os
import pickle
import signal
import socket
import struct
import subprocess
import sys
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rungbench.agents.outcomes import CallFailure, Outcome
from rungbench.agents.protocol import Request, Response

if TYPE_CHECKING:
    from rungbench.agents.spec import Pricing

FRAME = struct.Struct("!I")
"""Length prefix of a frame: unsigned 32-bit, network order."""
KEY_ENV = "RUNGBENCH_CLIENT_KEY"
"""The name under which a helper's provider reads the key (from its own mapping)."""
HELPER_COMMAND = "from rungbench.agents.client_process import helper_entry; helper_entry()"
"""What a helper's interpreter runs (the socket's descriptor follows as its argument)."""
JOIN_S = 5.0
"""How long :meth:`ClientPool.close` waits for a helper to exit before killing it."""
GRACE_S = 5.0
"""Seconds past twice the provider's timeout after which a call a helper holds is given
up (:meth:`ClientPool.deadline_s`), counted from when the helper said it was ready."""
START_S = 60.0
"""Seconds a helper has to start (interpreter, imports, provider) and say it is ready."""
READY = (0, None, None)
"""The frame a helper sends once its provider is built (call ids start at 1)."""


@dataclass(frozen=True)
class ClientSpec:
    """What a helper needs to build the provider (the key is never shown)."""

    model: str
    base_url: str
    key: str = field(repr=False)
    timeout_s: float
    params: dict[str, Any]
    pricing: Pricing
    label: str | None = None
    keyless: bool = False


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


FailureFields = tuple[str, str, int | None, float | None, bool]
"""A :class:`CallFailure` as plain values: outcome, detail, status, Retry-After, systematic."""


def failure_fields(failure: CallFailure) -> FailureFields:
    """A :class:`CallFailure` as plain values (what crosses the socket)."""
    return (failure.outcome.value, failure.detail, failure.status, failure.retry_after,
            failure.systematic)


def helper_entry() -> None:
    """A helper process (``python -c "...helper_entry()" FD``): read the spec, the first
    frame on socket ``FD``, then serve calls from it with an in-process provider until it
    closes. Exits quietly whatever happens (its runner reports a helper that died)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the runner's to handle
    sock = socket.socket(fileno=int(sys.argv[1]))
    try:
        spec, rest = _first_frame(sock)
        if not isinstance(spec, ClientSpec):
            raise SystemExit(2)
        from rungbench.agents.providers import open_provider
        from rungbench.agents.spec import AgentSpec, label_for

        provider = open_provider(
            AgentSpec(spec.label or label_for(spec.model), "openai", spec.model,
                      base_url=spec.base_url, api_key_env=None if spec.keyless else KEY_ENV,
                      keyless=spec.keyless, timeout_s=spec.timeout_s, params=spec.params,
                      pricing=spec.pricing),
            environ={KEY_ENV: spec.key})
        try:
            provider.drive(lambda: _serve(sock, provider, rest))
        finally:
            provider.close()
    except (OSError, EOFError, pickle.UnpicklingError):
        raise SystemExit(1) from None


def _first_frame(sock: socket.socket) -> tuple[Any, bytes]:
    """The first frame's value read from ``sock`` (blocking) and the bytes read past it."""
    data = b""
    while True:
        if len(data) >= FRAME.size:
            (length,) = FRAME.unpack_from(data)
            if len(data) >= FRAME.size + length:
                end = FRAME.size + length
                return pickle.loads(data[FRAME.size:end]), data[end:]
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise EOFError("the runner closed the socket before the spec")
        data += chunk


async def _serve(sock: socket.socket, provider: Any, rest: bytes) -> None:
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[None] = loop.create_future()
    tasks: set[asyncio.Task[None]] = set()

    async def one(ident: int, request: Request) -> None:
        reply: tuple[int, Response | None, FailureFields | None]
        try:
            reply = (ident, await provider.respond_async(request), None)
        except CallFailure as failure:
            reply = (ident, None, failure_fields(failure))
        except Exception as exc:  # the caller must hear of every call, whatever happened
            reply = (ident, None, (Outcome.PROVIDER_ERROR.value,
                                   f"client process: {type(exc).__name__}", None, None,
                                   False))
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
    channel.send(READY)  # the provider is built: deadlines start now
    if rest:
        channel.data_received(rest)
    await ended
    for task in tasks:
        task.cancel()
    channel.close()


class _Helper:
    """One helper process and the runner's end of its socket."""

    def __init__(self, spec: ClientSpec, ident: int, deadline_s: float) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        # a plain child process (not multiprocessing's): no interpreter-exit hook of the
        # runner, or of a process forked from it, ever terminates or joins it
        self.name = f"rungbench-client-{ident}"
        # -P: nothing is imported from the working directory into the process holding the
        # key; the environment passed on holds no value containing the key
        env = {k: v for k, v in os.environ.items() if spec.key not in v}
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-P", "-c", HELPER_COMMAND, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True, env=env)
        except OSError as exc:
            ours.close()
            raise CallFailure(Outcome.NETWORK_ERROR, f"client process {self.name} could not "
                              f"start: {type(exc).__name__}: {exc.strerror}") from None
        finally:
            theirs.close()
        self.spec = spec
        self.sock = ours
        self.pending: dict[int, asyncio.Future[Response]] = {}
        self.channel = Channel(self._received, self._lost)
        self._opening: asyncio.Future[None] | None = None
        self.alive = True
        self.ready = False
        """The helper said its provider is built (its calls' deadlines run from then)."""
        self.deadline_s = deadline_s
        self.timers: dict[int, asyncio.TimerHandle] = {}
        self._start_timer: asyncio.TimerHandle | None = None
        self._lost_why = "exited"

    async def opened(self) -> None:
        """Return once the runner's end is open (the first caller opens it)."""
        if self._opening is None:
            self._opening = asyncio.ensure_future(self._open())
        if self._opening.done():  # every call after the first: no wrapper future
            self._opening.result()
        else:
            await asyncio.shield(self._opening)

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.create_unix_connection(lambda: self.channel, sock=self.sock)
        self.channel.send(self.spec)  # the first frame (the key crosses only this socket)
        self._start_timer = loop.call_later(START_S, self._not_started)  # READY cancels it

    def arm(self, ident: int) -> None:
        """Start call ``ident``'s deadline (once the helper is ready)."""
        if self.ready and ident in self.pending and ident not in self.timers:
            self.timers[ident] = asyncio.get_running_loop().call_later(
                self.deadline_s, self.expire, ident)

    def disarm(self, ident: int) -> None:
        """Cancel call ``ident``'s deadline (it was answered, failed or cancelled)."""
        timer = self.timers.pop(ident, None)
        if timer is not None:
            timer.cancel()

    def _not_started(self) -> None:
        if not self.ready and self.alive:
            self._kill(f"was killed (not ready within {START_S:g}s)")

    def _received(self, value: Any) -> None:
        if value == READY:
            self.ready = True
            if self._start_timer is not None:
                self._start_timer.cancel()
            for ident in list(self.pending):
                self.arm(ident)
            return
        ident, response, failed = value
        future = self.pending.pop(ident, None)
        if future is None or future.done():
            return
        if failed is None:
            future.set_result(response)
        else:
            outcome, detail, status, retry_after, systematic = failed
            future.set_exception(CallFailure(Outcome(outcome), detail, status=status,
                                             retry_after=retry_after, systematic=systematic))

    def _lost(self) -> None:
        self.alive = False
        if self._start_timer is not None:
            self._start_timer.cancel()
        pending, self.pending = self.pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(CallFailure(
                    Outcome.NETWORK_ERROR,
                    f"client process {self.name} {self._lost_why} (code "
                    f"{self.process.poll()}) with the call in flight"))

    def expire(self, ident: int) -> None:
        """Call ``ident`` had no reply by its deadline: fail it as ``timeout``; the helper,
        which its own SDK timeout did not make answer, is killed (its other calls fail as
        ``network_error``) and replaced on the next call."""
        self.timers.pop(ident, None)
        future = self.pending.pop(ident, None)
        if future is None or future.done():
            return
        future.set_exception(CallFailure(
            Outcome.TIMEOUT, f"no reply within {self.deadline_s:g}s from client process "
            f"{self.name} (unresponsive: killed and replaced)"))
        self._kill("was killed (unresponsive)")

    def _kill(self, why: str) -> None:
        """Kill the helper: its calls fail (``why`` says how it ended); replaced later."""
        self.alive = False
        self._lost_why = why
        with contextlib.suppress(OSError):
            self.process.kill()
        self.channel.close()

    def stop(self) -> None:
        """End the socket (the helper exits at once), then make sure it has: callable from
        any thread, the loop's included (the shutdown needs no loop turn)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        _ended(self.process)
        if self._opening is None:  # else the transport owns the socket (and closes it)
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
        self.closed = False
        _POOLS.add(self)

    @property
    def deadline_s(self) -> float:
        """Seconds a call may wait on its helper: twice the provider's timeout (the
        helper's SDK client raises its own timeout after one) plus :data:`GRACE_S`."""
        return 2 * self.spec.timeout_s + GRACE_S

    async def respond(self, request: Request) -> Response:
        """Send ``request`` through the next helper; return its response (or raise its
        :class:`CallFailure`)."""
        if self.closed:
            raise CallFailure(Outcome.NETWORK_ERROR, "the provider's client processes are "
                              "closed")
        if not self.started:  # the first call starts them all: their imports overlap
            for k in range(len(self.helpers)):
                self.started += 1
                self.helpers[k] = _Helper(self.spec, self.started, self.deadline_s)
        slot = next(self._turn) % len(self.helpers)
        helper = self.helpers[slot]
        if helper is None or not helper.alive:
            if helper is not None:  # reaped off the loop, not awaited: close() may come
                threading.Thread(target=helper.stop, name=f"{helper.name}-reaper",
                                 daemon=True).start()
            self.started += 1
            helper = _Helper(self.spec, self.started, self.deadline_s)
            self.helpers[slot] = helper  # before any await: one helper per slot
        try:
            await helper.opened()
        except OSError as exc:  # its socket is unusable: as if the helper had died
            helper.alive = False
            raise CallFailure(Outcome.NETWORK_ERROR, f"client process {helper.name}: socket "
                              f"failed ({type(exc).__name__})") from None
        if self.closed or not helper.alive:  # it died (or the pool closed) while opening
            raise CallFailure(Outcome.NETWORK_ERROR,
                              f"client process {helper.name} exited before the call")
        ident = next(self._ids)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Response] = loop.create_future()
        helper.pending[ident] = future
        helper.channel.send((ident, request))
        helper.arm(ident)  # or when the helper says it is ready
        try:
            return await future
        finally:
            helper.disarm(ident)

    def pids(self) -> list[int]:
        """Process ids of the helpers started and not yet replaced (in slot order)."""
        return [h.process.pid for h in self.helpers if h is not None]

    async def close(self) -> None:
        """Stop every helper (each exits once its socket closes); a call still waiting
        fails as ``network_error``, and a later call too."""
        self.closed = True
        helpers = [h for h in self.helpers if h is not None]
        self.helpers = [None] * len(self.helpers)
        for helper in helpers:
            if helper._opening is not None:  # let the transport own its socket first
                with contextlib.suppress(Exception):
                    await asyncio.shield(helper._opening)
            helper.stop()
            helper.channel.close()  # fails whatever it still held

    def stop_now(self) -> None:
        """Stop every helper from any thread (interpreter exit, the loop may be gone)."""
        helpers = [h for h in self.helpers if h is not None]
        self.helpers = [None] * len(self.helpers)
        for helper in helpers:
            helper.stop()


_POOLS: weakref.WeakSet[ClientPool] = weakref.WeakSet()
"""Every pool of this process: stopped at interpreter exit; a forked child lets go of
their sockets at the fork (so a copy never shuts the owner's, which would end them for the
owner too)."""


def _forget_in_child() -> None:
    """In a forked child: close its copies of the pools' sockets (closing a copy ends
    nothing for the owner; keeping it would keep the helpers alive after the owner
    died), and leave the helpers to their owner."""
    for pool in list(_POOLS):
        for helper in pool.helpers:
            if helper is not None:
                with contextlib.suppress(OSError):  # detached: never closed twice
                    os.close(helper.sock.detach())
        pool.helpers = [None] * len(pool.helpers)
        pool.closed = True
    _POOLS.clear()


def _stop_every_pool() -> None:
    for pool in list(_POOLS):
        pool.stop_now()


os.register_at_fork(after_in_child=_forget_in_child)
atexit.register(_stop_every_pool)


def _ended(process: subprocess.Popen[bytes]) -> None:
    """Wait for ``process`` to exit; kill it past :data:`JOIN_S`."""
    try:
        process.wait(JOIN_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(JOIN_S)
