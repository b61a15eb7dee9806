"""Frozen, content-addressed schedules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rungbench.agents.protocol import Message, Request
from rungbench.errors import InputError, IntegrityError
from rungbench.evidence.store import ObjectStore
from rungbench.execute.schedule import Schedule, load_schedule


def _requests(n: int) -> list[Request]:
    return [
        Request(f"c{i}", (Message("user", f"question {i}"),), metadata={"answer": i})
        for i in range(n)
    ]


def test_schedule_round_trips_with_identical_digests(tmp_path: Path) -> None:
    """Saving and loading gives the same schedule digest, request digests and metadata."""
    schedule = Schedule.of("t/1", "demo", _requests(3), {"file": "x"})
    store = ObjectStore(tmp_path)
    name = schedule.save(store)
    loaded = load_schedule(store, name)
    assert name == schedule.digest() == loaded.digest()
    assert [c.request_digest for c in loaded] == [c.request_digest for c in schedule]
    assert loaded.cells[2].request.metadata == {"answer": 2}
    assert (
        store.get_bytes(schedule.cells[0].request_digest) == schedule.cells[0].request.canonical()
    )


def test_metadata_is_not_part_of_the_request_digest() -> None:
    """What a provider never sees cannot change the request's digest."""
    a, b = _requests(1)[0], Request("c0", (Message("user", "question 0"),), metadata={"x": 1})
    assert a.digest() == b.digest()


def test_tampered_request_object_is_detected(tmp_path: Path) -> None:
    """Changing a stored request's bytes makes loading fail on its digest."""
    schedule = Schedule.of("t/1", "demo", _requests(2))
    store = ObjectStore(tmp_path)
    name = schedule.save(store)
    target = store.path_for(schedule.cells[1].request_digest)
    os.chmod(target, 0o644)
    target.write_bytes(target.read_bytes().replace(b"question 1", b"question 9"))
    with pytest.raises(IntegrityError):
        load_schedule(store, name)


def test_duplicate_cell_ids_are_refused() -> None:
    """Two cells with one id would make results ambiguous: an input error."""
    with pytest.raises(InputError, match="duplicate cell id"):
        Schedule.of("t/1", "demo", [*_requests(2), _requests(1)[0]])
