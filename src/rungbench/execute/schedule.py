"""A frozen schedule: a content-addressed list of frozen requests, domain-free.

On disk (``rungbench.schedule/1``) a schedule is one canonical JSON object naming
each cell's request by the digest of its canonical bytes; the request bytes are
separate objects in the same store. Metadata (what reference agents and
validators read, never sent to a provider) sits beside each digest.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rungbench.agents.protocol import Request
from rungbench.errors import InputError, IntegrityError
from rungbench.evidence.canonical import digest
from rungbench.evidence.store import ObjectStore

SCHEDULE_VERSION = "rungbench.schedule/1"


@dataclass(frozen=True)
class Cell:
    """One cell: a frozen request and the digest of its bytes."""

    cell_id: str
    """Unique identifier within the schedule (the request's case id)."""
    request: Request
    """The frozen request."""

    @functools.cached_property
    def request_digest(self) -> str:
        """``sha256:<hex>`` of the request's canonical bytes (computed once per cell; the
        runner recomputes ``request.digest()`` itself before every send)."""
        return self.request.digest()


@dataclass(frozen=True)
class Schedule:
    """An ordered, frozen list of cells for one task."""

    task: str
    """Task identifier (e.g. ``chess.move_choice/1``); selects the answer validator."""
    name: str
    """Human label (e.g. the source file it was built from)."""
    cells: tuple[Cell, ...]
    """The cells, in execution order."""
    source: dict[str, Any] | None = None
    """Where the cells came from (path, digest, selection), for the manifest."""

    def __post_init__(self) -> None:
        if not self.cells:
            raise InputError(f"schedule {self.name!r} has no cells", field="cells")
        seen: set[str] = set()
        for cell in self.cells:
            if cell.cell_id in seen:
                raise InputError(f"duplicate cell id {cell.cell_id!r}", field="cells")
            if cell.cell_id != cell.request.case_id:
                raise InputError(
                    f"cell id {cell.cell_id!r} differs from case id {cell.request.case_id!r}",
                    field="cells",
                )
            seen.add(cell.cell_id)

    @classmethod
    def of(
        cls, task: str, name: str, requests: list[Request], source: dict[str, Any] | None = None
    ) -> Schedule:
        """Return a schedule with one cell per request, in order."""
        return cls(task, name, tuple(Cell(r.case_id, r) for r in requests), source)

    def __iter__(self) -> Iterator[Cell]:
        return iter(self.cells)

    def __len__(self) -> int:
        return len(self.cells)

    def to_json(self) -> dict[str, Any]:
        """Return the schedule record (requests by digest)."""
        return {
            "version": SCHEDULE_VERSION,
            "task": self.task,
            "name": self.name,
            "source": self.source,
            "cells": [
                {
                    "cell_id": c.cell_id,
                    "request": c.request_digest,
                    "metadata": c.request.metadata,
                }
                for c in self.cells
            ],
        }

    def digest(self) -> str:
        """``sha256:<hex>`` of the schedule record."""
        return digest(self.to_json())

    def save(self, store: ObjectStore) -> str:
        """Store every request's bytes and the schedule record; return the schedule digest."""
        for cell in self.cells:
            stored = store.put_bytes(cell.request.canonical())
            if stored != cell.request_digest:
                raise IntegrityError(
                    f"request {cell.cell_id!r} stored as {stored}, not {cell.request_digest}"
                )
        return store.put_json(self.to_json())


def load_schedule(store: ObjectStore, schedule_digest: str) -> Schedule:
    """Load and verify a schedule: its record and every request's bytes hash to their names."""
    record = store.get_json(schedule_digest)
    if not isinstance(record, dict) or record.get("version") != SCHEDULE_VERSION:
        raise InputError(
            f"object {schedule_digest} is not a {SCHEDULE_VERSION} record", field="version"
        )
    cells = []
    for i, entry in enumerate(record["cells"]):
        value = store.get_json(entry["request"])
        request = Request.from_json(value, metadata=entry.get("metadata") or {})
        if request.digest() != entry["request"]:
            raise IntegrityError(
                f"cell {i} ({entry['cell_id']!r}): request rebuilt as {request.digest()}, "
                f"stored as {entry['request']}"
            )
        cells.append(Cell(str(entry["cell_id"]), request))
    schedule = Schedule(
        str(record["task"]), str(record["name"]), tuple(cells), record.get("source")
    )
    if schedule.digest() != schedule_digest:
        raise IntegrityError(
            f"schedule rebuilt as {schedule.digest()}, stored as {schedule_digest}"
        )
    return schedule
