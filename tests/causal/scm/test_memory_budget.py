"""The oracle refuses a query whose elimination would exceed its memory budget (issue 11 #17)."""

from __future__ import annotations

import numpy as np
import pytest

from rungbench.causal.scm import contraction, elimination, oracle
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
    monkeypatch.setattr(contraction.Contraction, "run", refuse)


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


def test_rung3_twin_network_on_a_dense_80_node_world_refuses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The rung-3 twin network of a dense 80-node world (in-degree ~2.7, evidence on every
    leaf) needs a 34-variable table (128 GiB): refused world_too_large with the estimate in
    machine-readable data, before any factor is built, never a MemoryError."""
    from rungbench.causal.scm.random_dag import dense_world

    w = dense_world(80, 2.7, np.random.default_rng(80), "d80")
    names = [v.name for v in w.variables]
    has_child = {p for v in w.variables for p in v.parents}
    y = names[-1]
    x = max(names[:20], key=lambda v: len(w.descendants([v])))
    evidence = {leaf: i % 2 for i, leaf in enumerate(n for n in names
                                                     if n not in has_child and n != y)}
    _no_big_arrays(monkeypatch)
    query = Query(3, {y: 1}, {x: 1}, {x: 0, **evidence})
    for call in (lambda: oracle.probability(w, query), lambda: oracle.answer(w, query)):
        with pytest.raises(Refusal) as caught:
            call()
        reason = caught.value.reasons[0]
        assert caught.value.codes == ("world_too_large",)
        assert reason.data["largest_factor_variables"] == 34
        assert reason.data["estimated_bytes"] == 2**34 * 8
        assert reason.data["budget_bytes"] == elimination.MEMORY_BUDGET_BYTES


def test_the_refusal_names_the_best_orders_table_in_bytes_and_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An 18x18 grid query under a 512 KiB budget is refused before any factor is built, and
    the refusal names the best order's largest table: its estimated bytes (entries x 8, in
    the data and the message), its variables (in the data and the message) and the treewidth
    lower bound; the same query answers under the default budget."""
    from rungbench.causal.scm import ordering
    from rungbench.causal.scm.random_dag import grid_world

    w = grid_world(18, 18, np.random.default_rng(18), "g18")
    evidence = {"R02C07": 1, "R16C01": 0, "R06C15": 1}
    query = Query(1, {"R17C17": 1}, {}, evidence)
    scopes = [tuple(a for a in (v.name, *v.parents) if a not in evidence) for v in w.variables]
    best = ordering.best_order(scopes, ["R17C17"], heuristics=tuple(ordering.HEURISTICS))
    elimination.clear_caches()
    with monkeypatch.context() as patched:
        _no_big_arrays(patched)
        with pytest.raises(Refusal) as caught:
            oracle.probability(w, query, method="elimination", memory_budget=2**19)
    reason = caught.value.reasons[0]
    assert caught.value.codes == ("world_too_large",)
    assert reason.data["estimated_bytes"] == best.largest * elimination.FLOAT_BYTES > 2**19
    assert reason.data["largest_factor_scope"] == list(best.largest_scope)
    assert reason.data["largest_factor_variables"] == len(best.largest_scope) == best.width
    assert reason.data["treewidth_lower_bound"] == ordering.order_lower_bound(
        scopes, ["R17C17"])
    assert f"{best.largest * elimination.FLOAT_BYTES} bytes" in reason.detail
    assert all(name in reason.detail for name in best.largest_scope)
    elimination.clear_caches()
    assert 0.0 < oracle.probability(w, query, method="elimination") < 1.0
