"""Presentation orders for paired lists, and the audits of who sits where (seed 001,
"Random order is not the same as counterbalanced order").

An order array has shape (positions, width): ``order[p, s]`` is the hidden candidate
(its rank index 0 … width−1 within the list) shown at slot ``s`` of position ``p``.
Two designs are built here:

* independent shuffles: each presentation is an independent seeded permutation. For a
  two-move list the second reproduces the first with probability 1/2, and nothing
  forces a rank to visit every slot equally often;
* the two-period cyclic counterbalance: presentation B rotates presentation A by one
  slot, so every pair differs, every candidate moves, and, with the A orders drawn as
  Latin squares over consecutive groups of ``width`` positions, each rank occupies
  each slot exactly ``2 × positions / width`` times (80 for E023's 200 × width 5).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from rungbench.errors import InputError
from rungbench.stats.paired import as_generator

OrderArray = npt.NDArray[np.int64]
"""Integer array of shape (positions, width); each row a permutation of 0 … width−1."""


@dataclass(frozen=True)
class ExposureAudit:
    """How a paired order design moves candidates and spreads ranks over slots."""

    positions: int
    """Number of paired positions."""
    width: int
    """List width (slots per presentation)."""
    identical_pairs: int
    """Positions whose two presentations are the same order."""
    differing_pairs: int
    """Positions whose two presentations differ."""
    fully_deranged_pairs: int
    """Positions where no candidate keeps its slot between presentations."""
    moved_share: float
    """Share of candidate-slot assignments that change between presentations."""
    rank_slot_counts: list[list[int]]
    """``[rank][slot]``: exposures of each hidden rank at each slot over both presentations."""
    max_imbalance: int
    """Largest minus smallest rank-by-slot exposure count (0 is exact balance)."""

    @property
    def exactly_balanced(self) -> bool:
        """Whether every rank occupies every slot equally often."""
        return self.max_imbalance == 0

    def to_json(self) -> dict[str, Any]:
        """Return the audit as a JSON-ready mapping."""
        return {
            "positions": self.positions, "width": self.width,
            "identical_pairs": self.identical_pairs, "differing_pairs": self.differing_pairs,
            "fully_deranged_pairs": self.fully_deranged_pairs, "moved_share": self.moved_share,
            "rank_slot_counts": self.rank_slot_counts, "max_imbalance": self.max_imbalance,
            "exactly_balanced": self.exactly_balanced,
        }


def independent_shuffles(positions: int, width: int,
                         rng: np.random.Generator | int) -> tuple[OrderArray, OrderArray]:
    """Return two presentations, every row an independent seeded permutation."""
    _check_shape(positions, width)
    gen = as_generator(rng)
    a = np.array([gen.permutation(width) for _ in range(positions)], dtype=np.int64)
    b = np.array([gen.permutation(width) for _ in range(positions)], dtype=np.int64)
    return a.reshape(positions, width), b.reshape(positions, width)


def project(orders: OrderArray, keep: int) -> OrderArray:
    """Restrict each order to ranks below ``keep``, keeping their relative order.

    The seed's top-2 and top-5 orders are projections of one top-10 presentation
    (seed 001, "the registered independent-shuffle projection").
    """
    if not 1 <= keep <= orders.shape[1]:
        raise InputError(f"cannot project width {orders.shape[1]} onto {keep}", field="keep")
    rows = [row[row < keep] for row in orders]
    return np.array(rows, dtype=np.int64).reshape(orders.shape[0], keep)


def latin_first_orders(positions: int, width: int,
                       rng: np.random.Generator | int | None = None) -> OrderArray:
    """First-presentation orders: a Latin square over each group of ``width`` positions.

    Without ``rng`` position p shows ``(s + p) mod width`` at slot s (cyclic shifts by
    position index). With ``rng`` each group draws its base permutation and the
    assignment of its shifts to positions; either way each rank occupies each slot
    once per complete group.
    """
    _check_shape(positions, width)
    gen = None if rng is None else as_generator(rng)
    slots = np.arange(width)
    rows: list[npt.NDArray[np.int64]] = []
    for start in range(0, positions, width):
        base = slots if gen is None else gen.permutation(width)
        shifts = slots if gen is None else gen.permutation(width)
        for p in range(start, min(start + width, positions)):
            rows.append(base[(slots + shifts[p - start]) % width])
    return np.array(rows, dtype=np.int64).reshape(positions, width)


def rotate(orders: OrderArray, by: int = 1) -> OrderArray:
    """Return each order rotated ``by`` slots: slot s shows what slot s + by showed."""
    width = orders.shape[1]
    return orders[:, (np.arange(width) + by) % width]


def cyclic_counterbalance(positions: int, width: int, *, rotation: int = 1,
                          rng: np.random.Generator | int | None = None,
                          ) -> tuple[OrderArray, OrderArray]:
    """Return (A, B): Latin first presentations and B = A rotated by ``rotation`` slots."""
    if width < 2 or rotation % width == 0:
        raise InputError(f"a rotation of {rotation} on width {width} leaves every order fixed",
                         field="rotation")
    a = latin_first_orders(positions, width, rng)
    return a, rotate(a, rotation)


def identical_pairs(a: OrderArray, b: OrderArray) -> int:
    """Number of positions whose two presentations are identical."""
    return int(np.all(_pair(a, b)[0] == b, axis=1).sum())


def fully_deranged_pairs(a: OrderArray, b: OrderArray) -> int:
    """Number of positions where every candidate changes slot."""
    return int(np.all(_pair(a, b)[0] != b, axis=1).sum())


def moved_share(a: OrderArray, b: OrderArray) -> float:
    """Share of (position, candidate) assignments whose slot differs between presentations.

    Candidate c keeps its slot s exactly when both presentations show c at s, so the
    fixed assignments are the slots where the two orders agree.
    """
    a, b = _pair(a, b)
    return float(np.mean(a != b)) if a.size else 0.0


def rank_slot_counts(*presentations: OrderArray) -> npt.NDArray[np.int64]:
    """``[rank, slot]`` exposure counts summed over the given presentations."""
    if not presentations:
        raise InputError("need at least one presentation", field="presentations")
    width = presentations[0].shape[1]
    counts = np.zeros((width, width), dtype=np.int64)
    for orders in presentations:
        _check_orders(orders, width)
        for slot in range(width):
            counts[:, slot] += np.bincount(orders[:, slot], minlength=width)
    return counts


def max_imbalance(counts: npt.NDArray[np.int64]) -> int:
    """Largest minus smallest rank-by-slot exposure count."""
    return int(counts.max() - counts.min()) if counts.size else 0


def exposure_audit(a: OrderArray, b: OrderArray) -> ExposureAudit:
    """Audit a paired order design: identical, deranged and moved pairs, slot exposure."""
    a, b = _pair(a, b)
    counts = rank_slot_counts(a, b)
    same = identical_pairs(a, b)
    return ExposureAudit(
        positions=int(a.shape[0]), width=int(a.shape[1]), identical_pairs=same,
        differing_pairs=int(a.shape[0]) - same, fully_deranged_pairs=fully_deranged_pairs(a, b),
        moved_share=moved_share(a, b), rank_slot_counts=counts.tolist(),
        max_imbalance=max_imbalance(counts))


def _pair(a: OrderArray, b: OrderArray) -> tuple[OrderArray, OrderArray]:
    if a.shape != b.shape or a.ndim != 2:
        raise InputError(f"paired presentations need equal 2-D shapes, got {a.shape} and "
                         f"{b.shape}", field="orders")
    _check_orders(a, a.shape[1])
    _check_orders(b, b.shape[1])
    return a, b


def _check_orders(orders: OrderArray, width: int) -> None:
    if orders.ndim != 2 or orders.shape[1] != width:
        raise InputError(f"orders must have shape (positions, {width}), got {orders.shape}",
                         field="orders")
    expected = np.arange(width)
    for p, row in enumerate(orders):
        if not np.array_equal(np.sort(row), expected):
            raise InputError(f"order {p} is not a permutation of 0..{width - 1}: "
                             f"{row.tolist()!r}", field=f"orders[{p}]")


def _check_shape(positions: int, width: int) -> None:
    if positions < 0:
        raise InputError(f"positions must be >= 0, got {positions!r}", field="positions")
    if width < 1:
        raise InputError(f"width must be >= 1, got {width!r}", field="width")
