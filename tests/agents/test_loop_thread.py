"""The private event loop thread that serves a blocking caller's coroutines."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from rungbench.agents.loop_thread import LoopThread


class _Resource:
    def __init__(self, serial: int) -> None:
        self.serial = serial
        self.thread = threading.get_ident()
        self.closed = False


def _loop_thread() -> tuple[LoopThread, list[_Resource]]:
    made: list[_Resource] = []

    def make() -> _Resource:
        made.append(_Resource(len(made)))
        return made[-1]

    async def dispose(resource: Any) -> None:
        resource.closed = True

    return LoopThread(make, dispose), made


async def _serial(resource: _Resource) -> int:
    await asyncio.sleep(0)
    return resource.serial


async def _fails(resource: _Resource) -> int:
    raise KeyError("inside the loop")


def test_calls_run_on_one_loop_with_one_resource_built_there() -> None:
    """Calls from several threads share the one resource, built on the loop thread."""
    loop, made = _loop_thread()
    results: list[int] = []
    threads = [threading.Thread(target=lambda: results.append(loop.call(_serial)))
               for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [0] * 8 and len(made) == 1
    assert made[0].thread != threading.get_ident()
    loop.close()


def test_an_error_inside_the_loop_is_raised_to_the_caller() -> None:
    """The coroutine's exception reaches the blocking caller as itself."""
    loop, _ = _loop_thread()
    with pytest.raises(KeyError, match="inside the loop"):
        loop.call(_fails)
    loop.close()


def test_close_disposes_and_a_later_call_starts_anew() -> None:
    """Close disposes of the resource and stops the thread; the next call builds a new one;
    closing twice is harmless."""
    loop, made = _loop_thread()
    assert loop.call(_serial) == 0
    loop.close()
    loop.close()
    assert made[0].closed
    assert loop.call(_serial) == 1 and not made[1].closed
    loop.close()
    assert made[1].closed


def test_close_cancels_a_call_still_waiting_instead_of_leaving_it_blocked() -> None:
    """A caller blocked on a coroutine that would never finish gets CancelledError once
    close() ends the loop (it is never left waiting on a stopped loop), and the next call
    runs on a new loop."""
    import concurrent.futures

    thread, made = _loop_thread()
    started = threading.Event()
    outcome: list[BaseException] = []

    async def forever(resource: Any) -> None:
        started.set()
        await asyncio.Event().wait()

    def caller() -> None:
        try:
            thread.call(forever)
        except BaseException as exc:  # examined below
            outcome.append(exc)

    waiting = threading.Thread(target=caller)
    waiting.start()
    assert started.wait(5)
    thread.close()
    waiting.join(5)
    assert not waiting.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], concurrent.futures.CancelledError)

    async def serial(resource: Any) -> int:
        return int(resource.serial)

    assert thread.call(serial) == 1 and made[0].closed
    thread.close()
