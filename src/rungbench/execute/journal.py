"""Group commit for a run's event log: many appends, one write and one fsync per batch.

:class:`GroupLog` writes the same file, in the same byte form, as
:class:`~rungbench.execute.events.EventLog` (one canonical, hash-chained JSON object per
line), but an append does not pay an fsync of its own. :meth:`GroupLog.submit` stamps
the records, links them into the chain and queues their bytes in submission order, under
one lock, so the order of the chain is the order of the file; a single writer thread
takes everything queued, writes it with one ``write`` and makes it durable with one
``fsync``, then wakes every caller waiting for a record of that batch. While one batch
is being fsynced the next one fills, so the cost of an fsync is shared by every record
that arrived during the previous one.

Durability is a prefix: the writer only ever fsyncs the whole file, so once a record is
durable every record submitted before it is durable too. A caller that needs a record on
disk before a side effect (the runner's ``attempt`` before its request leaves) calls
:meth:`GroupLog.wait` with the ticket :meth:`GroupLog.submit` returned; a caller that
does not need to (a ``final``, whose loss a resume repairs from the log) moves on.
:meth:`GroupLog.close` makes everything submitted durable before it returns.

A write or fsync error is sticky: the waiter of that batch and every later ``submit``
and ``wait`` raise it, so no side effect is ever taken on a record that may not be on
disk. What reached the file before the error is what a reader sees (a torn last line is
cut by :meth:`~rungbench.execute.events.EventLog.repair` on resume).
"""

from __future__ import annotations

import contextlib
import heapq
import os
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from rungbench.evidence.canonical import bytes_digest, canonical_bytes
from rungbench.execute.events import CHAIN, utc_now


def link(previous: str, record: dict[str, Any]) -> tuple[bytes, str]:
    """Return ``record``'s chained line after ``previous`` and its ``chain`` value.

    Byte-identical to :func:`~rungbench.execute.events.chained_lines` for one record, with
    one validation and one encoding of the record instead of two of each: the chain value
    is the digest of the record's canonical bytes, and the line is those bytes with the
    ``"chain":"<value>"`` member spliced in where sorted keys put it. Canonical JSON of an
    object is its members in key order, each encoded on its own, so the splice point is
    the end of the members whose keys sort before ``chain`` (encoded alone to find it:
    short, the run's records have one or two of them).
    """
    if CHAIN in record:
        raise ValueError(f"record already carries a {CHAIN!r} field")
    body = canonical_bytes(record)
    head = bytes_digest(previous.encode("ascii") + body)
    member = b'"' + CHAIN.encode("ascii") + b'":"' + head.encode("ascii") + b'"'
    left = {key: value for key, value in record.items() if key < CHAIN}
    if not left:  # the chain member comes first
        rest = body[1:]
        return b"{" + member + (b"," if rest != b"}" else b"") + rest + b"\n", head
    cut = len(canonical_bytes(left)) - 1  # '{' and the members before the chain's
    if len(left) == len(record):  # it comes last
        return body[:cut] + b"," + member + b"}\n", head
    return body[:cut] + b"," + member + b"," + body[cut + 1:] + b"\n", head


class GroupLog:
    """An append-only chained JSONL file with group commit (see the module docstring)."""

    def __init__(self, path: Path, head: str) -> None:
        """Append to ``path``, whose last complete record has chain value ``head``."""
        self.path = path
        self._head = head
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        self._cond = threading.Condition()
        self._waiters: list[tuple[int, int, Callable[[], object]]] = []
        """Heap of ``(ticket, order, wake)``: each waiter is woken alone, once its batch is
        durable (not every waiter on every batch)."""
        self._before: list[Callable[[], None]] = []
        """What the writer must make durable before it writes the queued lines."""
        self._order = 0
        self._pending: list[bytes] = []
        self._submitted = 0
        self._durable = 0
        self._error: BaseException | None = None
        self._closing = False
        self.batches = 0
        """Batches written (one fsync each)."""
        self.records = 0
        """Records made durable."""
        self._thread = threading.Thread(target=self._run, name="rungbench-log-writer",
                                        daemon=True)
        self._thread.start()

    def submit(
        self, records: list[dict[str, Any]], *, before: Callable[[], None] | None = None
    ) -> tuple[list[dict[str, Any]], int]:
        """Stamp ``records`` with the time, queue them, and return them with their ticket.

        The records reach the file in the order of their ``submit`` calls, contiguous;
        they are durable once :meth:`wait` returns for the ticket. ``before`` is called
        by the writer, once, before it writes the batch holding these records (what the
        records name is made durable there, first); its error fails the log, so the
        records are never written.
        """
        now = utc_now()
        stamped = [{**record, "t": now} for record in records]
        with self._cond:
            self._raise_if_failed()
            if self._closing:
                raise RuntimeError(f"{self.path}: the log is closed")
            for record in stamped:
                line, self._head = link(self._head, record)
                self._pending.append(line)
            if before is not None and before not in self._before:
                self._before.append(before)
            self._submitted += len(stamped)
            ticket = self._submitted
            self._cond.notify()  # the writer is the one thread waiting on it
        return stamped, ticket

    def wait(self, ticket: int) -> None:
        """Block until every record up to ``ticket`` is durable; raise the writer's error."""
        event = threading.Event()
        if self.when_durable(ticket, event.set):
            event.wait()
        self.check_durable(ticket)

    def when_durable(self, ticket: int, wake: Callable[[], object]) -> bool:
        """Have the writer call ``wake()`` once every record up to ``ticket`` is durable (or
        the log failed); return False, calling nothing, when they already are.

        ``wake`` runs on the writer thread and must not block (an event loop's
        ``call_soon_threadsafe``, an event's ``set``); the woken side then calls
        :meth:`check_durable`.
        """
        with self._cond:
            if self._durable >= ticket:
                return False
            self._raise_if_failed()
            self._order += 1
            heapq.heappush(self._waiters, (ticket, self._order, wake))
        return True

    def check_durable(self, ticket: int) -> None:
        """Raise the writer's error unless every record up to ``ticket`` is durable."""
        with self._cond:
            if self._durable < ticket:
                self._raise_if_failed()
                raise RuntimeError(f"{self.path}: woken before record {ticket} was durable")

    def append(self, record: dict[str, Any]) -> dict[str, Any]:
        """Submit one record and wait until it is durable; return it stamped."""
        return self.append_many([record])[0]

    def append_many(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Submit ``records`` and wait until they are durable; return them stamped."""
        stamped, ticket = self.submit(records)
        self.wait(ticket)
        return stamped

    def close(self) -> None:
        """Make everything submitted durable, stop the writer and close the file.

        Raises the writer's error, if it had one (after closing the file).
        """
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._thread.join()
        os.close(self._fd)
        with self._cond:
            self._raise_if_failed()

    def __enter__(self) -> GroupLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
            return
        with contextlib.suppress(Exception):  # an error is propagating: never mask it
            self.close()

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise OSError(f"{self.path}: an earlier write failed ({self._error})") from self._error

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closing:
                    self._cond.wait()
                if not self._pending:  # closing, and nothing left to write
                    return
                batch, self._pending = self._pending, []
                before, self._before = self._before, []
                top = self._submitted
            try:
                for make_durable in before:
                    make_durable()
                view = memoryview(b"".join(batch))
                while view:
                    view = view[os.write(self._fd, view):]
                os.fsync(self._fd)
            except BaseException as exc:  # handed to every waiter
                with self._cond:
                    self._error = exc
                    failed, self._waiters = self._waiters, []
                for _, _, wake in failed:
                    wake()
                return
            with self._cond:
                self._durable = top
                self.batches += 1
                self.records += len(batch)
                woken: list[Callable[[], object]] = []
                while self._waiters and self._waiters[0][0] <= top:
                    woken.append(heapq.heappop(self._waiters)[2])
            for wake in woken:
                wake()
