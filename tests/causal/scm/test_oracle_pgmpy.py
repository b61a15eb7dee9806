"""Cross-check of rung-1 and rung-2 answers against pgmpy (an independent exact library).

pgmpy's model is built from each world's CPDs with U_V marginalized (latents
kept as ordinary nodes with their CPDs); rung 1 uses VariableElimination, rung 2
CausalInference.query(do=...). Agreement is required to 1e-9 on 50 random worlds.
Rung 2 WITH evidence is checked against VariableElimination on pgmpy's mutilated
network (``model.do([X])``), because CausalInference.query(do=, evidence=) drops
evidence outside its adjustment set (pgmpy issues 1701 and 3543, open in 1.1.2).
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

from rungbench.causal.scm import oracle, ordering
from rungbench.causal.scm.random_dag import DagSpec, categorical_world, grid_world, random_world
from rungbench.causal.scm.world import Query, World
from rungbench.errors import InputError

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.inference import CausalInference, VariableElimination
    from pgmpy.models import DiscreteBayesianNetwork

logging.getLogger("pgmpy").setLevel(logging.ERROR)


def to_pgmpy(world: World) -> DiscreteBayesianNetwork:
    """The world's Bayesian network (CPDs with U_V summed out)."""
    model = DiscreteBayesianNetwork()
    model.add_nodes_from(world.names)
    model.add_edges_from(world.edges())
    for v in world.variables:
        rows = range(2 ** len(v.parents))
        p1 = [sum(r.p for r in v.responses if r.table[row] == 1) for row in rows]
        p0 = [sum(r.p for r in v.responses if r.table[row] == 0) for row in rows]
        # pgmpy columns: the LAST evidence variable varies fastest, so list parents reversed
        # to make the first parent the least significant bit, as in our row index.
        model.add_cpds(TabularCPD(v.name, 2, [p0, p1],
                                  evidence=list(reversed(v.parents)) or None,
                                  evidence_card=[2] * len(v.parents) or None))
    model.check_model()
    return model


def test_rung1_and_rung2_agree_with_pgmpy() -> None:
    """Rung-1 (VE) and rung-2 (CausalInference do) answers match pgmpy to 1e-9 on 50 worlds."""
    rng = np.random.default_rng(2026)
    checked = 0
    for k in range(50):
        w = random_world(DagSpec(int(rng.integers(4, 8)), 0.4, 0.25 if k % 2 else 0.0), rng,
                         f"p{k}")
        model = to_pgmpy(w)
        ve = VariableElimination(model)
        ci = CausalInference(model)
        # pgmpy refuses a do() on a descendant of the query variable: pick Y outside anc(X).
        x = str(rng.choice(w.observed_names[:-1]))
        ys = [n for n in w.observed_names if n not in w.ancestors([x])]
        y = str(rng.choice(ys))
        z = str(rng.choice([n for n in w.observed_names if n not in (x, y)]))
        xv, zv = (int(v) for v in rng.integers(0, 2, 2))
        ours1 = oracle.probability(w, Query(1, {y: 1}, {}, {x: xv}))
        ref1 = ve.query([y], evidence={x: xv}, show_progress=False)
        assert ours1 == pytest.approx(float(ref1.values[1]), abs=1e-9)
        ours2 = oracle.probability(w, Query(2, {y: 1}, {x: xv}, {}))
        ref2 = ci.query([y], do={x: xv}, show_progress=False)
        assert ours2 == pytest.approx(float(ref2.values[1]), abs=1e-9)
        if z not in w.descendants([x]):
            ours3 = oracle.probability(w, Query(2, {y: 1}, {x: xv}, {z: zv}))
            ref3 = VariableElimination(model.do([x])).query(
                [y], evidence={x: xv, z: zv}, show_progress=False)
            assert ours3 == pytest.approx(float(ref3.values[1]), abs=1e-9)
        checked += 1
    assert checked == 50


def twin_network(world: World, x: str, x_cf: int) -> DiscreteBayesianNetwork:
    """pgmpy twin network: U_V is a node over V's response index, shared by V and V*."""
    model = DiscreteBayesianNetwork()
    reached = world.descendants([x])
    star = {v.name: f"{v.name}*" if v.name in reached else v.name for v in world.variables}
    for v in world.variables:
        u = f"U_{v.name}"
        model.add_node(u)
        model.add_cpds(TabularCPD(u, len(v.responses), [[r.p] for r in v.responses]))
        copies = [(v.name, list(v.parents))]
        if v.name in reached:
            copies.append((star[v.name], [star[p] for p in v.parents]))
        for node, parents in copies:
            model.add_node(node)
            if node == star[x] and node != x:  # the intervened copy: a constant
                model.add_cpds(TabularCPD(node, 2, [[1 - x_cf], [x_cf]]))
                continue
            model.add_edges_from([(p, node) for p in parents] + [(u, node)])
            ones = [float(r.table[row]) for r in v.responses for row in range(2 ** len(parents))]
            model.add_cpds(TabularCPD(node, 2, [[1 - o for o in ones], ones],
                                      evidence=[u, *reversed(parents)],
                                      evidence_card=[len(v.responses)] + [2] * len(parents)))
    return model


def test_pn_ps_agree_with_pgmpy_twin_network() -> None:
    """PN and PS equal pgmpy VE on an explicit twin network (shared U_V) on 25 worlds to 1e-9."""
    rng = np.random.default_rng(77)
    checked = 0
    while checked < 25:
        w = random_world(DagSpec(5, 0.5, 0.4 if checked % 2 else 0.0), rng, f"t{checked}")
        pairs = [(a, b) for a in w.observed_names for b in w.observed_names
                 if a != b and b in w.descendants([a])]
        if not pairs:
            continue
        x, y = pairs[int(rng.integers(len(pairs)))]
        try:
            pn = oracle.pn(w, x, y)
            ps = oracle.ps(w, x, y)
        except InputError:  # X=1,Y=1 or X=0,Y=0 impossible in this draw
            continue
        ystar = f"{y}*"
        ref_pn = VariableElimination(twin_network(w, x, 0)).query(
            [ystar], evidence={x: 1, y: 1}, show_progress=False).values[0]
        ref_ps = VariableElimination(twin_network(w, x, 1)).query(
            [ystar], evidence={x: 0, y: 0}, show_progress=False).values[1]
        assert pn == pytest.approx(float(ref_pn), abs=1e-9)
        assert ps == pytest.approx(float(ref_ps), abs=1e-9)
        checked += 1


def _grid_query(w: World, rng: np.random.Generator, n: int
                ) -> tuple[str, str, dict[str, int]]:
    """(target: the far corner, treatment: a middle cell, evidence on three other cells)."""
    cells = [c for c in w.observed_names if c not in (f"R{n - 1:02d}C{n - 1:02d}",)]
    x = f"R{n // 2:02d}C{n // 2:02d}"
    picked = [str(c) for c in rng.choice([c for c in cells if c != x], 3, replace=False)]
    return f"R{n - 1:02d}C{n - 1:02d}", x, {c: int(rng.integers(0, 2)) for c in picked}


def _order_for_pgmpy(w: World, drop: dict[str, int], y: str, cut: str | None) -> list[str]:
    """A narrow elimination order for pgmpy (its own heuristics build 28-variable tables on
    this grid): the level sweep of the (mutilated) moral graph, evidence removed. The order
    changes pgmpy's path, never its exact answer."""
    scopes = [tuple(a for a in (v.name, *(() if v.name == cut else v.parents))
                    if a not in drop) for v in w.variables if v.name not in drop]
    return list(ordering.level_sweep(scopes, [y]).names)


def test_an_18x18_grid_world_agrees_with_pgmpy() -> None:
    """On an 18x18 grid world (324 cells; min-degree and min-fill orders build tables over
    more than 26 variables, past the 512 MiB budget), rung 1 with evidence on three cells and
    rung 2 (do() on the middle cell) with that evidence are answered and equal pgmpy's
    variable elimination (rung 2 on its mutilated network) to 1e-9."""
    n = 18
    w = grid_world(n, n, np.random.default_rng(18), "g18")
    y, x, evidence = _grid_query(w, np.random.default_rng(1), n)
    model = to_pgmpy(w)
    ours1 = oracle.probability(w, Query(1, {y: 1}, {}, evidence), method="elimination")
    ref1 = VariableElimination(model).query(
        [y], evidence=evidence, elimination_order=_order_for_pgmpy(w, evidence, y, None),
        show_progress=False)
    assert ours1 == pytest.approx(float(ref1.values[1]), abs=1e-9)
    ours2 = oracle.probability(w, Query(2, {y: 1}, {x: 1}, evidence), method="elimination")
    given = {**evidence, x: 1}
    ref2 = VariableElimination(model.do([x])).query(
        [y], evidence=given, elimination_order=_order_for_pgmpy(w, given, y, x),
        show_progress=False)
    assert ours2 == pytest.approx(float(ref2.values[1]), abs=1e-9)
    assert abs(ours1 - ours2) > 1e-12  # the do() moves the answer: two distinct checks


def categorical_to_pgmpy(world: World) -> DiscreteBayesianNetwork:
    """A categorical world's Bayesian network: each CPD is the variable's (k, rows) table,
    parents listed reversed so that pgmpy's fastest-varying evidence is our first parent."""
    model = DiscreteBayesianNetwork()
    model.add_nodes_from(world.names)
    model.add_edges_from(world.edges())
    for v in world.variables:
        evidence = list(reversed(v.parents))
        model.add_cpds(TabularCPD(v.name, v.card, v.cpd().tolist(),
                                  evidence=evidence or None,
                                  evidence_card=[world.card(p) for p in evidence] or None))
    model.check_model()
    return model


def test_do_queries_on_generated_categorical_worlds_agree_with_pgmpy() -> None:
    """P(Y=y | do(X=x)) on 20 generated categorical worlds (2-4 states, half with latents)
    equals pgmpy's CausalInference for every value x of X and every state y of Y, to 1e-9."""
    rng = np.random.default_rng(2027)
    checked = 0
    for k in range(20):
        w = categorical_world(DagSpec(6, 0.45, 0.34 if k % 2 else 0.0), rng, f"pc{k}")
        ci = CausalInference(categorical_to_pgmpy(w))
        x = str(rng.choice(w.observed_names[:-1]))
        y = str(rng.choice([n for n in w.observed_names if n not in w.ancestors([x])]))
        for xv in range(w.card(x)):
            ref = ci.query([y], do={x: xv}, show_progress=False)
            ours = [oracle.probability(w, Query(2, {y: s}, {x: xv}, {})) for s in range(w.card(y))]
            assert ours == pytest.approx([float(p) for p in ref.values], abs=1e-9)
            checked += 1
    assert checked >= 40
