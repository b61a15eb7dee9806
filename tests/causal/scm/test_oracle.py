"""Tests for causal.scm.oracle: surgery, abduction, confusions, axioms and natural effects."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rungbench.causal.scm import mechanisms as mech
from rungbench.causal.scm import oracle
from rungbench.causal.scm.motifs import (
    confounded,
    latent_confounded,
    mediation,
    motif_catalogue,
    xor_world,
)
from rungbench.causal.scm.random_dag import DagSpec, random_world
from rungbench.causal.scm.world import Query, Response, Variable, World
from rungbench.errors import InputError

Rung2 = Callable[[World, Mapping[str, int], Mapping[str, int]], float]


def _copy_chain() -> World:
    return World("copy", (Variable("X", (), mech.root(0.25)),
                          Variable("Y", ("X",), (Response(1.0, (0, 1)),))))


def surgery_failures(rung2: Rung2) -> list[str]:
    """Facts any correct do() must reproduce; returns the violated ones."""
    bad = []
    chain = _copy_chain()
    if abs(rung2(chain, {"Y": 1}, {"X": 1}) - 1.0) > 1e-12:
        bad.append("do(X=1) must propagate along X -> Y := X")
    if abs(rung2(chain, {"Y": 1}, {"X": 0})) > 1e-12:
        bad.append("do(X=0) must propagate along X -> Y := X")
    w = confounded(np.random.default_rng(7), "c").world
    pz = w.var("Z").p_one()[0]
    py = w.var("Y").p_one()  # rows: X + 2Z
    truth = (1 - pz) * py[1] + pz * py[3]
    if abs(rung2(w, {"Y": 1}, {"X": 1}) - truth) > 1e-12:
        bad.append("do(X=1) must equal sum_z P(z) P(y | X=1, z)")
    return bad


def _ours(world: World, target: Mapping[str, int], do: Mapping[str, int]) -> float:
    return oracle.probability(world, Query(2, dict(target), dict(do), {}))


def _nullifying(world: World, target: Mapping[str, int], do: Mapping[str, int]) -> float:
    """The seed's bug: sever the OUTGOING edges of X (children read X as absent = 0)."""
    variables = []
    for v in world.variables:
        cut = [i for i, p in enumerate(v.parents) if p in do]
        if not cut:
            variables.append(v)
            continue
        rows = range(2 ** len(v.parents))
        responses = tuple(Response(r.p, tuple(r.table[row & ~sum(1 << i for i in cut)]
                                              for row in rows)) for r in v.responses)
        merged = mech._mixture([(r.p, r.table) for r in responses])
        variables.append(Variable(v.name, v.parents, merged, v.observed))
    return oracle.probability(World(world.world_id, tuple(variables)),
                              Query(1, dict(target), {}, {}))


def test_surgery_severs_incoming_edges() -> None:
    """Our do() passes every surgery fact (both engines)."""
    assert surgery_failures(_ours) == []
    assert surgery_failures(lambda w, t, d: oracle.probability(
        w, Query(2, dict(t), dict(d), {}), method="elimination")) == []


def test_surgery_check_catches_outgoing_edge_severing() -> None:
    """An implementation that severs X's outgoing edges (nullification) fails the surgery check."""
    assert len(surgery_failures(_nullifying)) >= 2


def test_xor_counterfactual_is_one_zero() -> None:
    """Y := X xor W, seen X=1, Y=0: Y_{X=0} is [P(Y=1), P(Y=0)] = [1, 0], not [0.5, 0.5]."""
    w = xor_world(np.random.default_rng(0), "x").world
    for method in ("enumeration", "elimination"):
        p1 = oracle.probability(w, Query(3, {"Y": 1}, {"X": 0}, {"X": 1, "Y": 0}), method=method)
        p0 = oracle.probability(w, Query(3, {"Y": 0}, {"X": 0}, {"X": 1, "Y": 0}), method=method)
        assert (p1, p0) == (1.0, 0.0)


def test_rung3_confusions_latent_confounded() -> None:
    """On X <- L -> Y, X -> Y the confusion values are P(y|x'), P(y|do x') and the redraw."""
    w = latent_confounded(np.random.default_rng(1), "l").world
    q = Query(3, {"Y": 0}, {"X": 0}, {"X": 1, "Y": 1})
    a = oracle.answer(w, q)
    assert a.confusions is not None
    assert a.confusions.rung1 == pytest.approx(
        oracle.probability(w, Query(1, {"Y": 0}, {}, {"X": 0})), abs=1e-15)
    assert a.confusions.rung2_population == pytest.approx(
        oracle.probability(w, Query(2, {"Y": 0}, {"X": 0}, {})), abs=1e-15)
    # redraw: L abducted from (X=1, Y=1), Y's own noise fresh.
    p_l = oracle.enumerator(w).rung1({"L": 1}, {"X": 1, "Y": 1})
    y_cpd = w.var("Y").p_one()  # rows: X + 2L
    expected = p_l * (1 - y_cpd[2]) + (1 - p_l) * (1 - y_cpd[0])
    assert a.confusions.resampled == pytest.approx(expected, abs=1e-12)
    assert len({round(a.value, 9), round(a.confusions.rung1 or 0, 9),
                round(a.confusions.rung2_population or 0, 9)}) == 3


def test_rung12_answers_have_no_confusions() -> None:
    """Confusion values exist only for rung-3 queries."""
    w = confounded(np.random.default_rng(2), "c").world
    assert oracle.answer(w, Query(2, {"Y": 1}, {"X": 1}, {})).confusions is None


def test_zero_probability_evidence_is_an_input_error() -> None:
    """Conditioning on an impossible event raises InputError naming evidence."""
    w = _copy_chain()
    with pytest.raises(InputError) as exc:
        oracle.probability(w, Query(1, {"X": 1}, {}, {"X": 0, "Y": 1}))
    assert exc.value.field == "evidence"


def test_mediation_matches_pearl_formula_without_confounding() -> None:
    """Unconfounded mediation: NDE = sum_m [E(Y|x1,m) - E(Y|x0,m)] P(m|x0) (Pearl 2001)."""
    m = mediation(np.random.default_rng(3), "m")
    w = m.world
    eff = oracle.mediation(w, "X", ("M",), "Y")
    pm = w.var("M").p_one()
    py = w.var("Y").p_one()  # rows X + 2M
    nde = sum((py[1 + 2 * mv] - py[0 + 2 * mv]) * (pm[0] if mv else 1 - pm[0]) for mv in (0, 1))
    nie = sum(py[0 + 2 * mv] * ((pm[1] if mv else 1 - pm[1]) - (pm[0] if mv else 1 - pm[0]))
              for mv in (0, 1))
    total = (py[1] * (1 - pm[1]) + py[3] * pm[1]) - (py[0] * (1 - pm[0]) + py[2] * pm[0])
    assert eff.nde == pytest.approx(nde, abs=1e-12)
    assert eff.nie == pytest.approx(nie, abs=1e-12)
    assert eff.total == pytest.approx(total, abs=1e-12)


def test_pn_ps_pns_noisy_or_closed_form() -> None:
    """Noisy-OR with link s and leak l: PN = s(1-l)/(1-(1-s)(1-l)), PS = s, PNS = s(1-l)."""
    s, leak = 0.7, 0.2
    w = World("n", (Variable("X", (), mech.root(0.4)),
                    Variable("Y", ("X",), mech.noisy_or([s], leak))))
    for method in ("enumeration", "elimination"):
        assert oracle.pn(w, "X", "Y", method=method) == pytest.approx(
            s * (1 - leak) / (1 - (1 - s) * (1 - leak)), abs=1e-12)
        assert oracle.ps(w, "X", "Y", method=method) == pytest.approx(s, abs=1e-12)
        assert oracle.pns(w, "X", "Y", method=method) == pytest.approx(s * (1 - leak), abs=1e-12)


# ---------------------------------------------------------------- properties

worlds = st.builds(
    lambda seed, n, lat: random_world(DagSpec(n, 0.5, lat), np.random.default_rng(seed), "h"),
    st.integers(0, 10**6), st.integers(3, 6), st.sampled_from([0.0, 0.34]),
)


def _pick(world: World, seed: int, k: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [str(s) for s in rng.choice(world.observed_names, size=k, replace=False)]


@given(worlds, st.integers(0, 1000), st.integers(1, 3), st.integers(0, 1))
@settings(max_examples=60, deadline=None)
def test_probabilities_in_unit_interval_and_sum_to_one(w: World, seed: int, rung: int,
                                                        v: int) -> None:
    """For every rung, P(Y=0 | ...) + P(Y=1 | ...) = 1 and both lie in [0, 1]."""
    y, x, z = _pick(w, seed, 3)
    do = {x: v} if rung > 1 else {}
    ev = {x: 1 - v, z: v} if rung == 3 else {z: v}
    try:
        ps_ = [oracle.probability(w, Query(rung, {y: t}, do, ev)) for t in (0, 1)]
    except InputError:  # impossible evidence
        return
    assert all(0.0 <= p <= 1.0 for p in ps_)
    assert sum(ps_) == pytest.approx(1.0, abs=1e-12)


@given(worlds, st.integers(0, 1000))
@settings(max_examples=60, deadline=None)
def test_consistency_axiom(w: World, seed: int) -> None:
    """Both engines: a counterfactual under the factual value equals the fact (P = 1)."""
    y, x, z = _pick(w, seed, 3)
    rng = np.random.default_rng(seed)
    xv, yv, zv = (int(b) for b in rng.integers(0, 2, 3))
    ev = {x: xv, y: yv, z: zv}
    for method in ("enumeration", "elimination"):
        try:
            p = oracle.probability(w, Query(3, {y: yv}, {x: xv}, ev), method=method)
            q = oracle.probability(w, Query(3, {z: zv}, {x: xv}, {x: xv, z: zv}), method=method)
        except InputError:
            return
        assert p == pytest.approx(1.0, abs=1e-12)
        assert q == pytest.approx(1.0, abs=1e-12)


@given(worlds, st.integers(0, 1000), st.integers(0, 1))
@settings(max_examples=60, deadline=None)
def test_do_on_a_root_equals_conditioning(w: World, seed: int, v: int) -> None:
    """Both engines: for an observed root R, P(Y | do(R=r), E) = P(Y | R=r, E)."""
    roots = [n for n in w.observed_names if not w.var(n).parents]
    assume(roots)
    rng = np.random.default_rng(seed)
    r = str(rng.choice(roots))
    y, z = [str(s) for s in rng.choice([n for n in w.observed_names if n != r], 2,
                                       replace=False)]
    for method in ("enumeration", "elimination"):
        try:
            cond = oracle.probability(w, Query(1, {y: 1}, {}, {r: v, z: 1 - v}), method=method)
        except InputError:
            return
        assert oracle.probability(w, Query(2, {y: 1}, {r: v}, {z: 1 - v}),
                                  method=method) == pytest.approx(cond, abs=1e-12)


def test_every_motif_answers_all_rungs() -> None:
    """Each motif answers rung 1-3 queries on (treatment, outcome) with values in [0, 1]."""
    for m in motif_catalogue(np.random.default_rng(11)):
        x, y = m.treatment, m.outcome
        for q in (Query(1, {y: 1}, {}, {x: 1}), Query(2, {y: 1}, {x: 1}, {}),
                  Query(3, {y: 1}, {x: 0}, {x: 1})):
            assert 0.0 <= oracle.answer(m.world, q).value <= 1.0


def test_auto_method_enumerates_small_worlds_and_eliminates_large_ones() -> None:
    """method="auto" enumerates up to 2**16 exogenous configurations and eliminates above it."""
    small = _copy_chain()
    assert oracle.answer(small, Query(2, {"Y": 1}, {"X": 1}, {})).method == "enumeration"
    big = World("big", tuple(Variable(f"R{i:02d}", (), mech.root(0.5)) for i in range(17)))
    assert big.n_configurations() == 1 << 17
    ans = oracle.answer(big, Query(1, {"R00": 1}, {}, {"R01": 0}))
    assert ans.method == "elimination"
    assert ans.value == pytest.approx(0.5, abs=1e-12)
