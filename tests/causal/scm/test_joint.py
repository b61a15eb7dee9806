"""Tests for rungbench.causal.scm.joint: the dense observed joint and its lazy large-world form."""

from __future__ import annotations

import numpy as np
import pytest

from rungbench.causal.scm import mechanisms as mech
from rungbench.causal.scm.joint import (
    MAX_OBSERVED,
    ObservedJoint,
    ObservedMarginals,
    observed_distribution,
    observed_joint,
)
from rungbench.causal.scm.world import Response, Variable, World


def _chain(n: int) -> World:
    """R0 → R1 → … → R{n-1}, each a noisy copy (flip 0.1) of its predecessor, R0 ~ B(0.3)."""
    vs = [Variable("R00", (), mech.root(0.3))]
    for i in range(1, n):
        vs.append(Variable(f"R{i:02d}", (f"R{i - 1:02d}",),
                           (Response(0.9, (0, 1)), Response(0.1, (1, 0)))))
    return World("chain", tuple(vs))


def test_dense_table_up_to_max_observed_lazy_above() -> None:
    """Up to MAX_OBSERVED observed variables the joint is a dense table; above, lazy marginals."""
    assert isinstance(observed_distribution(_chain(4)), ObservedJoint)
    assert isinstance(observed_distribution(_chain(MAX_OBSERVED + 1)), ObservedMarginals)


def test_lazy_marginal_matches_hand_value() -> None:
    """In the long chain P(R00=1, R01=1) = 0.3·0.9 and P(R01=1) = 0.3·0.9 + 0.7·0.1 (by hand)."""
    lazy = observed_distribution(_chain(MAX_OBSERVED + 1))
    assert lazy.prob({"R00": 1, "R01": 1}) == pytest.approx(0.27, abs=1e-12)
    assert lazy.prob({"R01": 1}) == pytest.approx(0.34, abs=1e-12)
    np.testing.assert_allclose(lazy.marginal(["R01", "R00"]).sum(), 1.0)


def test_the_observed_joint_of_a_categorical_world_has_one_axis_per_state_count() -> None:
    """Enumeration and elimination give the same joint over 2..4-state variables (1e-12),
    shaped by the state counts, and its marginals equal the oracle's rung-1 answers."""
    from tests.causal.scm.test_elimination import categorical_world

    from rungbench.causal.scm import oracle
    from rungbench.causal.scm.world import Query

    w = categorical_world(np.random.default_rng(5), 6, "cj")
    joint = observed_joint(w)
    assert joint.table.shape == tuple(w.card(n) for n in joint.names)
    assert float(joint.table.sum()) == pytest.approx(1.0, abs=1e-12)
    big = ObservedMarginals(w)
    for n in joint.names:
        assert np.allclose(joint.marginal([n]), big.marginal([n]), atol=1e-12)
        for s in range(w.card(n)):
            assert joint.prob({n: s}) == pytest.approx(
                oracle.probability(w, Query(1, {n: s}, {}, {}), method="elimination"),
                abs=1e-12)
