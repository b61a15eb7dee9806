"""Tests for rungbench.causal.scm.cpts: worlds from CPTs and what their coupling can change."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from rungbench.causal.scm import cpts, estimands, oracle
from rungbench.causal.scm.cpts import Cpt, coupling_dependence, world_from_cpts
from rungbench.causal.scm.world import Query, World
from rungbench.errors import InputError, Refusal


def _random_network(rng: np.random.Generator, n: int, max_parents: int = 3) -> list[Cpt]:
    """A random binary Bayesian network over V0..V{n-1} in causal order."""
    out = []
    for i in range(n):
        k = int(rng.integers(0, min(i, max_parents) + 1))
        parents = tuple(f"V{j}" for j in sorted(rng.choice(i, size=k, replace=False))) if k else ()
        q = rng.uniform(0.02, 0.98, size=2**k)
        out.append(Cpt(f"V{i}", parents, tuple(float(v) for v in q)))
    return out


def test_comonotone_encoding_reproduces_every_row_with_few_tables() -> None:
    """V = 1[U < q_row] reproduces P(V=1 | row) to 1e-15 with at most 2^k + 1 tables."""
    rng = np.random.default_rng(7)
    for _ in range(40):
        net = _random_network(rng, 6)
        world = world_from_cpts("w", net)
        assert cpts.max_cpt_error(world, net) <= 1e-15
        for c in net:
            assert len(world.var(c.name).responses) <= 2 ** len(c.parents) + 1


def test_independent_coupling_reproduces_rows_too() -> None:
    """The independent coupling has the same CPTs and up to 2^(2^k) tables."""
    rng = np.random.default_rng(8)
    net = _random_network(rng, 5)
    world = world_from_cpts("w", net, coupling="independent")
    assert cpts.max_cpt_error(world, net) <= 1e-12
    two_parent = [c for c in net if len(c.parents) == 2]
    for c in two_parent:
        assert len(world.var(c.name).responses) == 16


def test_from_cpts_classmethod_matches_the_helper() -> None:
    """World.from_cpts builds the same world as cpts.world_from_cpts and rejects bad names."""
    net = [Cpt("X", (), (0.3,)), Cpt("Y", ("X",), (0.2, 0.7))]
    assert World.from_cpts("w", net) == world_from_cpts("w", net)
    assert World.from_cpts("w", net, coupling="independent") == world_from_cpts(
        "w", net, coupling="independent")
    with pytest.raises(InputError, match="unknown coupling"):
        World.from_cpts("w", net, coupling="antitone")


def test_malformed_cpts_are_refused() -> None:
    """Wrong row counts, non-probabilities and too many parents for 'independent' fail."""
    with pytest.raises(InputError, match="need 2 rows"):
        world_from_cpts("w", [Cpt("X", (), (0.3,)), Cpt("Y", ("X",), (0.2,))])
    with pytest.raises(InputError, match="not a probability"):
        world_from_cpts("w", [Cpt("X", (), (1.2,))])
    wide = [Cpt(f"P{i}", (), (0.5,)) for i in range(4)]
    wide.append(Cpt("Y", tuple(f"P{i}" for i in range(4)), tuple([0.5] * 16)))
    with pytest.raises(InputError, match="independent coupling"):
        world_from_cpts("w", wide, coupling="independent")


def _queries(names: tuple[str, ...], rng: np.random.Generator) -> list[Query]:
    out = []
    for _ in range(12):
        x, y, z = (str(s) for s in rng.choice(names, 3, replace=False))
        a, b, c = (int(v) for v in rng.integers(0, 2, 3))
        out.append(Query(3, {y: a}, {x: b}, {x: 1 - b, y: 1 - a}))
        out.append(Query(3, {y: a}, {x: b}, {z: c}))
        out.append(Query(3, {y: a}, {x: b}, {x: 1 - b}))
    return out


def test_structural_criterion_is_sound_on_random_networks() -> None:
    """Whenever coupling_dependence is empty, both couplings give the same value (1e-12)."""
    rng = np.random.default_rng(11)
    invariant = dependent_differs = 0
    for k in range(25):
        net = _random_network(rng, 5)
        co = world_from_cpts(f"c{k}", net)
        ind = world_from_cpts(f"i{k}", net, coupling="independent")
        for q in _queries(co.names, rng):
            try:
                a, b = oracle.probability(co, q), oracle.probability(ind, q)
            except InputError:
                continue
            if not coupling_dependence(co, q):
                invariant += 1
                assert a == pytest.approx(b, abs=1e-12)
            elif abs(a - b) > 1e-6:
                dependent_differs += 1
    assert invariant > 50
    assert dependent_differs > 20  # the criterion flags queries that really do differ


def test_rungs_1_2_and_named_estimands_do_not_depend_on_the_coupling() -> None:
    """Rung 1, rung 2, ATE, ETT, NDE, NIE agree across couplings; PN does not in general."""
    rng = np.random.default_rng(12)
    pn_gaps = []
    for k in range(20):
        net = _random_network(rng, 5)
        co = world_from_cpts(f"c{k}", net)
        ind = world_from_cpts(f"i{k}", net, coupling="independent")
        for x, y in itertools.permutations(("V0", "V2", "V4"), 2):
            for q in (Query(1, {y: 1}, {}, {x: 1}), Query(2, {y: 1}, {x: 0})):
                assert coupling_dependence(co, q) == ()
                assert oracle.probability(co, q) == pytest.approx(oracle.probability(ind, q),
                                                                  abs=1e-12)
            for name in estimands.ESTIMANDS:
                assert estimands.coupled(co, name, x, y) == ()
                assert estimands.estimate(co, name, x, y).value == pytest.approx(
                    estimands.estimate(ind, name, x, y).value, abs=1e-12)
        if "V0" in co.ancestors(["V4"]):
            pn_gaps.append(abs(oracle.pn(co, "V0", "V4") - oracle.pn(ind, "V0", "V4")))
    assert max(pn_gaps) > 0.05


def test_coupling_dependent_queries_are_refused_without_a_named_coupling() -> None:
    """require_coupling_free refuses with code coupling_dependent; a named coupling passes."""
    net = [Cpt("X", (), (0.4,)), Cpt("Y", ("X",), (0.3, 0.8))]
    world = world_from_cpts("w", net)
    pn = Query(3, {"Y": 0}, {"X": 0}, {"X": 1, "Y": 1})
    coupled = coupling_dependence(world, pn)
    assert coupled == ("Y",)
    with pytest.raises(Refusal) as info:
        cpts.require_coupling_free(world, coupled, "PN", None)
    assert info.value.codes == ("coupling_dependent",)
    cpts.require_coupling_free(world, coupled, "PN", "comonotone")
    # comonotone: Y=1 at X=1 means U < 0.8; Y_{X=0} = 0 means U >= 0.3: PN = 0.5 / 0.8
    assert oracle.probability(world, pn) == pytest.approx(0.5 / 0.8, abs=1e-12)
    ind = world_from_cpts("w", net, coupling="independent")
    assert oracle.probability(ind, pn) == pytest.approx(0.7, abs=1e-12)


def test_deterministic_mechanisms_are_never_coupling_dependent() -> None:
    """A 0/1 CPT has one response table under every coupling, so it is not flagged."""
    net = [Cpt("X", (), (0.4,)), Cpt("M", ("X",), (0.0, 1.0)), Cpt("Y", ("X", "M"),
                                                                     (0.0, 1.0, 1.0, 1.0))]
    world = world_from_cpts("w", net)
    q = Query(3, {"Y": 1}, {"X": 0}, {"M": 1})
    assert coupling_dependence(world, q) == ()
    assert oracle.probability(world, q) == pytest.approx(0.0, abs=1e-15)  # Y_{X=0} = 0 or 0


# --- CPTs of more than two states -------------------------------------------------------

def _categorical_network(rng: np.random.Generator, n: int) -> list[Cpt]:
    """A random network over V0..V{n-1} with 2..4 states each and up to 2 parents; rows are
    Dirichlet draws with an exact zero now and then."""
    cards = [int(rng.integers(2, 5)) for _ in range(n)]
    out = []
    for i in range(n):
        k = int(rng.integers(0, min(i, 2) + 1))
        parents = tuple(f"V{j}" for j in sorted(rng.choice(i, size=k, replace=False))) if k else ()
        rows = int(np.prod([cards[int(p[1:])] for p in parents]))
        table = []
        for _ in range(rows):
            row = rng.dirichlet(np.ones(cards[i]))
            if rng.random() < 0.2:
                row[int(rng.integers(0, cards[i]))] = 0.0
                row = row / row.sum()
            table.append(tuple(float(x) for x in row))
        states = tuple(f"{i}-{s}" for s in range(cards[i]))
        if cards[i] == 2:
            out.append(Cpt(f"V{i}", parents, tuple(r[1] for r in table), True, states))
        else:
            out.append(Cpt(f"V{i}", parents, (), True, states, tuple(table)))
    return out


def test_categorical_comonotone_reproduces_rows_with_few_tables() -> None:
    """One uniform through each row's inverse CDF reproduces every P(V=s | row) to 1e-15 with
    at most sum_rows(k-1) + 1 response tables."""
    rng = np.random.default_rng(17)
    for _ in range(30):
        net = _categorical_network(rng, 6)
        world = world_from_cpts("c", net)
        assert cpts.max_cpt_error(world, net) <= 1e-15
        for c in net:
            v = world.var(c.name)
            assert len(v.responses) <= v.rows * (v.card - 1) + 1
            assert v.states == c.states


def test_two_state_rows_give_the_binary_encoding() -> None:
    """For two states the inverse-CDF rule is V = 1[U < q]: the same tables and weights as
    the binary encoding."""
    rng = np.random.default_rng(18)
    for _ in range(20):
        q = [float(x) for x in rng.uniform(0, 1, 4)]
        assert cpts.comonotone_categorical([(1 - x, x) for x in q]) == \
            cpts.comonotone_responses(q)


def test_comonotone_tables_are_monotone_in_the_shared_uniform() -> None:
    """Reading the tables in order of U, every row's value never increases (largest s with
    U < P(V >= s | row)): the coupling is comonotone."""
    table = ((0.2, 0.3, 0.5), (0.6, 0.3, 0.1), (0.0, 0.0, 1.0))
    responses = cpts.comonotone_categorical(table)
    # tables sorted by their first U interval: rebuild the order from the cut points
    u = 0.0
    order = []
    for r in sorted(responses, key=lambda r: tuple(-t for t in r.table)):
        order.append(r.table)
        u += r.p
    assert u == pytest.approx(1.0, abs=1e-15)
    for row in range(3):
        values = [t[row] for t in order]
        assert values == sorted(values, reverse=True)
    got = np.zeros((3, 3))
    for r in responses:
        for row, v in enumerate(r.table):
            got[row, v] += r.p
    assert np.abs(got - np.array(table)).max() <= 1e-15


def test_categorical_independent_coupling_is_a_product_over_rows() -> None:
    """The independent coupling gives each table the product of its rows' probabilities,
    keeps the CPT, and is refused past INDEPENDENT_MAX_TABLES tables."""
    table = ((0.2, 0.3, 0.5), (0.6, 0.4, 0.0))
    responses = cpts.independent_categorical(table, "V")
    assert len(responses) == 3 * 2
    for r in responses:
        assert r.p == pytest.approx(table[0][r.table[0]] * table[1][r.table[1]], abs=1e-15)
    wide = Cpt("W", ("A", "B"), (), True, ("a", "b", "c"),
               tuple((0.2, 0.3, 0.5) for _ in range(6)))
    parents = [Cpt("A", (), (), True, ("x", "y", "z"), ((0.3, 0.3, 0.4),)),
               Cpt("B", (), (0.5,), True, ("u", "v"))]
    with pytest.raises(InputError, match="independent coupling"):
        world_from_cpts("w", [*parents, wide], coupling="independent")
    world = world_from_cpts("w", [*parents, wide])
    assert cpts.max_cpt_error(world, [*parents, wide]) <= 1e-15


def test_categorical_rungs_1_and_2_do_not_depend_on_the_coupling() -> None:
    """Rung-1 and rung-2 answers are equal under both couplings; a counterfactual reading one
    variable at two parent settings is reported coupling-dependent."""
    rng = np.random.default_rng(19)
    compared = 0
    for k in range(15):
        net = _categorical_network(rng, 5)
        try:
            ind = world_from_cpts(f"i{k}", net, coupling="independent")
        except InputError:
            continue
        com = world_from_cpts(f"c{k}", net)
        names = com.names
        for y in names[2:]:
            x = com.var(y).parents[0] if com.var(y).parents else names[0]
            for q in (Query(1, {y: 1}, {}, {x: 0}), Query(2, {y: 0}, {x: 1}, {})):
                try:
                    want = oracle.probability(com, q)
                except InputError:  # impossible evidence (an exact zero): both refuse
                    with pytest.raises(InputError, match="probability zero"):
                        oracle.probability(ind, q)
                    continue
                assert oracle.probability(ind, q) == pytest.approx(want, abs=1e-12)
                compared += 1
            if x in com.var(y).parents:
                q3 = Query(3, {y: 1}, {x: 1}, {x: 0, y: 0})
                assert y in coupling_dependence(com, q3) or len(com.var(y).responses) == 1
    assert compared >= 20


def test_cpts_of_a_categorical_world_round_trip() -> None:
    """cpts_of returns P(V=s | row) per state, which rebuilds the same world."""
    net = _categorical_network(np.random.default_rng(20), 6)
    world = world_from_cpts("r", net)
    back = cpts.cpts_of(world)
    assert cpts.max_cpt_error(world, back) == 0.0
    assert world_from_cpts("r", back) == world


@pytest.mark.parametrize(("cpt", "field"), [
    (Cpt("V", ("A",), (), True, ("a", "b", "c"), ((0.2, 0.3, 0.5),)), "cpts[V].table"),
    (Cpt("V", ("A",), (), True, ("a", "b", "c"), ((0.2, 0.3, 0.5), (0.2, 0.8))),
     "cpts[V].table[1]"),
    (Cpt("V", ("A",), (), True, ("a", "b", "c"), ((0.2, 0.3, 0.5), (0.2, 0.3, 0.6))),
     "cpts[V].table[1]"),
    (Cpt("V", ("A",), (), True, ("a", "b", "c"), ((0.2, 0.3, 0.5), (0.2, -0.3, 1.1))),
     "cpts[V].table[1][1]"),
    (Cpt("V", ("A",), (0.5, 0.5), True, ("a", "b", "c")), "cpts[V].table"),
])
def test_malformed_categorical_cpts_name_the_row(cpt: Cpt, field: str) -> None:
    """A wrong row count, a short row, a row not summing to 1 within 1e-6, a negative entry
    or a binary-style CPT for three states is an InputError naming the row."""
    parent = Cpt("A", (), (0.5,), True, ("x", "y"))
    with pytest.raises(InputError) as info:
        world_from_cpts("w", [parent, cpt])
    assert info.value.field == field


def test_a_state_of_probability_zero_gets_no_table() -> None:
    """A state whose probability is exactly 0 in a row never appears in that row of any
    table (the rest of a rounding goes to the first possible state)."""
    row = (0.0, 0.029797165820963638, 0.8361618444430883, 0.13404098973594802)
    responses = cpts.comonotone_categorical([row, (0.3, 0.0, 0.7, 0.0)])
    assert all(r.table[0] != 0 for r in responses)
    assert all(r.table[1] not in (1, 3) for r in responses)


def test_the_comonotone_tables_do_not_depend_on_the_chunk_size(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Building the tables a few intervals at a time gives the same tables and weights."""
    rng = np.random.default_rng(21)
    table = [tuple(float(x) for x in rng.dirichlet(np.ones(4))) for _ in range(9)]
    whole = cpts.comonotone_categorical(table)
    monkeypatch.setattr(cpts, "_CHUNK_ENTRIES", 7)
    assert cpts.comonotone_categorical(table) == whole and len(whole) <= 9 * 3 + 1
