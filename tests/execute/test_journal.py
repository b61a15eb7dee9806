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


@pytest.mark.parametrize("record", [
    {"kind": "attempt", "cell": "c1", "attempt": 1, "x": [1.5, None, "é"]},
    {"kind": "x", "t": "now"},  # every key after "chain": its member comes first
    {"a": 1, "b": {"chain": "nested", "z": "\u2603"}},  # every key before: it comes last
    {"arguments": {"chain": "sha256:" + "0" * 64}, "attempt": 2, "detail": '"chain":"x"'},
    {},
])
def test_link_is_byte_identical_to_chained_lines(record: dict[str, object]) -> None:
    """One record linked by the journal has exactly the bytes and head chained_lines gives,
    wherever the chain member falls among the keys (and whatever nested values hold)."""
    assert link("sha256:" + "0" * 64, record) == chained_lines([record], "sha256:" + "0" * 64)


def test_link_refuses_a_record_that_already_carries_a_chain() -> None:
    """A record with its own chain field is an error, not silently relinked."""
    with pytest.raises(ValueError, match="chain"):
        link("sha256:" + "0" * 64, {"kind": "x", "chain": "sha256:" + "1" * 64})


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


def test_before_runs_once_per_batch_ahead_of_the_batchs_lines(tmp_path: Path) -> None:
    """A ``before`` hook given with records is called by the writer before any of those
    records is in the file, once per batch however many submits named it."""
    path, head = _opened(tmp_path)
    log = GroupLog(path, head)
    seen: list[int] = []

    def hook() -> None:
        seen.append(len(read_events(path)))

    gate, entered = threading.Event(), threading.Event()

    def hold() -> None:
        entered.set()
        gate.wait(5)

    log.submit([{"kind": "x", "i": 0}], before=hold)  # holds the writer on record 0's batch
    assert entered.wait(5)
    for i in range(1, 4):
        log.submit([{"kind": "x", "i": i}], before=hook)
    gate.set()
    log.close()
    assert seen == [2]  # the run record and record 0 on disk; records 1-3 not yet
    assert [e["i"] for e in read_events(path)[1:]] == [0, 1, 2, 3]


def test_a_failing_before_hook_fails_the_log_and_writes_nothing(tmp_path: Path) -> None:
    """When ``before`` raises, the records of its batch never reach the file, their waiter
    and every later submit raise, and what was durable before stays as it was."""
    path, head = _opened(tmp_path)
    log = GroupLog(path, head)
    log.append({"kind": "x", "i": 0})

    def broken() -> None:
        raise OSError(28, "No space left on device")

    _, ticket = log.submit([{"kind": "x", "i": 1}], before=broken)
    with pytest.raises(OSError, match="No space left"):
        log.wait(ticket)
    with pytest.raises(OSError, match="earlier write failed"):
        log.submit([{"kind": "x", "i": 2}])
    with pytest.raises(OSError):
        log.close()
    assert [e["i"] for e in read_events(path)[1:]] == [0]


def test_when_durable_wakes_once_the_ticket_is_on_disk(tmp_path: Path) -> None:
    """``when_durable`` returns False for a ticket already durable and otherwise calls its
    wake from the writer after the covering fsync, after which ``check_durable`` passes."""
    path, head = _opened(tmp_path)
    log = GroupLog(path, head)
    _, done = log.submit([{"kind": "x"}])
    log.wait(done)
    assert log.when_durable(done, lambda: None) is False
    woke = threading.Event()
    gate = threading.Event()
    log.submit([{"kind": "y"}], before=gate.wait)
    _, ticket = log.submit([{"kind": "z"}])
    assert log.when_durable(ticket, woke.set) is True
    assert not woke.wait(0.05)
    with pytest.raises(RuntimeError, match="woken before"):
        log.check_durable(ticket)
    gate.set()
    assert woke.wait(5)
    log.check_durable(ticket)
    log.close()
