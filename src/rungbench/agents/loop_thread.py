"""A private asyncio event loop on a daemon thread, for blocking callers.

:class:`~rungbench.agents.openai_provider.OpenAIProvider` answers the blocking
:class:`~rungbench.agents.protocol.Agent` protocol from many runner threads at once, but
sends through the SDK's asynchronous client: every call is a coroutine on one loop, so the
HTTP work of all calls in flight runs in one thread (no thread per connection fighting
for the interpreter lock) over one connection pool.

The loop starts on first use and again after :meth:`LoopThread.close`, and again in a
forked child (a fork copies no threads), so an object holding one can be built, closed
and shipped freely.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """Runs coroutines on its own event loop thread; ``resource`` is built on that loop.

    ``make`` builds the loop's resource (an SDK client, say) inside the loop, once per
    start; ``dispose`` closes it before the loop stops.
    """

    def __init__(
        self,
        make: Callable[[], Any],
        dispose: Callable[[Any], Coroutine[Any, Any, None]],
        *,
        name: str = "rungbench-loop",
    ) -> None:
        self._make = make
        self._dispose = dispose
        self._name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._resource: Any = None
        self._pid = 0

    def call(self, work: Callable[[Any], Coroutine[Any, Any, T]]) -> T:
        """Run ``work(resource)`` on the loop and return its result (or raise its error).

        Raises ``concurrent.futures.CancelledError`` when :meth:`close` ends the loop
        first (submitted under the lock :meth:`close` takes, so a call is either on the
        loop before close's clean-up, which cancels it, or on a new loop: never lost).
        """
        with self._lock:
            loop, resource = self._start()
            future = asyncio.run_coroutine_threadsafe(work(resource), loop)
        return future.result()

    def run(self, main: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run ``main()`` on the loop, blocking until it returns; return its result.

        An exception in the caller while it waits (a ``KeyboardInterrupt``) cancels it.
        """
        with self._lock:
            loop, _ = self._start()
            future = asyncio.run_coroutine_threadsafe(main(), loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def resource(self) -> Any:
        """The loop's resource, for a coroutine running on the loop (raises elsewhere)."""
        loop = self._loop
        if loop is None or asyncio.get_running_loop() is not loop:
            raise RuntimeError(f"{self._name}: not running on this loop")
        return self._resource

    def close(self) -> None:
        """Dispose of the resource and stop the loop (a later :meth:`call` starts anew)."""
        with self._lock:
            loop, thread, resource = self._loop, self._thread, self._resource
            self._loop = self._thread = self._resource = None
            if loop is None or thread is None or self._pid != os.getpid():
                return
        try:
            asyncio.run_coroutine_threadsafe(self._dispose(resource), loop).result()
        finally:  # whatever still runs on the loop is cancelled, never left waiting
            asyncio.run_coroutine_threadsafe(_cancel_the_rest(), loop).result()
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()

    def _start(self) -> tuple[asyncio.AbstractEventLoop, Any]:
        """The running loop and its resource, started if need be (hold the lock)."""
        if self._loop is None or self._pid != os.getpid():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name=self._name,
                                      daemon=True)
            thread.start()
            self._resource = asyncio.run_coroutine_threadsafe(_built(self._make),
                                                              loop).result()
            self._loop, self._thread, self._pid = loop, thread, os.getpid()
        return self._loop, self._resource


async def _built(make: Callable[[], Any]) -> Any:
    return make()


async def _cancel_the_rest() -> None:
    """Cancel every other task of the running loop and wait until each has finished."""
    me = asyncio.current_task()
    rest = [t for t in asyncio.all_tasks() if t is not me]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)
