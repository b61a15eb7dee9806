"""Group commit for the run log: same bytes as the plain log, batched fsyncs, sticky errors."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from rungbench.execute.events import EventLog, chained_lines, read_events
from rungbench.execute.journal import GroupLog, link


def _opened(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "events.jsonl"
    EventLog(path).append({"kind": "run", "n": 0})
    return path, str(read_events(path)[-1]["chain"])


def test_link_is_byte_identical_to_chained_lines() -> None:
    """One record linked by the journal has exactly the bytes and head chained_lines gives."""
    record = {"kind": "attempt", "cell": "c1", "attempt": 1, "x": [1.5, None, "é"]}
    assert link("sha256:" + "0" * 64, record) == chained_lines([record], "sha256:" + "0" * 64)


def test_concurrent_submitters_share_fsyncs_and_the_log_verifies(tmp_path: Path) -> None:
    """16 threads appending durably: fewer batches than records, every record once, in a valid
    chain that the plain log appends after."""
    path, head = _opened(tmp_path)
    log = GroupLog(path, head)

    def worker(k: int) -> None:
        for i in range(25):
            log.append({"kind": "tool_event", "cell": f"c{k}", "i": i})

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log.close()
    events = read_events(path)
    assert len(events) == 1 + 16 * 25 and log.records == 16 * 25
    assert log.batches < log.records
    for k in range(16):
        assert [e["i"] for e in events if e.get("cell") == f"c{k}"] == list(range(25))
    EventLog(path).append({"kind": "session"})
    assert len(read_events(path)) == 2 + 16 * 25


def test_wait_returns_only_once_the_record_is_on_disk(tmp_path: Path) -> None:
    """A ticket's wait returns after the fsync that covers it; submit alone does not wait."""
    path, head = _opened(tmp_path)
    synced: list[int] = []
    real = os.fsync
    gate = threading.Event()

    def slow_fsync(fd: int) -> None:
        gate.wait(5)
        real(fd)
        synced.append(fd)

    log = GroupLog(path, head)
    try:
        os.fsync = slow_fsync
        _, ticket = log.submit([{"kind": "attempt", "cell": "c", "attempt": 1}])
        waiter = threading.Thread(target=log.wait, args=(ticket,))
        waiter.start()
        waiter.join(0.2)
        assert waiter.is_alive() and not synced
        gate.set()
        waiter.join(5)
        assert not waiter.is_alive() and synced
    finally:
        os.fsync = real
        gate.set()
        log.close()


def test_a_failed_write_is_raised_to_waiters_and_later_submits(tmp_path: Path) -> None:
    """An fsync error reaches the waiting caller and refuses every later submit."""
    path, head = _opened(tmp_path)
    real = os.fsync

    def broken(fd: int) -> None:
        raise OSError(28, "No space left on device")

    log = GroupLog(path, head)
    os.fsync = broken
    try:
        with pytest.raises(OSError, match="No space left"):
            log.append({"kind": "attempt", "cell": "c", "attempt": 1})
        with pytest.raises(OSError, match="earlier write failed"):
            log.submit([{"kind": "attempt", "cell": "d", "attempt": 1}])
    finally:
        os.fsync = real
    with pytest.raises(OSError):
        log.close()
