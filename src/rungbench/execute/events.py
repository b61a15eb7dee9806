"""Crash-safe, hash-chained, append-only event log (JSON Lines, one canonical object per line).

Every :class:`EventLog` append is written, flushed and fsynced before the call
returns, under a lock, so concurrent workers never interleave and a SIGKILL loses
at most the line being written. (The runner writes the same records through
:class:`rungbench.execute.journal.GroupLog`, which fsyncs them in batches;
CONTRACTS §25 says which records are durable before which side effect.) A torn last
line (no newline) is dropped on reading and cut off by :meth:`EventLog.repair` before
a resumed run appends again; a bad line anywhere else is an :class:`IntegrityError`.

Every record carries ``chain``: the sha256 of the previous record's ``chain``
(the empty string for the first record) followed by the record's own canonical
bytes without ``chain``. :func:`read_events` — the one reader of a log —
recomputes the chain and checks the structure every consumer relies on (at most
one ``final`` per cell, no ``attempt`` or ``tool_event`` after a cell's final),
so an edited, duplicated, dropped or reordered line is refused naming the file
and line. The chain has no key: whoever can rewrite the whole file can recompute
it, and a cut exactly at a line end looks like a crash. The runner therefore also
re-derives every final outcome from the stored response it names
(:func:`rungbench.execute.runner.read_log`).

Record kinds written by the runner: ``run`` (the first record, written when the run
is created; it names the manifest's digest), ``session`` (a start or resume),
``attempt`` (written before a request is sent), ``tool_call`` (in a tool-use episode,
one per executed tool call inside the open attempt: tool, argument and result digests,
tokens, latency, cost; see :mod:`rungbench.execute.tools`), ``tool_event`` (one per
attempt: outcome, tokens, latency, cost), ``unresolved`` (a session gave up on a cell after
its reliability attempts) and ``final`` (at most one per cell).
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rungbench.errors import InputError, IntegrityError
from rungbench.evidence.canonical import bytes_digest, canonical_bytes, loads_canonical

CHAIN = "chain"
"""Field holding a record's link in the hash chain."""


def utc_now() -> str:
    """Return the current UTC time in ISO-8601 with microseconds."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")


def chain_link(previous: str, record: dict[str, Any]) -> str:
    """Return the ``chain`` value of ``record`` (its own ``chain`` ignored) after ``previous``."""
    body = {k: v for k, v in record.items() if k != CHAIN}
    return bytes_digest(previous.encode("ascii") + canonical_bytes(body))


def chained_lines(records: Iterable[dict[str, Any]], previous: str = "") -> tuple[bytes, str]:
    """Return ``records`` as chained canonical lines after ``previous``, and the new head."""
    out: list[bytes] = []
    head = previous
    for record in records:
        head = chain_link(head, record)
        out.append(canonical_bytes({**record, CHAIN: head}) + b"\n")
    return b"".join(out), head


class EventLog:
    """An append-only chained JSONL file; every append is durable when it returns."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._head: str | None = None

    def append(self, record: dict[str, Any]) -> dict[str, Any]:
        """Stamp ``record`` with the time, append it durably, and return it."""
        return self.append_many([record])[0]

    def append_many(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Stamp and append ``records`` in one write and one fsync; return them stamped."""
        now = utc_now()
        stamped = [{**record, "t": now} for record in records]
        with self._lock:
            if self._head is None:
                self._head = _head_of(self.path)
            line, head = chained_lines(stamped, self._head)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            self._head = head
        return stamped

    def read(self) -> list[dict[str, Any]]:
        """Return every complete, verified record; a torn last line is ignored."""
        return read_events(self.path)

    def repair(self) -> int:
        """Cut a torn last line off the file; return the number of bytes removed."""
        removed = torn_bytes(self.path)
        if not removed:
            return 0
        keep = self.path.stat().st_size - removed
        with self._lock, open(self.path, "r+b") as fh:
            fh.truncate(keep)
            fh.flush()
            os.fsync(fh.fileno())
            self._head = None
        return removed


def torn_bytes(path: Path) -> int:
    """Bytes after the last newline of ``path`` (a line a crash cut short); 0 if none."""
    if not path.exists():
        return 0
    data = path.read_bytes()
    return len(data) - (data.rfind(b"\n") + 1)


def _head_of(path: Path) -> str:
    events = read_events(path)
    return str(events[-1][CHAIN]) if events else ""


def read_events(path: Path) -> list[dict[str, Any]]:
    """Parse and verify the complete lines of an event log (the one reader of a log).

    Raises :class:`IntegrityError` naming ``path:line`` for a line that does not
    parse, a broken chain, a second ``final`` for a cell, or an ``attempt`` or
    ``tool_event`` after a cell's final. A torn last line is ignored.
    """
    if not path.exists():
        return []
    lines = path.read_bytes().split(b"\n")
    out: list[dict[str, Any]] = []
    head = ""
    closed: dict[str, int] = {}
    for number, line in enumerate(lines[:-1], start=1):
        record = _parse(path, number, line)
        if record.get(CHAIN) != chain_link(head, record):
            raise IntegrityError(
                f"{path}:{number}: event chain broken (the line was edited, inserted, "
                "removed or moved)"
            )
        head = str(record[CHAIN])
        _check_order(path, number, record, closed)
        out.append(record)
    return out


def _parse(path: Path, number: int, line: bytes) -> dict[str, Any]:
    try:
        record = loads_canonical(line, path=f"{path}:{number}")
    except InputError as exc:
        raise IntegrityError(f"{path}:{number}: corrupt event line: {exc}") from exc
    if not isinstance(record, dict) or not isinstance(record.get("kind"), str):
        raise IntegrityError(f"{path}:{number}: event is not an object with a 'kind'")
    return record


def _check_order(path: Path, number: int, record: dict[str, Any], closed: dict[str, int]) -> None:
    kind, cell = record["kind"], str(record.get("cell"))
    if kind in ("attempt", "tool_call", "tool_event", "unresolved", "final") and cell in closed:
        raise IntegrityError(
            f"{path}:{number}: {kind} for cell {cell!r} after its final outcome "
            f"(line {closed[cell]})"
        )
    if kind == "final":
        closed[cell] = number
