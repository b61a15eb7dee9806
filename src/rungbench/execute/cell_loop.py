"""The runner's event-loop path: every cell a coroutine on the agent's own loop.

For an agent that answers as a coroutine (:class:`~rungbench.agents.protocol.LoopAgent`,
the OpenAI-compatible provider), the threads of :func:`~rungbench.execute.runner._run_pool`
each block in a call that is itself a coroutine on the agent's loop thread: every call
crosses threads twice and ``2 * concurrency`` threads compete for the interpreter lock
with the one thread doing the HTTP work. Here the cells run on that loop instead, so a
cell's digest check, records, call, classification and stored response take no thread
handoff at all; what waits for the disk stays off the loop:

* an ``attempt`` is awaited durable (:meth:`GroupLog.when_durable` wakes the loop) before
  its request is sent, exactly as on the thread path;
* a response's bytes are queued on the loop and written and made durable by the log
  writer, once per batch, before it writes the records naming it
  (:class:`~rungbench.execute.object_batch.BatchedObjects`, as on the thread path), so no
  durable record names an object a crash lost.

The log's records and bytes are those of the thread path: the same
:class:`~rungbench.execute.runner._Session` methods build and queue them.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from rungbench.agents.outcomes import CallFailure
from rungbench.agents.protocol import LoopAgent
from rungbench.evidence.canonical import canonical_bytes
from rungbench.execute.journal import GroupLog
from rungbench.execute.run_log import response_json
from rungbench.execute.schedule import Cell

if TYPE_CHECKING:
    from rungbench.execute.runner import _Session


async def durable(log: GroupLog, ticket: int) -> None:
    """Wait, without blocking the loop, until every record up to ``ticket`` is durable."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    def settle() -> None:
        if not done.done():
            done.set_result(None)

    if log.when_durable(ticket, lambda: loop.call_soon_threadsafe(settle)):
        await done
    log.check_durable(ticket)


def run_cells(session: _Session, agent: LoopAgent, todo: list[tuple[Cell, int]],
              concurrency: int) -> None:
    """Run ``todo`` as coroutines on ``agent``'s loop (``concurrency`` calls at once).

    ``2 * concurrency`` workers take cells in schedule order from one shared iterator
    (so a freed call slot is refilled by a cell whose attempt is already durable). The
    first error stops the others taking new cells; cells already started are finished,
    then it is raised.
    """
    async def main() -> None:
        calls = asyncio.Semaphore(concurrency)
        feed = iter(todo)
        errors: list[BaseException] = []

        async def work() -> None:
            while not errors and not session.stopping.is_set():
                item = next(feed, None)
                if item is None:
                    return
                try:
                    await _run_cell(session, agent, calls, *item)
                except Exception as exc:  # re-raised below, after the others finish
                    errors.append(exc)
                    return

        await asyncio.gather(*(work() for _ in range(min(2 * concurrency, len(todo)))))
        if errors:
            raise errors[0]

    agent.drive(main)


async def _run_cell(session: _Session, agent: LoopAgent, calls: asyncio.Semaphore, cell: Cell,
                    prior_attempts: int) -> None:
    """:meth:`_Session.run_cell` on the loop."""
    attempt, retry_after = prior_attempts, None
    while True:
        attempt += 1
        if attempt > prior_attempts + 1:
            wait = session.policy.wait_before(attempt - prior_attempts, retry_after)
            await asyncio.to_thread(session.sleep, wait)  # the session's (injectable) sleep
        last = session.policy.is_last(attempt, prior_attempts)
        failure = await _attempt(session, agent, calls, cell, attempt, last=last)
        if failure is None or last or session.give_up(failure):
            session.settle(failure)
            return
        retry_after = failure.retry_after


async def _attempt(session: _Session, agent: LoopAgent, calls: asyncio.Semaphore, cell: Cell,
                   attempt: int, *, last: bool) -> CallFailure | None:
    """:meth:`_Session._attempt` on the loop; return the failure, or None once final."""
    base, ticket = session.begin(cell, attempt)
    await durable(session.journal, ticket)  # durable, then send
    failure: CallFailure | None = None
    async with calls:
        session.count_sent()
        start = time.perf_counter()
        try:
            response = await agent.respond_async(cell.request)
        except CallFailure as exc:
            failure = exc
        latency = time.perf_counter() - start
    if failure is not None:
        session.failed(cell, base, failure, latency, {}, last=last)
        return failure
    stored = session.objects.put(canonical_bytes(response_json(response)))
    session.answered(cell, base, response, latency, {}, stored)
    return None
