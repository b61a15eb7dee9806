"""The crash-safe event log."""

from __future__ import annotations

from pathlib import Path

import pytest

from rungbench.errors import IntegrityError
from rungbench.execute.events import EventLog, read_events


def test_appends_are_canonical_lines_with_a_time(tmp_path: Path) -> None:
    """Each append is one canonical JSON line stamped with an ISO time."""
    log = EventLog(tmp_path / "e.jsonl")
    log.append({"kind": "a", "b": 1})
    log.append({"kind": "c"})
    events = log.read()
    assert [e["kind"] for e in events] == ["a", "c"]
    assert events[0]["t"].endswith("+00:00")
    assert (tmp_path / "e.jsonl").read_bytes().startswith(b'{"b":1,"chain":"sha256:')


def test_torn_last_line_is_ignored_then_cut(tmp_path: Path) -> None:
    """A line cut by a crash is not read, and repair() removes exactly its bytes."""
    path = tmp_path / "e.jsonl"
    log = EventLog(path)
    log.append({"kind": "a"})
    with open(path, "ab") as fh:
        fh.write(b'{"kind":"fin')
    assert [e["kind"] for e in read_events(path)] == ["a"]
    assert log.repair() == len(b'{"kind":"fin')
    assert path.read_bytes().endswith(b"}\n")
    assert log.repair() == 0


def test_corrupt_complete_line_is_an_integrity_error(tmp_path: Path) -> None:
    """A damaged line that is not the last is refused with its line number."""
    path = tmp_path / "e.jsonl"
    log = EventLog(path)
    for kind in "abc":
        log.append({"kind": kind})
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join([lines[0], b'{"kind":', *lines[2:]]))
    with pytest.raises(IntegrityError, match=":2:"):
        read_events(path)
