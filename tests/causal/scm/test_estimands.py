"""Tests for rungbench.causal.scm.estimands: ATE, ETT, NDE, NIE by both exact engines."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from rungbench.causal.scm import elimination, enumeration, estimands, oracle
from rungbench.causal.scm import mechanisms as mech
from rungbench.causal.scm.cpts import Cpt, world_from_cpts
from rungbench.causal.scm.random_dag import DagSpec, random_world
from rungbench.causal.scm.world import Query, Response, Variable, World
from rungbench.errors import InputError


def _brute_nested(net: Sequence[Cpt], x: str, y: str, outer: int, inner: int,
                  factual_x: int | None = None) -> float:
    """E[Y_{outer, M_inner}] (or E[Y_{x0} | X = factual_x]) by summing CPT products.

    Written from Pearl's definitions only: non-descendants of X are shared, every other
    descendant is read once in the inner world, Y in the outer world.
    """
    by = {c.name: c for c in net}
    order = [c.name for c in net]
    desc = {x}
    for n in order:
        if any(p in desc for p in by[n].parents):
            desc.add(n)
    def ancestors(start: set[str]) -> set[str]:
        out = set(start)
        for n in reversed(order):
            if n in out:
                out.update(by[n].parents)
        return out

    shared = [n for n in order if n not in desc and n in ancestors({x, y})]
    moved = [n for n in order if n in desc and n in ancestors({y}) and n not in (x, y)]

    def p(name: str, value: int, parents: Mapping[str, int]) -> float:
        c = by[name]
        row = sum(parents[q] << i for i, q in enumerate(c.parents))
        return c.p_one[row] if value else 1.0 - c.p_one[row]

    total = norm = 0.0
    for bits in itertools.product((0, 1), repeat=len(shared) + len(moved) + 1):
        sv = dict(zip(shared, bits[:len(shared)], strict=True))
        mv = dict(zip(moved, bits[len(shared):-1], strict=True))
        yv = bits[-1]
        w = 1.0
        for n in shared:
            w *= p(n, sv[n], sv)
        if factual_x is not None:
            w *= p(x, factual_x, sv)
        norm += w if all(v == 0 for v in (*mv.values(), yv)) else 0.0
        inner_vals = {**sv, x: inner, **mv}
        for n in moved:
            w *= p(n, mv[n], inner_vals)
        if y in desc:
            w *= p(y, yv, {**sv, **mv, x: outer})
            total += w * yv
        elif yv == 0:
            total += w * sv[y]
    if factual_x is None:
        return total
    px = sum(p(x, factual_x, dict(zip(shared, b, strict=True))) * np.prod(
        [p(n, v, dict(zip(shared, b, strict=True))) for n, v in zip(shared, b, strict=True)])
        for b in itertools.product((0, 1), repeat=len(shared)))
    return float(total / px)


def _network(rng: np.random.Generator) -> list[Cpt]:
    names = [f"V{i}" for i in range(5)]
    out = []
    for i, n in enumerate(names):
        k = int(rng.integers(0, min(i, 3) + 1))
        ps = tuple(names[j] for j in sorted(rng.choice(i, size=k, replace=False))) if k else ()
        out.append(Cpt(n, ps, tuple(float(v) for v in rng.uniform(0.05, 0.95, 2**k))))
    return out


def test_mediators_are_descendants_of_x_that_are_ancestors_of_y() -> None:
    """The derived mediator set of the diamond X->A->Y, X->B->Y, X->C is {A, B}."""
    net = [Cpt("X", (), (0.5,)), Cpt("A", ("X",), (0.2, 0.6)), Cpt("B", ("X",), (0.3, 0.9)),
           Cpt("C", ("X",), (0.1, 0.4)), Cpt("Y", ("A", "B"), (0.1, 0.5, 0.6, 0.9))]
    assert estimands.mediators(world_from_cpts("d", net), "X", "Y") == ("A", "B")


def test_the_effect_of_a_variable_on_itself_is_refused() -> None:
    """ATE of X on X (it answered 1.0) is refused naming the outcome field, for every
    estimand and for the coupling check."""
    world = world_from_cpts("s", [Cpt("X", (), (0.5,)), Cpt("Y", ("X",), (0.2, 0.7))])
    for name in estimands.ESTIMANDS:
        with pytest.raises(InputError, match="must differ"):
            estimands.estimate(world, name, "X", "X")
        with pytest.raises(InputError, match="must differ"):
            estimands.coupled(world, name, "X", "X")


def test_estimands_equal_brute_force_sums_of_cpt_products() -> None:
    """ATE, ETT, NDE, NIE equal an independent sum over CPT products to 1e-12 (40 networks)."""
    rng = np.random.default_rng(3)
    checked = 0
    for k in range(40):
        net = _network(rng)
        world = world_from_cpts(f"n{k}", net)
        for x, y in (("V0", "V4"), ("V1", "V3"), ("V0", "V2")):
            base = _brute_nested(net, x, y, 0, 0)
            top = _brute_nested(net, x, y, 1, 1)
            assert estimands.ate(world, x, y) == pytest.approx(top - base, abs=1e-12)
            assert estimands.nde(world, x, y) == pytest.approx(
                _brute_nested(net, x, y, 1, 0) - base, abs=1e-12)
            assert estimands.nie(world, x, y) == pytest.approx(
                _brute_nested(net, x, y, 0, 1) - base, abs=1e-12)
            treated = oracle.probability(world, Query(1, {y: 1}, {}, {x: 1}))
            assert estimands.ett(world, x, y) == pytest.approx(
                treated - _brute_nested(net, x, y, 0, 0, factual_x=1), abs=1e-12)
            checked += 1
    assert checked == 120


def test_elimination_equals_enumeration_for_natural_effects() -> None:
    """NDE and NIE by variable elimination equal enumeration to 1e-12 on 30 random worlds."""
    rng = np.random.default_rng(5)
    for k in range(30):
        w = random_world(DagSpec(6, 0.45, 0.34 if k % 2 else 0.0), rng, f"r{k}")
        x, y = (str(s) for s in rng.choice(w.observed_names, 2, replace=False))
        for name in estimands.ESTIMANDS:
            a = estimands.estimate(w, name, x, y, method="enumeration")
            b = estimands.estimate(w, name, x, y, method="elimination")
            assert a.method == "enumeration" and b.method == "elimination"
            assert a.value == pytest.approx(b.value, abs=1e-12)
        ms = estimands.mediators(w, x, y)
        legacy = oracle.mediation(w, x, ms, y)
        assert legacy.nde == pytest.approx(estimands.nde(w, x, y), abs=1e-12)
        assert legacy.nie == pytest.approx(estimands.nie(w, x, y), abs=1e-12)


def test_natural_effects_reach_worlds_too_large_to_enumerate() -> None:
    """A world past the enumeration limit gets NDE/NIE by elimination, equal to its core's."""
    rng = np.random.default_rng(9)
    core = random_world(DagSpec(5, 0.6, 0.3), rng, "core")
    x, y = core.observed_names[0], core.observed_names[-1]
    extra = [Variable(f"E{i}", (y,), mech.random_mixture(1, rng, n_tables=3)) for i in range(12)]
    big = World("big", core.variables + tuple(extra))
    assert big.n_configurations() > enumeration.MAX_CONFIGURATIONS
    with pytest.raises(InputError, match="use variable elimination"):
        oracle.mediation(big, x, estimands.mediators(big, x, y), y)
    for name in ("nde", "nie"):
        got = estimands.estimate(big, name, x, y)
        assert got.method == "elimination"
        assert got.value == pytest.approx(
            estimands.estimate(core, name, x, y, method="enumeration").value, abs=1e-12)


def test_nested_worlds_must_borrow_from_an_earlier_world() -> None:
    """A world borrowing from itself or a later world is an input error naming borrow."""
    w = world_from_cpts("w", [Cpt("X", (), (0.5,)), Cpt("M", ("X",), (0.2, 0.7)),
                              Cpt("Y", ("X", "M"), (0.1, 0.4, 0.5, 0.9))])
    bad = elimination.WorldSpec({"X": 1}, {"Y": 1}, borrow={"M": 0})
    with pytest.raises(InputError, match="borrow"):
        elimination.multiworld_probability(w, [bad], [])


def test_unknown_estimand_and_bad_mediators_fail() -> None:
    """An unknown estimand name, or X as its own mediator, is an input error."""
    w = world_from_cpts("w", [Cpt("X", (), (0.5,)), Cpt("Y", ("X",), (0.2, 0.7))])
    with pytest.raises(InputError, match="unknown estimand"):
        estimands.estimate(w, "pns", "X", "Y")
    with pytest.raises(InputError, match="mediate"):
        estimands.nde(w, "X", "Y", mediator_set=["X"])


def test_a_partial_mediator_set_can_make_natural_effects_coupling_dependent() -> None:
    """With X->W->M->Y and M alone named, W is read in two worlds: flagged as coupled."""
    net = [Cpt("X", (), (0.5,)), Cpt("W", ("X",), (0.2, 0.7)), Cpt("M", ("W",), (0.3, 0.8)),
           Cpt("Y", ("X", "W", "M"), tuple(np.linspace(0.05, 0.95, 8)))]
    w = world_from_cpts("w", net)
    assert estimands.coupled(w, "nde", "X", "Y") == ()
    assert estimands.coupled(w, "nde", "X", "Y", mediator_set=["M"]) == ("W",)


def test_risk_difference_estimands_refuse_a_categorical_treatment_or_outcome() -> None:
    """ATE/ETT/NDE/NIE read Y = 1 under X = 1 vs 0: a 3-state X or Y is refused naming the
    role (``x`` / ``y``), by the estimate and by the coupling check."""
    x = Variable("X", (), (Response(0.5, (0,)), Response(0.3, (1,)), Response(0.2, (2,))),
                 True, ("a", "b", "c"))
    y = Variable("Y", ("X",), (Response(0.6, (0, 1, 1)), Response(0.4, (1, 1, 0))))
    w = World("cat", (x, y))
    for name in estimands.ESTIMANDS:
        with pytest.raises(InputError) as info:
            estimands.estimate(w, name, "X", "Y")
        assert info.value.field == "x"
        with pytest.raises(InputError) as info:
            estimands.coupled(w, name, "Y", "X")
        assert info.value.field == "y"
