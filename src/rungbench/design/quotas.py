"""Registered quota sampling, domain-free (seed 002, "The reserve can still fail").

Units (positions) carry a group (source game) and a stratum (e.g. class × colour).
A group's partition is a seeded hash of its id into integer weights, so a group never
spans two partitions; inside every partition × stratum cell the units are ordered by
a seeded hash of their id and the first ``quota`` are taken. A cell holding fewer
than its quota is a shortfall: nothing is relaxed, nothing is borrowed from another
cell or partition.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rungbench.errors import InputError


@dataclass(frozen=True)
class Unit:
    """One candidate unit of a quota sample."""

    id: str
    """Unique identity (the selection hash is taken of it)."""
    group: str
    """Partition-isolation key: units of one group share a partition."""
    stratum: str
    """Stratum label inside a partition (e.g. ``tactical/white``)."""


@dataclass(frozen=True)
class QuotaCell:
    """What one partition × stratum cell holds against its quota."""

    partition: str
    """Partition name."""
    stratum: str
    """Stratum label."""
    quota: int
    """Registered quota."""
    available: int
    """Eligible units in the cell."""

    @property
    def name(self) -> str:
        """``partition/stratum``."""
        return f"{self.partition}/{self.stratum}"

    @property
    def short(self) -> int:
        """How many units the cell lacks (0 when it meets its quota)."""
        return max(0, self.quota - self.available)


def seeded_ticket(seed: int, key: str) -> int:
    """Return the 64-bit seeded hash ``sha256("<seed>:<key>")`` used for every draw."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{key}".encode()).digest()[:8], "big")


def partition_of(group: str, weights: Sequence[tuple[str, int]], seed: int) -> str:
    """Return the partition of ``group``: its seeded ticket modulo the weight total."""
    total = sum(w for _, w in weights)
    if total <= 0 or any(w < 0 for _, w in weights):
        raise InputError(f"partition weights must be >= 0 with a positive total, got "
                         f"{list(weights)!r}", field="partitions")
    ticket = seeded_ticket(seed, group) % total
    for name, weight in weights:
        if ticket < weight:
            return name
        ticket -= weight
    raise AssertionError("unreachable: weights exhausted")


def quota_sample(units: Sequence[Unit], weights: Sequence[tuple[str, int]],
                 quotas: Mapping[str, int], strata: Sequence[str], seed: int,
                 ) -> tuple[dict[str, list[Unit]], list[QuotaCell]]:
    """Return the selected units per partition (partition order, then cell order) and cells.

    ``quotas`` maps a partition to the quota of each of its ``strata``. Units whose
    stratum is not registered are never selected.
    """
    if len({u.id for u in units}) != len(units):
        raise InputError("quota units must have unique ids", field="units")
    by_cell: dict[tuple[str, str], list[Unit]] = {}
    for unit in units:
        if unit.stratum in strata:
            cell = (partition_of(unit.group, weights, seed), unit.stratum)
            by_cell.setdefault(cell, []).append(unit)
    chosen: dict[str, list[Unit]] = {}
    cells: list[QuotaCell] = []
    for partition, _ in weights:
        chosen[partition] = []
        for stratum in strata:
            pool = sorted(by_cell.get((partition, stratum), []),
                          key=lambda u: (seeded_ticket(seed, u.id), u.id))
            quota = int(quotas.get(partition, 0))
            cells.append(QuotaCell(partition, stratum, quota, len(pool)))
            chosen[partition].extend(pool[:quota])
    return chosen, cells
