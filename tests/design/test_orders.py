"""Presentation orders and exposure audits (seed 001, "Random order is not the same as
counterbalanced order")."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from rungbench.design.orders import (
    cyclic_counterbalance,
    exposure_audit,
    fully_deranged_pairs,
    identical_pairs,
    independent_shuffles,
    latin_first_orders,
    moved_share,
    project,
    rank_slot_counts,
    rotate,
)
from rungbench.errors import InputError


@pytest.mark.parametrize("rng", [None, 23, 7])
def test_cyclic_e023_exact_balance(rng: int | None) -> None:
    """200 positions, width 5: all pairs differ and derange, all move, 80 per rank-slot."""
    a, b = cyclic_counterbalance(200, 5, rng=rng)
    audit = exposure_audit(a, b)
    assert audit.identical_pairs == 0 and audit.differing_pairs == 200
    assert audit.fully_deranged_pairs == 200
    assert audit.moved_share == 1.0
    assert audit.rank_slot_counts == [[80] * 5 for _ in range(5)]
    assert audit.max_imbalance == 0 and audit.exactly_balanced


def test_cyclic_shifts_by_position_index() -> None:
    """Without a seed, position p shows (s + p) mod w at slot s; B is A rotated one slot."""
    a, b = cyclic_counterbalance(3, 5)
    assert a.tolist() == [[0, 1, 2, 3, 4], [1, 2, 3, 4, 0], [2, 3, 4, 0, 1]]
    assert b.tolist() == [[1, 2, 3, 4, 0], [2, 3, 4, 0, 1], [3, 4, 0, 1, 2]]


def test_rotation_alone_does_not_balance_unbalanced_first_orders() -> None:
    """Identical A orders rotated by one derange every pair yet leave exposure unbalanced."""
    a = np.tile(np.arange(5), (200, 1))
    audit = exposure_audit(a, rotate(a))
    assert audit.fully_deranged_pairs == 200
    assert audit.max_imbalance == 200


def test_two_move_shuffle_repeats_half_the_time() -> None:
    """Top-2 independent shuffles: identical pairs ~ Binomial(200, 1/2), per-seed bounds at
    two-sided 2e-5 (so 40 seeds stay within them unless the rate is wrong)."""
    low, high = stats.binom.ppf([1e-5, 1 - 1e-5], 200, 0.5)
    counts = [identical_pairs(*independent_shuffles(200, 2, seed)) for seed in range(40)]
    assert all(low <= c <= high for c in counts)
    assert abs(np.mean(counts) - 100) < 4  # 40 seeds: SE of the mean is 1.1


def test_independent_shuffles_leave_imbalance() -> None:
    """Independent shuffles at widths 5 and 10 leave nonzero rank-by-slot imbalance."""
    for width in (5, 10):
        a, b = independent_shuffles(200, width, 20)
        assert exposure_audit(a, b).max_imbalance > 0
        deranged = fully_deranged_pairs(a, b)
        # P(derangement) is 44/120 at width 5 and ≈ 1/e at width 10
        p = 44 / 120 if width == 5 else 1334961 / 3628800
        low, high = stats.binom.ppf([0.0005, 0.9995], 200, p)
        assert low <= deranged <= high


def test_projection_keeps_relative_order() -> None:
    """Projecting a top-10 order onto the top 3 keeps ranks 0..2 in their shown order."""
    orders = np.array([[9, 2, 5, 0, 1, 3, 4, 6, 7, 8]])
    assert project(orders, 3).tolist() == [[2, 0, 1]]


def test_moved_share_counts_fixed_slots() -> None:
    """One fixed candidate of three moves 2/3 of assignments; hand-computed."""
    a = np.array([[0, 1, 2]])
    b = np.array([[0, 2, 1]])
    assert moved_share(a, b) == pytest.approx(2 / 3)
    assert fully_deranged_pairs(a, b) == 0 and identical_pairs(a, b) == 0
    assert rank_slot_counts(a, b).tolist() == [[2, 0, 0], [0, 1, 1], [0, 1, 1]]


@settings(deadline=None, max_examples=40)
@given(groups=st.integers(1, 12), width=st.integers(2, 8), seed=st.integers(0, 2**32 - 1))
def test_latin_first_orders_balanced(groups: int, width: int, seed: int) -> None:
    """Seeded Latin first orders put each rank at each slot once per group of width."""
    counts = rank_slot_counts(latin_first_orders(groups * width, width, seed))
    assert (counts == groups).all()


def test_invalid_orders_raise() -> None:
    """A row that is not a permutation and a null rotation raise InputError."""
    with pytest.raises(InputError, match="not a permutation"):
        exposure_audit(np.array([[0, 0]]), np.array([[0, 1]]))
    with pytest.raises(InputError, match="rotation"):
        cyclic_counterbalance(10, 5, rotation=5)


@pytest.mark.parametrize("keep", [0, 6])
def test_projection_outside_one_to_width_is_refused(keep: int) -> None:
    """Projecting onto 0 ranks or more ranks than the width (5) is an InputError."""
    orders, _ = independent_shuffles(3, 5, rng=1)
    with pytest.raises(InputError):
        project(orders, keep)
