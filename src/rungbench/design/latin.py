"""Balanced Latin rotation of condition execution ordinals (seed 000, "The 4,800-cell schedule").

Each block is one unit (an abstract position) under one stratum (e.g. a panel order
and a model); it runs every condition once, in the order of one row of a Williams
balanced Latin square (Williams 1949, Aust. J. Sci. Res. A2:149–168). Row
``(unit + stratum_index) mod rows`` is used, so with as many strata as rows every
unit's blocks together form the whole square: across the abstract schedule each
condition occupies each ordinal exactly equally often, and within a stratum too
when the unit count is a multiple of the row count. For A105, 300 positions × 4
conditions × 2 panel orders × 2 models = 4,800 cells, each condition at each of
the four ordinals exactly 300 times (150 per model).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rungbench.errors import InputError


@dataclass(frozen=True)
class Cell:
    """One scheduled request: a unit under one condition, stratum and execution ordinal."""

    unit: int
    """Abstract unit (position) index, 0-based."""
    split: str
    """Split the unit belongs to (``development``, ``held_out``)."""
    levels: tuple[tuple[str, str], ...]
    """Stratum factor levels, e.g. ``(("panel_order", "board_first"), ("model", "luna"))``."""
    condition: str
    """The condition this cell runs."""
    block: int
    """Index of the (unit, stratum) block the cell belongs to."""
    row: int
    """Latin-square row that orders the block."""
    ordinal: int
    """0-based execution ordinal of the condition within its block."""

    def level(self, factor: str) -> str:
        """Return this cell's level of stratum factor ``factor``."""
        for name, value in self.levels:
            if name == factor:
                return value
        raise InputError(f"cell has no stratum factor {factor!r}", field="factor")


def williams_rows(n: int) -> list[tuple[int, ...]]:
    """Rows of a Williams square on ``n`` conditions: Latin and first-order carryover balanced.

    Even ``n`` gives ``n`` rows whose first row is 0, 1, n−1, 2, n−2, …; odd ``n``
    adds each row reversed (2n rows), as balance needs.
    """
    if n < 1:
        raise InputError(f"a Latin square needs at least one condition, got {n!r}",
                         field="conditions")
    first = [0]
    low, high = 1, n - 1
    while len(first) < n:
        first.append(low)
        low += 1
        if len(first) < n:
            first.append(high)
            high -= 1
    rows = [tuple((c + i) % n for c in first) for i in range(n)]
    if n % 2:
        rows += [tuple(reversed(r)) for r in rows]
    return rows


def latin_schedule(
    splits: Sequence[tuple[str, int]],
    conditions: Sequence[str],
    strata: Sequence[tuple[str, Sequence[str]]],
) -> tuple[Cell, ...]:
    """Return every cell of the schedule, blocks in (unit, stratum) order, cells by ordinal.

    ``splits`` lists (name, unit count) in unit order; ``strata`` lists stratum factors
    and their levels; their product indexes the blocks of one unit.
    """
    _check_distinct(conditions, "conditions")
    for name, levels in strata:
        _check_distinct(levels, f"strata.{name}")
    rows = williams_rows(len(conditions))
    combos = list(itertools.product(*[[(name, lv) for lv in levels] for name, levels in strata]))
    cells: list[Cell] = []
    block = 0
    for unit, split in enumerate(_unit_splits(splits)):
        for k, combo in enumerate(combos):
            row = (unit + k) % len(rows)
            cells.extend(Cell(unit, split, tuple(combo), conditions[c], block, row, ordinal)
                         for ordinal, c in enumerate(rows[row]))
            block += 1
    return tuple(cells)


def ordinal_counts(cells: Iterable[Cell], conditions: Sequence[str]) -> dict[str, list[int]]:
    """Return, per condition, how many cells run it at each ordinal."""
    counts = Counter((c.condition, c.ordinal) for c in cells)
    return {cond: [counts[(cond, k)] for k in range(len(conditions))] for cond in conditions}


def ordinal_counts_by(cells: Sequence[Cell], conditions: Sequence[str],
                      factor: str) -> dict[str, dict[str, list[int]]]:
    """Return :func:`ordinal_counts` separately for each level of a stratum factor or split."""
    groups: dict[str, list[Cell]] = {}
    for cell in cells:
        key = cell.split if factor == "split" else cell.level(factor)
        groups.setdefault(key, []).append(cell)
    return {key: ordinal_counts(group, conditions) for key, group in groups.items()}


def carryover_counts(cells: Sequence[Cell]) -> dict[tuple[str, str], int]:
    """Return how often each condition immediately follows another within a block."""
    by_block: dict[int, list[Cell]] = {}
    for cell in cells:
        by_block.setdefault(cell.block, []).append(cell)
    pairs: Counter[tuple[str, str]] = Counter()
    for block in by_block.values():
        ordered = sorted(block, key=lambda c: c.ordinal)
        pairs.update((a.condition, b.condition) for a, b in itertools.pairwise(ordered))
    return dict(pairs)


def is_exactly_balanced(counts: dict[str, list[int]]) -> bool:
    """Whether every condition occupies every ordinal the same number of times."""
    values = {v for row in counts.values() for v in row}
    return len(values) == 1


def _unit_splits(splits: Sequence[tuple[str, int]]) -> list[str]:
    out: list[str] = []
    for name, count in splits:
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise InputError(f"unit count of split {name!r} must be a non-negative integer, "
                             f"got {count!r}", field=f"splits.{name}")
        out.extend([name] * count)
    return out


def _check_distinct(values: Sequence[str], field: str) -> None:
    if not values:
        raise InputError("needs at least one level", field=field)
    if len(set(values)) != len(values):
        raise InputError(f"levels must be distinct, got {list(values)!r}", field=field)
