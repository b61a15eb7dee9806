"""Crash-safe append-only event log (JSON Lines, one canonical object per line).

Every append is written, flushed and fsynced before the call returns, under a
lock, so concurrent workers never interleave and a SIGKILL loses at most the
line being written. A torn last line (no newline) is dropped on reading and cut
off by :meth:`EventLog.repair` before a resumed run appends again; a bad line
anywhere else is an :class:`IntegrityError`.

Record kinds written by the runner: ``session`` (a start or resume),
``attempt`` (written before a request is sent), ``tool_event`` (one per call:
outcome, tokens, latency, cost) and ``final`` (exactly one per cell).
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from pathlib import Path
from typing import Any

from rungbench.errors import InputError, IntegrityError
from rungbench.evidence.canonical import canonical_bytes, loads_canonical


def utc_now() -> str:
    """Return the current UTC time in ISO-8601 with microseconds."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")


class EventLog:
    """An append-only JSONL file; every append is durable when it returns."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def append(self, record: dict[str, Any]) -> dict[str, Any]:
        """Stamp ``record`` with the time, append it durably, and return it."""
        return self.append_many([record])[0]

    def append_many(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Stamp and append ``records`` in one write and one fsync; return them stamped."""
        now = utc_now()
        stamped = [{**record, "t": now} for record in records]
        line = b"".join(canonical_bytes(r) + b"\n" for r in stamped)
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
        return stamped

    def read(self) -> list[dict[str, Any]]:
        """Return every complete record; a torn last line is ignored."""
        return read_events(self.path)

    def repair(self) -> int:
        """Cut a torn last line off the file; return the number of bytes removed."""
        if not self.path.exists():
            return 0
        data = self.path.read_bytes()
        keep = data.rfind(b"\n") + 1
        if keep == len(data):
            return 0
        with self._lock, open(self.path, "r+b") as fh:
            fh.truncate(keep)
            fh.flush()
            os.fsync(fh.fileno())
        return len(data) - keep


def read_events(path: Path) -> list[dict[str, Any]]:
    """Parse the complete lines of an event log; raise on a corrupt complete line."""
    if not path.exists():
        return []
    data = path.read_bytes()
    lines = data.split(b"\n")
    out: list[dict[str, Any]] = []
    for number, line in enumerate(lines[:-1], start=1):
        try:
            record = loads_canonical(line, path=str(path))
        except InputError as exc:
            raise IntegrityError(f"{path}:{number}: corrupt event line: {exc}") from exc
        if not isinstance(record, dict) or "kind" not in record:
            raise IntegrityError(f"{path}:{number}: event is not an object with a 'kind'")
        out.append(record)
    return out
