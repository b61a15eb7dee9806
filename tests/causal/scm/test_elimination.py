"""Tests for rungbench.causal.scm.elimination: VE and the twin network agree with enumeration."""

from __future__ import annotations

import numpy as np
import pytest

from rungbench.causal.scm import elimination, oracle, ordering
from rungbench.causal.scm import mechanisms as mech
from rungbench.causal.scm.motifs import motif_catalogue
from rungbench.causal.scm.random_dag import DagSpec, dense_world, random_world
from rungbench.causal.scm.world import Query, Response, Variable, World
from rungbench.errors import InputError, Refusal


def _queries(w: World, rng: np.random.Generator) -> list[Query]:
    y, x, z = (str(s) for s in rng.choice(w.observed_names, 3, replace=False))
    a, b, c = (int(v) for v in rng.integers(0, 2, 3))
    return [
        Query(1, {y: a}, {}, {x: b, z: c}),
        Query(2, {y: a}, {x: b}, {z: c}),
        Query(3, {y: a, z: c}, {x: 1 - b}, {x: b, y: 1 - a}),
        Query(3, {y: a}, {x: b}, {x: 1 - b, z: c}),
    ]


def test_ve_matches_enumeration_on_random_worlds() -> None:
    """All rungs and all confusion values agree to 1e-12 on 30 random 6-node worlds."""
    rng = np.random.default_rng(21)
    compared = 0
    for k in range(30):
        w = random_world(DagSpec(6, 0.45, 0.34 if k % 2 else 0.0), rng, f"r{k}")
        for q in _queries(w, rng):
            try:
                a = oracle.answer(w, q, method="enumeration")
            except InputError:  # impossible evidence: both engines must refuse
                with pytest.raises(InputError, match="probability zero"):
                    oracle.answer(w, q, method="elimination")
                continue
            b = oracle.answer(w, q, method="elimination")
            assert b.value == pytest.approx(a.value, abs=1e-12)
            if a.confusions is not None:
                assert b.confusions is not None
                for key, val in a.confusions.to_json().items():
                    other = b.confusions.to_json()[key]
                    assert (val is None) == (other is None)
                    if val is not None and other is not None:
                        assert other == pytest.approx(val, abs=1e-12)
            compared += 1
    assert compared >= 100


def test_pns_twin_network_matches_enumeration() -> None:
    """PN, PS and PNS by the multi-world network equal enumeration on every motif."""
    for m in motif_catalogue(np.random.default_rng(5)):
        x, y = m.treatment, m.outcome
        for f in (oracle.pn, oracle.ps, oracle.pns):
            try:
                a = f(m.world, x, y, method="enumeration")
            except InputError:
                continue
            assert f(m.world, x, y, method="elimination") == pytest.approx(a, abs=1e-12)


def test_shared_noise_factor_is_not_a_product_of_marginals() -> None:
    """Copies of V := X (flipped w.p. 0.2) share U: P(V=1, V*=1 | X=1, X*=1) = 0.8."""
    v = Variable("V", ("X",), mech.noisy_function(lambda b: b[0], 1, 0.2))
    f = elimination.shared_noise_factor(v, [("V", ["X"]), ("V@1", [1])])
    assert f.variables == ("V", "V@1", "X")
    assert f.table[1, 1, 1] == pytest.approx(0.8)
    assert f.table[0, 1, 1] == pytest.approx(0.0)
    assert f.table[1, 0, 0] == pytest.approx(0.2)  # X=0: V flipped to 1 iff V* (X*=1) flipped to 0


def test_large_world_uses_elimination() -> None:
    """A 30-node world is answered by elimination; rung 1 equals a direct VE marginal."""
    w = random_world(DagSpec(30, 0.15, 0.2), np.random.default_rng(9), "big")
    y, x = w.observed_names[-1], w.observed_names[0]
    a = oracle.answer(w, Query(3, {y: 1}, {x: 1}, {x: 0}))
    assert a.method == "elimination"
    assert 0.0 <= a.value <= 1.0
    factors = [elimination.cpd_factor(v, v.name, list(v.parents)) for v in w.variables]
    joint = elimination.eliminate(factors, [x, y])
    direct = joint.table[0, 1] / joint.table[0].sum()
    assert oracle.probability(w, Query(1, {y: 1}, {}, {x: 0})) == pytest.approx(direct, abs=1e-12)


def test_impossible_evidence_is_refused_by_both_engines() -> None:
    """Rounded CPDs must not turn an impossible event into 1e-16: both engines refuse it."""
    # 1 - (0.7 + 0.2 + 0.1) = 1.1e-16 in floating point, but P(Y=0 | A=B=1) is exactly 0.
    y = Variable("Y", ("A", "B"), (Response(0.7, (0, 0, 0, 1)), Response(0.2, (0, 1, 0, 1)),
                                   Response(0.1, (1, 1, 1, 1))))
    w = World("z", (Variable("A", (), mech.root(0.5)), Variable("B", (), mech.root(0.5)), y))
    assert y.cpd()[0][3] == 0.0
    q = Query(1, {"A": 1}, {}, {"A": 1, "B": 1, "Y": 0})
    for method in ("enumeration", "elimination"):
        with pytest.raises(InputError, match="probability zero"):
            oracle.probability(w, q, method=method)


def _min_degree(scopes: list[tuple[str, ...]] | tuple[tuple[str, ...], ...],
                keep: object) -> list[str]:
    """The order elimination used before min-fill: greedy min-degree, ties by name."""
    keep_set = set(keep)  # type: ignore[call-overload]
    neighbours: dict[str, set[str]] = {}
    for scope in scopes:
        for a in scope:
            neighbours.setdefault(a, set()).update(b for b in scope if b != a)
    order: list[str] = []
    todo = {v for v in neighbours if v not in keep_set}
    while todo:
        best = min(todo, key=lambda v: (len(neighbours[v]), v))
        nb = neighbours.pop(best)
        for a in nb:
            neighbours[a].discard(best)
            neighbours[a].update(b for b in nb if b != a)
        todo.discard(best)
        order.append(best)
    return order


def _answers(worlds: list[World], rng: np.random.Generator) -> list[float | None]:
    out: list[float | None] = []
    for w in worlds:
        for q in _queries(w, rng):
            try:
                out.append(oracle.probability(w, q, method="elimination"))
            except InputError:
                out.append(None)
    return out


def test_min_fill_order_gives_the_min_degree_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """On motif, random (6-30 nodes, latents) and dense (30-45 nodes) worlds, every rung-1,
    rung-2 and rung-3 answer under min-fill equals the old min-degree order's to 1e-12."""
    from rungbench.causal.scm.random_dag import dense_world

    rng = np.random.default_rng(5)
    worlds = [m.world for m in motif_catalogue(rng) if len(m.world.observed_names) >= 3]
    worlds += [random_world(DagSpec(n, 0.3, 0.15), rng, f"r{n}") for n in (6, 12, 20, 30)]
    worlds += [dense_world(n, 2.7, rng, f"d{n}") for n in (30, 45)]
    elimination.clear_caches()
    new = _answers(worlds, np.random.default_rng(9))
    elimination.clear_caches()  # plans and answers too: the old order must be recompiled
    monkeypatch.setattr(elimination, "_chosen_order",
                        lambda scopes, keep, cards=None, budget=0: ordering.evaluate(
                            scopes, keep, _min_degree(scopes, keep)))
    old = _answers(worlds, np.random.default_rng(9))
    elimination.clear_caches()
    assert len(new) == len(old) and sum(v is not None for v in new) > 60
    for a, b in zip(new, old, strict=True):
        assert (a is None) == (b is None)
        if a is not None and b is not None:
            assert abs(a - b) <= 1e-12


def test_min_fill_narrows_the_largest_table_on_a_dense_world() -> None:
    """Rung 1 on a dense 80-node world with evidence on every leaf: min-fill's largest table
    has 23 variables where min-degree's had 26 (measured; 8x less memory)."""
    from rungbench.causal.scm.random_dag import dense_world

    w = dense_world(80, 2.7, np.random.default_rng(80), "d80")
    names = [v.name for v in w.variables]
    has_child = {p for v in w.variables for p in v.parents}
    leaves = [n for n in names if n not in has_child and n != names[-1]]
    net_scopes = [(v.name, *v.parents) for v in w.variables]
    evidence = {leaf: i % 2 for i, leaf in enumerate(leaves)}
    scopes = [tuple(a for a in s if a not in evidence) for s in net_scopes]
    keep = [names[-1]]

    def width(order: list[str]) -> int:
        pool = [frozenset(s) for s in scopes]
        largest = 0
        for var in order:
            touching = [s for s in pool if var in s]
            merged = frozenset().union(*touching) - {var}
            pool = [s for s in pool if var not in s] + [merged]
            largest = max(largest, len(merged))
        return largest

    assert width(_min_degree(scopes, keep)) == 26
    assert width(elimination._elimination_order(scopes, keep)) == 23


def test_a_repeated_query_reads_its_kept_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second identical query runs no contraction and returns the same float; after
    ``clear_answers`` the compiled plan runs again (no recompile) and gives it bit for bit."""
    from rungbench.causal.scm import contraction

    w = random_world(DagSpec(20, 0.2, 0.1), np.random.default_rng(12), "memo")
    names = w.observed_names
    q = Query(2, {names[-1]: 1}, {names[0]: 1}, {names[5]: 0})
    elimination.clear_caches()
    first = oracle.probability(w, q, method="elimination")
    real_run = contraction.Contraction.run

    def refuse(*_: object) -> object:
        raise AssertionError("the contraction ran again")

    monkeypatch.setattr(contraction.Contraction, "run", refuse)
    assert oracle.probability(w, q, method="elimination") == first
    monkeypatch.setattr(contraction.Contraction, "run", real_run)
    monkeypatch.setattr(elimination, "_compile", refuse)
    elimination.clear_answers()
    assert oracle.probability(w, q, method="elimination") == first


def test_a_lone_copy_with_an_intervened_parent_is_its_sliced_cpd() -> None:
    """The factor of one copy of V whose parent X is set to 1 equals the shared-noise factor
    built response by response, to 1e-15."""
    v = Variable("V", ("X", "Z"), mech.random_mixture(2, np.random.default_rng(2)))
    w = World("one", (Variable("X", (), mech.root(0.5)), Variable("Z", (), mech.root(0.4)), v))
    net = elimination._network(w)
    sliced = net.factor(v, [("V@1", [1, "Z"])])
    built = elimination.shared_noise_factor(v, [("V@1", [1, "Z"])])
    assert sliced.variables == built.variables == ("V@1", "Z")
    assert np.allclose(sliced.table, built.table, rtol=0.0, atol=1e-15)


def _one_world_cases(rng: np.random.Generator) -> list[tuple[World, list[elimination.WorldSpec]]]:
    """Rung-1 and rung-2 specs on random sparse and dense worlds, conflicts included: a target
    or evidence on the intervened variable (agreeing or not), a target repeated in the
    evidence with the same or the other value, several target variables, latent targets and
    interventions."""
    cases = []
    for k in range(40):
        w = (random_world(DagSpec(int(rng.integers(6, 40)), 0.15, 0.1), rng, f"one{k}")
             if k % 2 else dense_world(int(rng.integers(10, 30)), 2.7, rng, f"dense{k}"))
        names = w.observed_names
        every = [v.name for v in w.variables]  # latent ones too: a target or a do() may be
        for _ in range(6):
            picks = [str(s) for s in rng.choice(every, 3, replace=False)]
            picks += [str(s) for s in rng.choice([n for n in names if n not in picks], 2,
                                                 replace=False)]
            bits = [int(b) for b in rng.integers(0, 2, 5)]
            do = {} if rng.random() < 0.4 else {picks[0]: bits[0]}
            target = {picks[1]: bits[1]}
            if rng.random() < 0.3:
                target[picks[2]] = bits[2]
            evidence = {picks[3]: bits[3], picks[4]: bits[4]}
            if rng.random() < 0.2:  # the target again in the evidence, same value or not
                evidence[picks[1]] = int(rng.integers(0, 2))
            if do and rng.random() < 0.2:  # the intervened variable as target or evidence
                (target if rng.random() < 0.5 else evidence)[picks[0]] = int(rng.integers(0, 2))
            cases.append((w, [elimination.WorldSpec(do, target),
                              elimination.WorldSpec(do, evidence)]))
    return cases


def test_the_one_world_plan_is_the_multi_world_plan_bit_for_bit() -> None:
    """On 240 rung-1 and rung-2 queries (sparse and dense worlds of 6-40 nodes, conflicts
    included), the one-world compile gives the multi-world compile's plan: the same flags,
    query nodes, contraction steps, and tables of the same shape, strides and bits."""
    budget = elimination.MEMORY_BUDGET_BYTES
    compared = 0
    for w, specs in _one_world_cases(np.random.default_rng(44)):
        elimination.clear_caches()
        net = elimination._network(w)
        do = elimination._one_world(specs)
        assert do is not None
        fast = elimination._compile_one_world(w, net, do, specs, 1, budget)
        full = elimination._compile_multi_world(w, net, specs, 1, budget)
        assert (fast.zero_evidence, fast.conflict, fast.query, fast.values) == (
            full.zero_evidence, full.conflict, full.query, full.values)
        assert fast.contraction == full.contraction
        assert len(fast.tables) == len(full.tables)
        for a, b in zip(fast.tables, full.tables, strict=True):
            a, b = np.asarray(a), np.asarray(b)
            assert a.shape == b.shape and a.strides == b.strides
            assert a.tobytes() == b.tobytes()
        if not fast.zero_evidence:
            compared += 1
    assert compared > 150


def test_rung_3_and_fresh_noise_take_the_multi_world_compile() -> None:
    """Two interventions, borrowed values or fresh noise are not one world; no spec at all
    is not one either (the multi-world compile answers 1, as before)."""
    spec = elimination.WorldSpec
    assert elimination._one_world([spec({"X": 1}, {"Y": 1}), spec({}, {"X": 0})]) is None
    assert elimination._one_world([spec({"X": 1}, {"Y": 1}, fresh_noise=True),
                                   spec({"X": 1}, {})]) is None
    assert elimination._one_world([spec({}, {}), spec({"X": 1}, {"Y": 1}, borrow={"M": 0})]
                                  ) is None
    assert elimination._one_world([spec({"X": 1}, {"Y": 1}), spec({"X": 1}, {})]) == {"X": 1}
    assert elimination._one_world([]) is None
    w = random_world(DagSpec(6, 0.3, 0.1), np.random.default_rng(3), "empty")
    assert elimination.multiworld_probability(w, [], []) == 1.0  # no event: certain


@pytest.mark.parametrize("rung", [1, 2, 3])
def test_an_unknown_variable_is_refused_naming_it(rung: int) -> None:
    """A spec naming a variable the world does not have is an InputError naming the field,
    on the one-world and the multi-world compile alike (never a silent answer)."""
    w = random_world(DagSpec(6, 0.3, 0.1), np.random.default_rng(3), "unknown")
    x = w.observed_names[0]
    elimination.clear_caches()
    with pytest.raises(InputError, match="unknown variable 'NOPE'") as err:
        if rung == 1:
            elimination.rung1(w, {"NOPE": 1}, {})
        elif rung == 2:
            elimination.rung2(w, {"NOPE": 1}, {x: 1}, {})
        else:
            elimination.rung3(w, {x: 1}, {"NOPE": 0}, {})
    assert err.value.field in ("event.NOPE", "do.NOPE")


# --- categorical worlds ---------------------------------------------------------------

def categorical_world(rng: np.random.Generator, n: int, world_id: str) -> World:
    """A random world of ``n`` variables with 2..4 states each, up to 2 earlier parents and
    2..4 random response tables per variable (a latent root when n > 4)."""
    cards = [int(rng.integers(2, 5)) for _ in range(n)]
    variables = []
    for i in range(n):
        parents = tuple(f"V{j}" for j in sorted(rng.choice(i, min(i, int(rng.integers(0, 3))),
                                                           replace=False)))
        rows = int(np.prod([cards[int(p[1:])] for p in parents]))
        tables: set[tuple[int, ...]] = set()
        while len(tables) < int(rng.integers(2, 5)):
            tables.add(tuple(int(t) for t in rng.integers(0, cards[i], rows)))
        probs = rng.dirichlet(np.ones(len(tables)))
        states = tuple(f"s{s}" for s in range(cards[i]))
        variables.append(Variable(f"V{i}", parents, tuple(
            Response(float(p), t) for p, t in zip(probs, sorted(tables), strict=True)),
            not (n > 4 and i == 0), states))
    return World(world_id, tuple(variables))


def _brute_force(w: World, target: dict[str, int], do: dict[str, int],
                 evidence: dict[str, int]) -> float:
    """P(target | do, evidence) summed over every joint value assignment of the mutilated
    network (independent of the elimination code: products of CPD entries)."""
    import itertools

    names = w.names
    num = den = 0.0
    for values in itertools.product(*(range(w.card(n)) for n in names)):
        at = dict(zip(names, values, strict=True))
        if any(at[k] != v for k, v in do.items()):
            continue
        p = 1.0
        for v in w.variables:
            if v.name in do:
                continue
            row = sum(at[q] * s for q, s in zip(v.parents, v.strides, strict=True))
            p *= float(v.cpd()[at[v.name], row])
        if all(at[k] == x for k, x in evidence.items()):
            den += p
            if all(at[k] == x for k, x in target.items()):
                num += p
    return num / den


def test_categorical_rungs_1_and_2_equal_a_brute_force_sum() -> None:
    """Elimination and enumeration equal a sum over all joint assignments (1e-12) on 20
    random worlds of 2..4-state variables, rung 1 and rung 2."""
    rng = np.random.default_rng(41)
    compared = 0
    for k in range(20):
        w = categorical_world(rng, 5 + k % 2, f"c{k}")
        y, x, z = (str(s) for s in rng.choice(w.observed_names, 3, replace=False))
        a, b, c = (int(rng.integers(0, w.card(n))) for n in (y, x, z))
        for q in (Query(1, {y: a}, {}, {x: b, z: c}), Query(2, {y: a}, {x: b}, {z: c})):
            try:
                want = _brute_force(w, dict(q.target), dict(q.do), dict(q.evidence))
            except ZeroDivisionError:
                continue
            for method in ("elimination", "enumeration"):
                got = oracle.probability(w, q, method=method)  # type: ignore[arg-type]
                assert got == pytest.approx(want, abs=1e-12), (k, q, method)
            compared += 1
    assert compared >= 30


def test_categorical_rung_3_twin_network_equals_enumeration() -> None:
    """On categorical worlds the twin network's counterfactuals (and their confusion values)
    equal abduction-action-prediction by enumeration (1e-12)."""
    rng = np.random.default_rng(43)
    compared = 0
    for k in range(20):
        w = categorical_world(rng, 6, f"t{k}")
        y, x, z = (str(s) for s in rng.choice(w.observed_names, 3, replace=False))
        a, b, c = (int(rng.integers(0, w.card(n))) for n in (y, x, z))
        other = (b + 1) % w.card(x)
        for q in (Query(3, {y: a}, {x: other}, {x: b, z: c}),
                  Query(3, {y: a, z: c}, {x: other}, {x: b, y: a})):
            try:
                en = oracle.answer(w, q, method="enumeration")
            except InputError:
                continue
            ve = oracle.answer(w, q, method="elimination")
            assert ve.value == pytest.approx(en.value, abs=1e-12)
            assert en.confusions is not None and ve.confusions is not None
            for f in ("rung2_population", "resampled"):
                assert getattr(ve.confusions, f) == pytest.approx(getattr(en.confusions, f),
                                                                  abs=1e-12)
            compared += 1
    assert compared >= 20


def test_the_budget_counts_entries_as_products_of_state_counts() -> None:
    """Elimination on 64-state variables counts 64 * 64 entries for a one-parent CPD (not
    2^2): it fits a budget of exactly 32 KiB and is refused one byte below."""
    states = tuple(f"s{i}" for i in range(64))
    root = Variable("A", (), (Response(1.0, (0,)),), True, states)
    child = Variable("B", ("A",), (Response(1.0, tuple(range(64))),), True, states)
    w = World("big", (root, child))
    q = Query(1, {"B": 0}, {}, {})
    assert oracle.probability(w, q, method="elimination", memory_budget=64 * 64 * 8) == 1.0
    with pytest.raises(Refusal) as info:
        oracle.probability(w, q, method="elimination", memory_budget=64 * 64 * 8 - 1)
    assert info.value.reasons[0].code == "world_too_large"
    assert info.value.reasons[0].data["estimated_bytes"] == 64 * 64 * 8


def _grid_scopes(n: int, evidence: set[str]) -> list[tuple[str, ...]]:
    from rungbench.causal.scm.random_dag import grid_world

    w = grid_world(n, n, np.random.default_rng(n), f"g{n}")
    return [tuple(a for a in (v.name, *v.parents) if a not in evidence) for v in w.variables]


def test_greedy_fill_alone_would_refuse_an_18x18_grid() -> None:
    """On an 18x18 grid world with three observed cells (target: the far corner), the
    min-degree and min-fill orders' largest tables exceed the 512 MiB budget (the previous
    choice refused ``world_too_large``); the order chosen fits it 500 times over."""
    from rungbench.causal.scm import ordering

    scopes = _grid_scopes(18, {"R02C07", "R16C01", "R06C15"})
    keep = ["R17C17"]
    budget = elimination.MEMORY_BUDGET_BYTES
    for greedy in (ordering.min_degree, ordering.min_fill):
        assert greedy(scopes, keep).largest * elimination.FLOAT_BYTES > budget
    elimination.clear_caches()
    chosen = elimination._chosen_order(scopes, keep)
    assert chosen.heuristic == "level_sweep"
    assert chosen.largest * elimination.FLOAT_BYTES * 500 < budget


def test_the_budget_estimate_is_the_largest_table_the_contraction_builds() -> None:
    """On dense and grid networks, the compiled contraction's largest table has exactly as
    many entries as the larger of the chosen order's largest table and the result over the
    kept variables: the check before compiling misses no table."""
    from rungbench.causal.scm.contraction import compile_contraction
    from rungbench.causal.scm.random_dag import dense_world

    rng = np.random.default_rng(4)
    cases = [(_grid_scopes(n, set()), [f"R{n - 1:02d}C{n - 1:02d}"]) for n in (6, 12)]
    for n in (20, 40, 60):
        w = dense_world(n, 2.7, rng, f"d{n}")
        scopes = [(v.name, *v.parents) for v in w.variables]
        cases.append((scopes, list(w.names[-2:])))
    elimination.clear_caches()
    for scopes, keep in cases:
        order = elimination._chosen_order(scopes, keep)
        plan = compile_contraction(scopes, order.names, keep)
        assert 2**plan.largest == max(order.largest, 2 ** len(keep))


def test_easy_queries_skip_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """A query whose min-degree order builds few entries (a 30-node random world) never runs
    the other heuristics; a 16x16 grid query (min-degree: a 27-variable table) does."""
    from rungbench.causal.scm import ordering

    calls: list[tuple[str, ...]] = []
    real = ordering.best_order

    def spy(*args: object, **kwargs: object) -> ordering.Order:
        calls.append(tuple(kwargs["heuristics"]))  # type: ignore[arg-type]
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ordering, "best_order", spy)
    elimination.clear_caches()
    w = random_world(DagSpec(30, 0.15, 0.1), np.random.default_rng(8), "easy")
    names = w.observed_names
    oracle.probability(w, Query(1, {names[-1]: 1}, {}, {names[3]: 1}), method="elimination")
    assert calls == []
    elimination._chosen_order(_grid_scopes(16, set()), ["R15C15"])
    assert calls == [elimination.SEARCH_HEURISTICS]


def test_an_order_over_the_budget_is_searched_past() -> None:
    """A 10x10 grid query builds too few entries to start the search, but under a 64 KiB
    budget its min-degree table (2**14 entries, 128 KiB) is over: the search runs and the
    query is answered with the level sweep's 2**10-entry table, equal to the unbounded
    answer."""
    from rungbench.causal.scm import ordering
    from rungbench.causal.scm.random_dag import grid_world

    scopes = _grid_scopes(10, set())
    keep = ["R09C09"]
    assert ordering.min_degree(scopes, keep).largest == 2**14
    w = grid_world(10, 10, np.random.default_rng(10), "g10")
    q = Query(1, {"R09C09": 1}, {}, {"R02C03": 1})
    elimination.clear_caches()
    free = oracle.probability(w, q, method="elimination")
    elimination.clear_caches()
    assert oracle.probability(w, q, method="elimination", memory_budget=64 * 1024) == free
