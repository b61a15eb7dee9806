"""The oracle refuses a query whose elimination would exceed its memory budget (issue 11 #17)."""

from __future__ import annotations

import numpy as np
import pytest

from rungbench.causal.scm import elimination, oracle
from rungbench.causal.scm.mechanisms import random_mixture
from rungbench.causal.scm.world import Query, Variable, World
from rungbench.errors import Refusal


def dense_world(n: int = 40, k: int = 12) -> World:
    """``n`` nodes, every node past the first ``k`` with the ``k`` previous nodes as parents."""
    rng = np.random.default_rng(0)
    variables = []
    for i in range(n):
        parents = tuple(f"v{j:02d}" for j in range(max(0, i - k), i))
        variables.append(Variable(f"v{i:02d}", parents, random_mixture(len(parents), rng)))
    return World("wdense", tuple(variables))


def _no_big_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("a factor was built before the size check")

    monkeypatch.setattr(elimination, "cpd_factor", refuse)
    monkeypatch.setattr(elimination, "shared_noise_factor", refuse)
    monkeypatch.setattr(elimination, "_product", refuse)


def test_rung3_on_a_dense_world_refuses_before_allocating(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A rung-3 query on a 40-node, 12-parent world refuses world_too_large, no factor built."""
    world = dense_world()
    _no_big_arrays(monkeypatch)
    query = Query(3, {"v39": 1}, {"v20": 1}, {"v20": 0, "v39": 0})
    with pytest.raises(Refusal) as caught:
        oracle.probability(world, query)
    reason = caught.value.reasons[0]
    assert reason.code == "world_too_large"
    assert reason.data["estimated_bytes"] > reason.data["budget_bytes"]
    assert reason.data["largest_factor_variables"] >= 13


def test_the_budget_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    """A small world fits the default budget but refuses under a 64-byte budget."""
    world = dense_world(n=18, k=3)
    query = Query(2, {"v17": 1}, {"v10": 1}, {})
    value = oracle.probability(world, query, method="elimination")
    assert 0.0 <= value <= 1.0
    _no_big_arrays(monkeypatch)
    with pytest.raises(Refusal) as caught:
        oracle.probability(world, query, method="elimination", memory_budget=64)
    assert caught.value.codes == ("world_too_large",)
    assert caught.value.reasons[0].data["budget_bytes"] == 64
