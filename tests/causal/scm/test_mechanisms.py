"""Tests for rungbench.causal.scm.mechanisms: exact response-table encodings."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rungbench.causal.scm import mechanisms as mech
from rungbench.causal.scm.world import Response, Variable
from rungbench.errors import InputError


def _p_one(responses: tuple[Response, ...], k: int) -> np.ndarray:
    return Variable("V", tuple(f"P{i}" for i in range(k)), responses).p_one()


@given(st.lists(st.floats(0.0, 1.0), min_size=0, max_size=3), st.floats(0.0, 1.0))
@settings(max_examples=60, deadline=None)
def test_noisy_or_reproduces_its_cpd(strengths: list[float], leak: float) -> None:
    """The mixture gives P(V=1|pa) = 1 - (1-leak) prod_{pa_i=1} (1-s_i) on every row."""
    responses = mech.noisy_or(strengths, leak)
    got = _p_one(responses, len(strengths))
    for row in range(2 ** len(strengths)):
        fail = 1.0 - leak
        for i, s in enumerate(strengths):
            if (row >> i) & 1:
                fail *= 1.0 - s
        assert got[row] == pytest.approx(1.0 - fail, abs=1e-12)
    assert sum(r.p for r in responses) == pytest.approx(1.0, abs=1e-12)
    assert len({r.table for r in responses}) == len(responses)


def test_and_interaction_cpd() -> None:
    """AND with failure 0.2 and leak 0.1: P(V=1) = 0.1 off the all-ones row, 0.1 + 0.9*0.8 on it."""
    got = _p_one(mech.and_interaction(2, 0.2, 0.1), 2)
    assert got == pytest.approx([0.1, 0.1, 0.1, 0.1 + 0.9 * 0.8])


def test_random_mixture_is_valid() -> None:
    """Random mixtures have distinct tables of the right width and probabilities summing to 1."""
    rng = np.random.default_rng(4)
    for k in range(4):
        rs = mech.random_mixture(k, rng, n_tables=3)
        assert all(len(r.table) == 2**k for r in rs)
        assert len({r.table for r in rs}) == len(rs)
        assert sum(r.p for r in rs) == pytest.approx(1.0)
        assert all(r.p > 0 for r in rs)


def test_zero_probability_tables_are_dropped() -> None:
    """A root with p_one = 1 keeps one response function (enumeration skips impossible ones)."""
    assert len(mech.root(1.0)) == 1
    assert len(mech.noisy_or([1.0], 0.0)) == 1


def test_out_of_range_strength_is_an_input_error() -> None:
    """A strength outside [0, 1] raises InputError naming it."""
    with pytest.raises(InputError) as exc:
        mech.noisy_or([0.5, 1.5], 0.1)
    assert exc.value.field == "strengths[1]"


def test_random_mixture_caps_tables_at_the_number_of_functions() -> None:
    """n_tables is capped at 2**(2**k) distinct functions: 2 for a root, all 4 for one parent."""
    rng = np.random.default_rng(7)
    assert len(mech.random_mixture(0, rng, n_tables=5)) == 2
    assert len(mech.random_mixture(1, rng, n_tables=4)) == 4
    assert len(mech.random_mixture(1, rng, n_tables=9)) == 4


def test_random_categorical_mixture_rows_sum_to_one_with_a_leak_floor() -> None:
    """A generated 4-state mechanism over parents of 3 and 2 states has 6 rows, each a
    distribution over 4 values in which every state has at least leak / k probability."""
    rng = np.random.default_rng(0)
    responses = mech.random_categorical_mixture([3, 2], 4, rng)
    v = Variable("V", ("A", "B"), responses, states=("a", "b", "c", "d"))
    object.__setattr__(v, "_parent_cards", (3, 2))
    cpd = v.cpd()
    assert cpd.shape == (4, 6)
    assert np.allclose(cpd.sum(axis=0), 1.0, atol=1e-12)
    assert float(cpd.min()) >= mech.CATEGORICAL_LEAK / 4 - 1e-12
    assert all(len(r.table) == 6 and set(r.table) <= {0, 1, 2, 3} for r in responses)


def test_categorical_root_reproduces_its_probabilities() -> None:
    """categorical_root gives V = s with exactly the listed probability, one table per state."""
    responses = mech.categorical_root([0.5, 0.25, 0.25])
    assert [(r.p, r.table) for r in responses] == [(0.5, (0,)), (0.25, (1,)), (0.25, (2,))]


@pytest.mark.parametrize(("call", "field"), [
    (lambda: mech.categorical_root([1.0]), "states"),
    (lambda: mech.categorical_root([0.5, 0.6]), "probabilities"),
    (lambda: mech.random_categorical_mixture([2], 65, np.random.default_rng(0)), "states"),
    (lambda: mech.random_categorical_mixture([1], 3, np.random.default_rng(0)),
     "parent_cards[0]"),
])
def test_bad_categorical_mechanism_is_an_input_error(call: Any, field: str) -> None:
    """One state, probabilities not summing to 1, 65 states or a one-state parent are refused,
    naming the field."""
    with pytest.raises(InputError) as info:
        call()
    assert info.value.field == field


def test_categorical_links_decide_in_order_and_leak_uniformly() -> None:
    """Two links of strengths 0.6 and 0.5 over 3 states: the first decides w.p. 0.6, the
    second w.p. 0.4 * 0.5 = 0.2, and each of the 3 leak states gets 0.2 / 3."""
    responses = mech.categorical_links([((0, 2), 0.6), ((1, 1), 0.5)], 3, 2)
    v = Variable("V", ("A",), responses, states=("a", "b", "c"))
    assert v.cpd()[:, 0].tolist() == pytest.approx([0.6 + 0.2 / 3, 0.2 + 0.2 / 3, 0.2 / 3])
    assert v.cpd()[:, 1].tolist() == pytest.approx([0.2 / 3, 0.2 + 0.2 / 3, 0.6 + 0.2 / 3])


def test_categorical_link_table_out_of_range_is_refused() -> None:
    """A link table with a value outside 0..k-1 is an InputError naming that source."""
    with pytest.raises(InputError) as info:
        mech.categorical_links([((0, 3), 0.5)], 3, 2)
    assert info.value.field == "sources[0].table"
