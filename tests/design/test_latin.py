"""Balanced Latin rotation of execution ordinals (seed 000, "The 4,800-cell schedule")."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from rungbench.design.latin import (
    carryover_counts,
    is_exactly_balanced,
    latin_schedule,
    ordinal_counts,
    ordinal_counts_by,
    williams_rows,
)
from rungbench.design.presets import factorial_design
from rungbench.errors import InputError

CONDITIONS = ("no_information", "board_only", "legal_list_only", "board_plus_legal_list")


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_williams_rows_are_latin_and_carryover_balanced(n: int) -> None:
    """Every Williams row is a permutation, columns are Latin, each ordered pair follows equally."""
    rows = williams_rows(n)
    assert len(rows) == (n if n % 2 == 0 else 2 * n)
    assert all(sorted(r) == list(range(n)) for r in rows)
    for column in zip(*rows, strict=True):
        assert Counter(column) == {c: len(rows) // n for c in range(n)}
    follows = Counter(p for r in rows for p in itertools.pairwise(r))
    assert set(follows) == {(a, b) for a in range(n) for b in range(n) if a != b}
    assert len(set(follows.values())) == 1


def test_williams_first_row_for_four() -> None:
    """The n = 4 square starts 0, 1, 3, 2 and shifts by one per row (hand-derived)."""
    assert williams_rows(4) == [(0, 1, 3, 2), (1, 2, 0, 3), (2, 3, 1, 0), (3, 0, 2, 1)]


def test_a105_schedule_exact_counts() -> None:
    """300 × 4 × 2 × 2 = 4,800 cells; each condition at each ordinal exactly 300 times."""
    d = factorial_design()
    cells = d.schedule()
    assert len(cells) == 4800
    assert Counter(c.level("model") for c in cells) == {"luna": 2400, "deepseek-v4-flash": 2400}
    assert ordinal_counts(cells, CONDITIONS) == {c: [300, 300, 300, 300] for c in CONDITIONS}
    by_model = ordinal_counts_by(cells, CONDITIONS, "model")
    assert all(v == {c: [150] * 4 for c in CONDITIONS} for v in by_model.values())
    by_split = ordinal_counts_by(cells, CONDITIONS, "split")
    assert set(by_split) == {"development", "held_out"}
    assert all(v == {c: [150] * 4 for c in CONDITIONS} for v in by_split.values())


def test_a105_blocks_run_each_condition_once() -> None:
    """Each (position, panel order, model) block has four cells, one per condition."""
    cells = factorial_design().schedule()
    blocks: dict[int, list[str]] = {}
    for cell in cells:
        blocks.setdefault(cell.block, []).append(cell.condition)
    assert len(blocks) == 1200
    assert all(sorted(v) == sorted(CONDITIONS) for v in blocks.values())


def test_a105_carryover_balanced() -> None:
    """Each ordered pair of distinct conditions is adjacent 300 times (once per position)."""
    carry = carryover_counts(factorial_design().schedule())
    assert len(carry) == 12
    assert set(carry.values()) == {300}


def test_unbalanced_when_units_do_not_fill_square() -> None:
    """One stratum and three units cannot balance four ordinals; the check says so."""
    cells = latin_schedule([("all", 3)], CONDITIONS, [("model", ["m"])])
    assert not is_exactly_balanced(ordinal_counts(cells, CONDITIONS))


def test_bad_inputs_raise() -> None:
    """Duplicate levels and negative unit counts raise InputError naming the field."""
    with pytest.raises(InputError, match="conditions"):
        latin_schedule([("a", 1)], ["x", "x"], [])
    with pytest.raises(InputError, match=r"splits\.a"):
        latin_schedule([("a", -1)], ["x", "y"], [])


def test_carryover_counts_follow_ordinals_not_list_order() -> None:
    """One block (Williams row 0, order 0 1 3 2) given in reverse still yields its own pairs."""
    cells = latin_schedule([("development", 1)], CONDITIONS, [])
    a, b, c, d = CONDITIONS
    assert carryover_counts(list(reversed(cells))) == {(a, b): 1, (b, d): 1, (d, c): 1}


def test_boolean_unit_count_is_refused() -> None:
    """A split whose unit count is True (a bool, not an int) is an InputError."""
    with pytest.raises(InputError):
        latin_schedule([("development", True)], CONDITIONS, [])  # type: ignore[list-item]
