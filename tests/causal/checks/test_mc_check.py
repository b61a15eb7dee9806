"""Tests for the independent Monte Carlo twin-network checker (rungbench.causal.checks.mc_check).

Known answers are derived by hand in each docstring. A tiny brute-force
enumerator in this file (a third implementation, test-only, reading rows as
``sum(value * stride)``) checks the estimates on random binary and categorical
worlds and on the hand-made categorical ones (rungbench.world/2); pgmpy checks
that enumerator on the categorical cases' rung-1 and rung-2 values.
"""

from __future__ import annotations

import copy
import itertools
import logging
import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from rungbench.causal.checks.mc_check import McEstimate, check_queries, check_query, z_score
from rungbench.errors import InputError

DRAWS = 200_000
ALARM = 5.0

World = dict[str, Any]
Query = dict[str, Any]


def _var(name: str, parents: list[str], responses: list[tuple[float, list[int]]],
         observed: bool = True) -> dict[str, Any]:
    return {"name": name, "observed": observed, "parents": parents,
            "responses": [{"p": p, "table": t} for p, t in responses]}


def _bern(name: str, p1: float, observed: bool = True) -> dict[str, Any]:
    return _var(name, [], [(p1, [1]), (1.0 - p1, [0])], observed)


def _world(*variables: dict[str, Any]) -> World:
    # Listed out of causal order on purpose (CONTRACTS §1: never causal order).
    return {"schema": "rungbench.world/1", "world_id": "t", "variables": list(reversed(variables))}


def _estimate(world: World, query: Query, seed: int = 7) -> McEstimate:
    return check_query(world, query, draws=DRAWS, rng=np.random.default_rng(seed))


def _assert_matches(world: World, query: Query, exact: float) -> None:
    estimate = _estimate(world, query)
    assert abs(z_score(estimate, exact)) < ALARM, (estimate, exact)
    assert abs(estimate.p - exact) < 0.01


# A -> B -> C.  A ~ Bern(0.3); B = A with prob 0.8, else B = 1;  C = B with prob 0.9, else not B.
CHAIN = _world(
    _bern("A", 0.3),
    _var("B", ["A"], [(0.8, [0, 1]), (0.2, [1, 1])]),
    _var("C", ["B"], [(0.9, [0, 1]), (0.1, [1, 0])]),
)

# Z -> X, Z -> Y.  Z ~ Bern(0.5); X = Z w.p. 0.9 else not Z; Y = Z w.p. 0.8 else not Z.
FORK = _world(
    _bern("Z", 0.5),
    _var("X", ["Z"], [(0.9, [0, 1]), (0.1, [1, 0])]),
    _var("Y", ["Z"], [(0.8, [0, 1]), (0.2, [1, 0])]),
)

# X, Y ~ Bern(0.5) independent; C := X OR Y (rows X + 2Y: 00->0, 10->1, 01->1, 11->1).
COLLIDER = _world(_bern("X", 0.5), _bern("Y", 0.5), _var("C", ["X", "Y"], [(1.0, [0, 1, 1, 1])]))

# A observed ~ Bern(0.5), B latent ~ Bern(0.5), Y := A XOR B (rows A + 2B: 0, 1, 1, 0).
XOR = _world(_bern("A", 0.5), _bern("B", 0.5, observed=False),
             _var("Y", ["A", "B"], [(1.0, [0, 1, 1, 0])]))

# Noisy-OR: X ~ Bern(0.4); Y := (X AND active) OR leak, P(active) = 0.8, P(leak) = 0.1,
# as a response mixture over rows (X=0, X=1): leak [1,1] 0.1; active, no leak [0,1] 0.9*0.8;
# neither [0,0] 0.9*0.2.
NOISY_OR = _world(_bern("X", 0.4), _var("Y", ["X"], [(0.1, [1, 1]), (0.72, [0, 1]),
                                                     (0.18, [0, 0])]))


# ------------------------------------------------------------------ known answers


def test_chain_rung1_marginal() -> None:
    """P(C=1) in the chain is 0.452.

    P(B=1) = P(A=1) + P(A=0)*0.2 = 0.3 + 0.14 = 0.44;
    P(C=1) = 0.44*0.9 + 0.56*0.1 = 0.396 + 0.056 = 0.452.
    """
    _assert_matches(CHAIN, {"rung": 1, "target": {"C": 1}}, 0.452)


def test_chain_rung1_diagnostic() -> None:
    """P(A=1 | C=1) in the chain is 0.27/0.452 by Bayes.

    A=1 forces B=1, so P(A=1, C=1) = 0.3*0.9 = 0.27; divide by P(C=1) = 0.452.
    """
    _assert_matches(CHAIN, {"rung": 1, "target": {"A": 1}, "evidence": {"C": 1}}, 0.27 / 0.452)


def test_chain_do_cuts_incoming_edges_only() -> None:
    """do(B=0) leaves the upstream A at its prior 0.3 and sets P(C=1) to 0.1.

    Seeing B=0 implies A=0 (rung 1 gives 0), but surgery on B's incoming edge
    leaves A untouched: 0.3. Downstream, C = B w.p. 0.9, so P(C=1 | do B=0) = 0.1;
    a nullification that severed B's outgoing edge could not give 0.1.
    """
    _assert_matches(CHAIN, {"rung": 1, "target": {"A": 1}, "evidence": {"B": 0}}, 0.0)
    _assert_matches(CHAIN, {"rung": 2, "target": {"A": 1}, "do": {"B": 0}}, 0.3)
    _assert_matches(CHAIN, {"rung": 2, "target": {"C": 1}, "do": {"B": 0}}, 0.1)


def test_rung2_evidence_is_post_intervention() -> None:
    """P(A=1 | do(B=0), C=1) = 0.3, while the factual-evidence reading gives 0.597.

    After do(B=0), C depends only on U_C, independent of A, so conditioning on
    C=1 leaves A at 0.3. Reading C=1 as factual evidence (rung 3) gives the
    rung-1 posterior P(A=1 | C=1) = 0.27/0.452 instead.
    """
    _assert_matches(CHAIN, {"rung": 2, "target": {"A": 1}, "do": {"B": 0}, "evidence": {"C": 1}},
                    0.3)
    _assert_matches(CHAIN, {"rung": 3, "target": {"A": 1}, "do": {"B": 0}, "evidence": {"C": 1}},
                    0.27 / 0.452)


def test_fork_association_is_not_causation() -> None:
    """In the fork P(Y=1 | X=1) = 0.74 but P(Y=1 | do X=1) = 0.5.

    P(Z=1 | X=1) = 0.5*0.9 / 0.5 = 0.9, so P(Y=1 | X=1) = 0.9*0.8 + 0.1*0.2 = 0.74.
    X has no path to Y, so intervening leaves P(Y=1) = 0.5*0.8 + 0.5*0.2 = 0.5.
    With Z=1 observed after the intervention, P(Y=1 | do X=1, Z=1) = 0.8.
    """
    _assert_matches(FORK, {"rung": 1, "target": {"Y": 1}, "evidence": {"X": 1}}, 0.74)
    _assert_matches(FORK, {"rung": 2, "target": {"Y": 1}, "do": {"X": 1}}, 0.5)
    _assert_matches(FORK, {"rung": 2, "target": {"Y": 1}, "do": {"X": 1}, "evidence": {"Z": 1}},
                    0.8)


def test_collider_explaining_away_is_one_half() -> None:
    """C := X OR Y gives P(X=1 | Y=1, C=1) = 1/2 (the seed's corrected key) and P(X=1 | C=1) = 2/3.

    Given Y=1, C=1 is certain, so conditioning on C adds nothing: P(X=1) = 1/2.
    Given C=1 alone: P(C=1) = 3/4 and P(X=1, C=1) = 1/2, so 2/3.
    """
    _assert_matches(COLLIDER, {"rung": 1, "target": {"X": 1}, "evidence": {"Y": 1, "C": 1}}, 0.5)
    _assert_matches(COLLIDER, {"rung": 1, "target": {"X": 1}, "evidence": {"C": 1}}, 2 / 3)


def test_xor_counterfactual_is_deterministic() -> None:
    """With Y := A XOR B (B latent), P(Y_{A=0} = 0 | A=1, Y=1) = 1 and P(Y_{A=0} = 1 | ...) = 0.

    A=1, Y=1 abduces B = 0 with certainty; re-solving with A=0 and the same B
    gives Y = 0. The population answer P(Y=0 | do A=0) = 1/2 is the wrong rung.
    """
    evidence = {"A": 1, "Y": 1}
    y0 = _estimate(XOR, {"rung": 3, "target": {"Y": 0}, "do": {"A": 0}, "evidence": evidence})
    y1 = _estimate(XOR, {"rung": 3, "target": {"Y": 1}, "do": {"A": 0}, "evidence": evidence})
    assert (y0.p, y1.p) == (1.0, 0.0)
    assert z_score(y0, 1.0) == 0.0 and z_score(y1, 0.0) == 0.0
    assert abs(z_score(y0, 0.5)) == math.inf
    _assert_matches(XOR, {"rung": 2, "target": {"Y": 0}, "do": {"A": 0}}, 0.5)


def test_probability_of_necessity_noisy_or() -> None:
    """PN = P(Y_{X=0}=0 | X=1, Y=1) = 0.72/0.82 in the noisy-OR world.

    X=1, Y=1 leaves the responses [1,1] (0.1) and [0,1] (0.72); under X=0 only
    [0,1] gives Y=0, so PN = 0.72/0.82 = 1 - P(y|x')/P(y|x) = 1 - 0.1/0.82.
    """
    query = {"rung": 3, "target": {"Y": 0}, "do": {"X": 0}, "evidence": {"X": 1, "Y": 1}}
    _assert_matches(NOISY_OR, query, 0.72 / 0.82)


def test_probability_of_sufficiency_noisy_or() -> None:
    """PS = P(Y_{X=1}=1 | X=0, Y=0) = 0.72/0.9 = 0.8 in the noisy-OR world.

    X=0, Y=0 leaves [0,1] (0.72) and [0,0] (0.18); under X=1 only [0,1] gives Y=1.
    """
    query = {"rung": 3, "target": {"Y": 1}, "do": {"X": 1}, "evidence": {"X": 0, "Y": 0}}
    _assert_matches(NOISY_OR, query, 0.8)


def test_consistency_axiom() -> None:
    """A counterfactual under the factual value reproduces the fact: P(Y_{X=1}=1 | X=1, Y=1) = 1."""
    query = {"rung": 3, "target": {"Y": 1}, "do": {"X": 1}, "evidence": {"X": 1, "Y": 1}}
    estimate = _estimate(NOISY_OR, query)
    assert estimate.p == 1.0 and estimate.se == 0.0


def test_standard_error_is_binomial() -> None:
    """se equals sqrt(p(1-p)/n_accepted) and n_accepted counts the evidence draws."""
    estimate = _estimate(CHAIN, {"rung": 1, "target": {"A": 1}, "evidence": {"C": 1}})
    assert estimate.se == pytest.approx(math.sqrt(estimate.p * (1 - estimate.p)
                                                  / estimate.n_accepted))
    assert abs(estimate.n_accepted - 0.452 * DRAWS) < 5 * math.sqrt(DRAWS * 0.452 * 0.548)


@pytest.mark.parametrize("n_parents", [1, 3, 4, 5, 6, 7, 9])
def test_table_rows_use_first_parent_as_least_significant_bit(n_parents: int) -> None:
    """A deterministic table is read at row sum(parent_i << i), for every packing width."""
    rng = np.random.default_rng(n_parents)
    parents = [f"P{i}" for i in range(n_parents)]
    table = [int(b) for b in rng.integers(0, 2, 2**n_parents)]
    world = _world(*[_bern(p, 0.5) for p in parents], _var("Y", parents, [(1.0, table)]))
    rows = rng.choice(2**n_parents, size=min(6, 2**n_parents), replace=False)
    queries = [{"rung": 1, "target": {"Y": 1},
                "evidence": {p: int(row) >> i & 1 for i, p in enumerate(parents)}} for row in rows]
    estimates = check_queries(world, queries, draws=40_000, rng=np.random.default_rng(1))
    assert [e.p for e in estimates] == [float(table[row]) for row in rows]


# ------------------------------------------------------------------- z and API


def test_z_score_definition() -> None:
    """z = (p - exact)/se; with se = 0 it is 0 when equal (to 1e-9), else signed infinity."""
    assert z_score(McEstimate(p=0.5, se=0.01, n_accepted=2500), 0.48) == pytest.approx(2.0)
    assert z_score(McEstimate(p=1.0, se=0.0, n_accepted=10), 1.0 - 1e-12) == 0.0
    assert z_score(McEstimate(p=1.0, se=0.0, n_accepted=10), 0.99) == math.inf
    assert z_score(McEstimate(p=0.0, se=0.0, n_accepted=10), 0.01) == -math.inf


def test_same_seed_same_estimate() -> None:
    """Two runs with the same seed return identical estimates; another seed differs."""
    query = {"rung": 3, "target": {"Y": 0}, "do": {"X": 0}, "evidence": {"X": 1, "Y": 1}}
    assert _estimate(NOISY_OR, query, seed=3) == _estimate(NOISY_OR, query, seed=3)
    assert _estimate(NOISY_OR, query, seed=3) != _estimate(NOISY_OR, query, seed=4)


def test_listing_order_does_not_change_the_estimate() -> None:
    """Shuffling the listed variables (and nothing else) leaves a seeded estimate unchanged."""
    shuffled = copy.deepcopy(CHAIN)
    shuffled["variables"] = [shuffled["variables"][i] for i in (1, 2, 0)]
    query = {"rung": 2, "target": {"C": 1}, "do": {"B": 1}, "evidence": {"A": 0}}
    assert _estimate(CHAIN, query) == _estimate(shuffled, query)


def test_batch_uses_the_same_draws_as_single_queries() -> None:
    """check_queries on one seed equals check_query per query on that seed (shared draws)."""
    queries: list[Query] = [
        {"rung": 1, "target": {"C": 1}},
        {"rung": 2, "target": {"C": 1}, "do": {"B": 0}},
        {"rung": 3, "target": {"C": 0}, "do": {"B": 0}, "evidence": {"C": 1}},
    ]
    batch = check_queries(CHAIN, queries, draws=10_000, rng=np.random.default_rng(5))
    singles = [check_query(CHAIN, q, draws=10_000, rng=np.random.default_rng(5)) for q in queries]
    assert batch == singles


# ------------------------------------------------------------------- bad input


def _broken(path: list[Any], value: Any) -> World:
    world = copy.deepcopy(XOR)
    node: Any = world
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return world


def _index_of(world: World, name: str) -> int:
    return next(i for i, v in enumerate(world["variables"]) if v["name"] == name)


Y_INDEX = _index_of(XOR, "Y")
A_INDEX = _index_of(XOR, "A")


@pytest.mark.parametrize(
    ("world", "field"),
    [
        (_broken(["schema"], "rungbench.world/0"), "schema"),
        (_broken(["variables", A_INDEX, "parents"], ["Y"]), "variables"),
        (_broken(["variables", Y_INDEX, "parents"], ["A", "Q"]), "Y.parents"),
        (_broken(["variables", A_INDEX, "responses", 0, "p"], 0.6),
         f"variables[{A_INDEX}].responses"),
        (_broken(["variables", A_INDEX, "responses", 0, "p"], 0.0),
         f"variables[{A_INDEX}].responses[0].p"),
        (_broken(["variables", Y_INDEX, "responses", 0, "table"], [0, 1, 1]),
         f"variables[{Y_INDEX}].responses[0].table"),
        (_broken(["variables", Y_INDEX, "responses", 0, "table"], [0, 1, 2, 0]),
         f"variables[{Y_INDEX}].responses[0].table[2]"),
        (_broken(["variables", A_INDEX, "responses", 1, "table"], [1]),
         f"variables[{A_INDEX}].responses[1].table"),
        (_broken(["variables", A_INDEX, "name"], "Y"), f"variables[{max(A_INDEX, Y_INDEX)}].name"),
        (_broken(["variables", A_INDEX, "observed"], "yes"), f"variables[{A_INDEX}].observed"),
    ],
    ids=["schema", "cycle", "unknown-parent", "sum", "zero-p", "table-length", "table-value",
         "duplicate-table", "duplicate-name", "observed"],
)
def test_bad_world_raises_input_error_naming_the_field(world: World, field: str) -> None:
    """A malformed world raises InputError whose field names the offending entry."""
    with pytest.raises(InputError) as caught:
        check_query(world, {"rung": 1, "target": {"Y": 1}}, draws=100,
                    rng=np.random.default_rng(0))
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"rung": 4, "target": {"Y": 1}}, "queries[0].rung"),
        ({"rung": 1, "target": {"Q": 1}}, "queries[0].target.Q"),
        ({"rung": 1, "target": {"Y": 2}}, "queries[0].target.Y"),
        ({"rung": 1, "target": {"Y": True}}, "queries[0].target.Y"),
        ({"rung": 1, "target": {"Y": 1}, "evidence": {"B": 0}}, "queries[0].evidence.B"),
        ({"rung": 1, "target": {"Y": 1}, "do": {"A": 0}}, "queries[0].do"),
        ({"rung": 2, "target": {"Y": 1}, "do": {"A": 0}, "evidence": {"A": 1}},
         "queries[0].evidence"),
        ({"rung": 1, "target": [1]}, "queries[0].target"),
    ],
    ids=["rung", "unknown-variable", "bad-value", "bool-value", "latent-evidence", "rung1-do",
         "impossible-evidence", "target-not-object"],
)
def test_bad_query_raises_input_error_naming_the_field(query: Query, field: str) -> None:
    """A malformed or unestimable query raises InputError naming its field."""
    with pytest.raises(InputError) as caught:
        check_queries(XOR, [query], draws=1_000, rng=np.random.default_rng(0))
    assert caught.value.field == field


def test_nonpositive_draws_rejected() -> None:
    """draws < 1 is an InputError, never an empty estimate."""
    with pytest.raises(InputError):
        check_query(XOR, {"rung": 1, "target": {"Y": 1}}, draws=0, rng=np.random.default_rng(0))


# ---------------------------------------------- random worlds vs brute enumeration


def _random_world(rng: np.random.Generator, n: int = 5) -> World:
    names = [f"V{i}" for i in range(n)]
    variables = []
    for i, name in enumerate(names):
        k = int(rng.integers(0, min(i, 2) + 1))
        parents = [str(p) for p in rng.choice(names[:i], size=k, replace=False)] if k else []
        tables = {tuple(int(b) for b in rng.integers(0, 2, 2**k)) for _ in range(3)}
        weights = rng.uniform(0.2, 1.0, len(tables))
        weights /= weights.sum()
        responses = [(float(w), list(t)) for w, t in zip(weights, sorted(tables), strict=True)]
        variables.append(_var(name, parents, responses, observed=i != 0))
    order = rng.permutation(n)
    return {"schema": "rungbench.world/1", "world_id": "r",
            "variables": [variables[i] for i in order]}


def _n_states(variable: Mapping[str, Any]) -> int:
    return len(variable["states"]) if "states" in variable else 2


def _state(world: World, name: str, value: int | str) -> int:
    """A query value as a state index: an index as is, a state name looked up in its list."""
    if isinstance(value, str):
        variable = next(v for v in world["variables"] if v["name"] == name)
        return int(variable["states"].index(value))
    return value


def _solve_once(world: World, choice: Mapping[str, int], do: Mapping[str, int]) -> dict[str, int]:
    """Solve every variable for one choice of responses; rows are sum(value * stride)."""
    spec = {v["name"]: v for v in world["variables"]}
    values: dict[str, int] = {}

    def value(name: str) -> int:
        if name not in values:
            if name in do:
                values[name] = do[name]
            else:
                row, stride = 0, 1
                for parent in spec[name]["parents"]:
                    row += value(parent) * stride
                    stride *= _n_states(spec[parent])
                values[name] = spec[name]["responses"][choice[name]]["table"][row]
        return values[name]

    for name in spec:
        value(name)
    return values


def _event(world: World, query: Query, key: str) -> dict[str, int]:
    return {name: _state(world, name, v) for name, v in query.get(key, {}).items()}


def _enumerate_exact(world: World, query: Query, min_evidence: float = 1e-3) -> float | None:
    """The query's exact value by enumerating every combination of responses (None when the
    evidence has probability below ``min_evidence``)."""
    names = [v["name"] for v in world["variables"]]
    counts = [len(v["responses"]) for v in world["variables"]]
    do, target, evidence = (_event(world, query, key) for key in ("do", "target", "evidence"))
    num = den = 0.0
    for combo in itertools.product(*(range(c) for c in counts)):
        choice = dict(zip(names, combo, strict=True))
        weight = math.prod(world["variables"][i]["responses"][r]["p"] for i, r in enumerate(combo))
        factual = _solve_once(world, choice, {})
        acted = _solve_once(world, choice, do)
        seen = acted if query["rung"] == 2 else factual
        if all(seen[k] == v for k, v in evidence.items()):
            den += weight
            if all(acted[k] == v for k, v in target.items()):
                num += weight
    return num / den if den > min_evidence else None


def _random_query(rng: np.random.Generator, names: list[str]) -> Query:
    rung = int(rng.integers(1, 4))
    picks = [str(x) for x in rng.choice(names, size=3, replace=False)]
    query: Query = {"rung": rung, "target": {picks[0]: int(rng.integers(0, 2))}}
    if rung > 1:
        query["do"] = {picks[1]: int(rng.integers(0, 2))}
    observed = [n for n in names if n != "V0" and n != picks[0]]
    if observed and rng.random() < 0.8:
        query["evidence"] = {str(rng.choice(observed)): int(rng.integers(0, 2))}
    return query


def test_random_worlds_agree_with_brute_force_enumeration() -> None:
    """On 12 random 5-node worlds, every query of every rung is within |z| < 5 of enumeration."""
    rng = np.random.default_rng(2026)
    worst = 0.0
    checked = 0
    for _ in range(12):
        world = _random_world(rng)
        names = sorted(v["name"] for v in world["variables"])
        queries = [q for q in (_random_query(rng, names) for _ in range(8))
                   if _enumerate_exact(world, q) is not None]
        estimates = check_queries(world, queries, draws=DRAWS, rng=rng)
        for query, estimate in zip(queries, estimates, strict=True):
            exact = _enumerate_exact(world, query)
            assert exact is not None
            worst = max(worst, abs(z_score(estimate, exact)))
            checked += 1
    assert checked >= 60
    assert worst < ALARM


# ------------------------------------------------ categorical worlds (rungbench.world/2)

CATEGORICAL_ALARM = 4.0
"""The hand-made categorical worlds' estimates must lie within 4 standard errors."""


def _cat(name: str, states: list[str], parents: list[str],
         responses: list[tuple[float, list[int]]], observed: bool = True) -> dict[str, Any]:
    return {**_var(name, parents, responses, observed), "states": states}


def _world2(*variables: dict[str, Any]) -> World:
    return {"schema": "rungbench.world/2", "world_id": "c", "variables": list(reversed(variables))}


# X <- Z -> Y with X -> Y, all three-state. Y's rows are x + 3 z; its responses:
# y = z (0.5), y = x (0.3), y = max(x, z) (0.2).
CONFOUNDED3 = _world2(
    _cat("Z", ["low", "mid", "high"], [], [(0.5, [0]), (0.3, [1]), (0.2, [2])]),
    _cat("X", ["a", "b", "c"], ["Z"], [(0.6, [0, 1, 2]), (0.25, [1, 2, 0]), (0.15, [0, 0, 0])]),
    _cat("Y", ["y0", "y1", "y2"], ["X", "Z"],
         [(0.5, [0, 0, 0, 1, 1, 1, 2, 2, 2]), (0.3, [0, 1, 2, 0, 1, 2, 0, 1, 2]),
          (0.2, [0, 1, 2, 1, 1, 2, 2, 2, 2])]),
)

# A -> B -> C, four states each. B copies A (0.7), steps up capped at 3 (0.2) or is 0 (0.1);
# C copies B (0.6), reverses it 3 - b (0.3) or is 2 (0.1).
CHAIN4 = _world2(
    _cat("A", ["a0", "a1", "a2", "a3"], [], [(0.1, [0]), (0.2, [1]), (0.3, [2]), (0.4, [3])]),
    _cat("B", ["b0", "b1", "b2", "b3"], ["A"],
         [(0.7, [0, 1, 2, 3]), (0.2, [1, 2, 3, 3]), (0.1, [0, 0, 0, 0])]),
    _cat("C", ["c0", "c1", "c2", "c3"], ["B"],
         [(0.6, [0, 1, 2, 3]), (0.3, [3, 2, 1, 0]), (0.1, [2, 2, 2, 2])]),
)

# Latent three-state root L -> X (binary), L -> Y (four states), X -> Y. Y's rows are
# x + 2 l (strides 1, 2); its responses: x + l (0.5), 3 when l = 2 else 0 (0.3), arbitrary (0.2).
LATENT3 = _world2(
    _cat("L", ["l0", "l1", "l2"], [], [(0.3, [0]), (0.3, [1]), (0.4, [2])], observed=False),
    _cat("X", ["off", "on"], ["L"], [(0.8, [0, 1, 1]), (0.2, [1, 0, 0])]),
    _cat("Y", ["none", "low", "mid", "high"], ["X", "L"],
         [(0.5, [0, 1, 1, 2, 2, 3]), (0.3, [0, 0, 0, 0, 3, 3]), (0.2, [1, 2, 0, 3, 1, 1])]),
)

CATEGORICAL_CASES: list[tuple[str, World, Query]] = [
    ("confounded-r1-name", CONFOUNDED3, {"rung": 1, "target": {"Y": "y2"}, "evidence": {"X": "c"}}),
    ("confounded-r1-index", CONFOUNDED3, {"rung": 1, "target": {"Y": 0}, "evidence": {"X": 0}}),
    ("confounded-r2", CONFOUNDED3, {"rung": 2, "target": {"Y": "y2"}, "do": {"X": "c"}}),
    ("confounded-r2-evidence", CONFOUNDED3,
     {"rung": 2, "target": {"Y": 0}, "do": {"X": 0}, "evidence": {"Z": "mid"}}),
    ("confounded-r3", CONFOUNDED3,
     {"rung": 3, "target": {"Y": "y0"}, "do": {"X": "a"}, "evidence": {"X": "c", "Y": "y2"}}),
    ("confounded-r3-joint", CONFOUNDED3,
     {"rung": 3, "target": {"Y": 2, "Z": 2}, "do": {"X": 2}, "evidence": {"X": 0, "Y": 0}}),
    ("chain-r1", CHAIN4, {"rung": 1, "target": {"C": "c3"}}),
    ("chain-r1-diagnostic", CHAIN4, {"rung": 1, "target": {"A": 0}, "evidence": {"C": "c0"}}),
    ("chain-r2", CHAIN4, {"rung": 2, "target": {"C": "c2"}, "do": {"B": "b1"}}),
    ("chain-r2-upstream", CHAIN4, {"rung": 2, "target": {"A": 3}, "do": {"B": 0}}),
    ("chain-r3", CHAIN4, {"rung": 3, "target": {"C": 3}, "do": {"B": 0}, "evidence": {"C": 3}}),
    ("chain-r3-mediated", CHAIN4,
     {"rung": 3, "target": {"C": "c1"}, "do": {"A": "a1"}, "evidence": {"A": "a3", "C": "c3"}}),
    ("latent-r1", LATENT3, {"rung": 1, "target": {"Y": "high"}, "evidence": {"X": "on"}}),
    ("latent-r2", LATENT3, {"rung": 2, "target": {"Y": 3}, "do": {"X": 1}}),
    ("latent-r3", LATENT3,
     {"rung": 3, "target": {"Y": "none"}, "do": {"X": "off"}, "evidence": {"X": "on", "Y": "mid"}}),
    ("latent-r3-latent-target", LATENT3,
     {"rung": 3, "target": {"L": "l2"}, "do": {"X": 0}, "evidence": {"X": 1, "Y": 3}}),
    ("latent-r3-consistency", LATENT3,
     {"rung": 3, "target": {"Y": "high"}, "do": {"X": "on"}, "evidence": {"X": "on", "Y": "high"}}),
]


@pytest.mark.parametrize(("world", "query"), [case[1:] for case in CATEGORICAL_CASES],
                         ids=[case[0] for case in CATEGORICAL_CASES])
def test_categorical_worlds_agree_with_brute_force_enumeration(world: World,
                                                               query: Query) -> None:
    """On the hand-made three-state confounded, four-state chain and latent three-state worlds,
    each rung-1/2/3 estimate is within 4 standard errors of the exact value enumerated here."""
    exact = _enumerate_exact(world, query)
    assert exact is not None
    estimate = check_query(world, query, draws=DRAWS, rng=np.random.default_rng(11))
    assert abs(z_score(estimate, exact)) < CATEGORICAL_ALARM, (estimate, exact)
    assert abs(estimate.p - exact) < 0.01


def test_hand_derived_categorical_answers_match_the_enumeration() -> None:
    """Three answers derived by hand agree with the test's enumerator (which pins the rest).

    Chain, P(C=c2 | do B=b1): identity gives 1, reversal gives 2, constant gives 2: 0.3 + 0.1.
    Chain, P(A=a3 | do B=b0): surgery on B leaves A at its prior 0.4.
    Latent, P(Y=high | do X=on): x + l = 3 needs l = 2 (0.5 * 0.4); the l = 2 response gives 3
    (0.3 * 0.4); the arbitrary table reads rows 1, 3, 5 = 2, 3, 1, so l = 1 (0.2 * 0.3):
    0.2 + 0.12 + 0.06 = 0.38.
    """
    cases = {name: (world, query) for name, world, query in CATEGORICAL_CASES}
    for name, hand in (("chain-r2", 0.4), ("chain-r2-upstream", 0.4), ("latent-r2", 0.38)):
        assert _enumerate_exact(*cases[name]) == pytest.approx(hand, abs=1e-12)


def test_categorical_rungs_are_told_apart() -> None:
    """In the confounded world the rung-2 estimate is far (> 4 se) from the rung-1 value, and in
    the latent world the rung-3 estimate is far from the rung-2 value: confusing rungs fails."""
    seeing = {"rung": 1, "target": {"Y": "y2"}, "evidence": {"X": "c"}}
    doing = {"rung": 2, "target": {"Y": "y2"}, "do": {"X": "c"}}
    estimate = check_query(CONFOUNDED3, doing, draws=DRAWS, rng=np.random.default_rng(11))
    assert abs(z_score(estimate, _enumerate_exact(CONFOUNDED3, seeing) or 0.0)) > 10
    imagining = {"rung": 3, "target": {"Y": 0}, "do": {"X": 0}, "evidence": {"X": 1, "Y": 2}}
    population = {"rung": 2, "target": {"Y": 0}, "do": {"X": 0}}
    estimate = check_query(LATENT3, imagining, draws=DRAWS, rng=np.random.default_rng(11))
    assert abs(z_score(estimate, _enumerate_exact(LATENT3, population) or 0.0)) > 10


def _pgmpy_value(world: World, query: Query) -> float:
    """A rung-1 or rung-2 single-target query by pgmpy's variable elimination (rung 2 on the
    mutilated network ``model.do``, with the forced values as evidence).

    pgmpy is imported here, not at the top: only this cross-check needs it, and its import
    takes seconds.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgmpy.factors.discrete import TabularCPD
        from pgmpy.inference import VariableElimination
        from pgmpy.models import DiscreteBayesianNetwork
    logging.getLogger("pgmpy").setLevel(logging.ERROR)

    spec = {v["name"]: v for v in world["variables"]}
    model = DiscreteBayesianNetwork()
    model.add_nodes_from(spec)
    model.add_edges_from((p, v["name"]) for v in spec.values() for p in v["parents"])
    for name, v in spec.items():
        cards = [_n_states(spec[p]) for p in v["parents"]]
        rows = range(math.prod(cards))
        values = [[math.fsum(r["p"] for r in v["responses"] if r["table"][row] == s)
                   for row in rows] for s in range(_n_states(v))]
        # pgmpy's LAST evidence variable varies fastest: list the parents reversed so the
        # first parent has stride 1, as in the world's row index.
        model.add_cpds(TabularCPD(name, _n_states(v), values,
                                  evidence=list(reversed(v["parents"])) or None,
                                  evidence_card=list(reversed(cards)) or None))
    model.check_model()
    do, target, evidence = (_event(world, query, key) for key in ("do", "target", "evidence"))
    if do:
        model = model.do(list(do))
    (name, state), = target.items()
    posterior = VariableElimination(model).query([name], evidence={**evidence, **do},
                                                 show_progress=False)
    return float(posterior.values[state])


def test_the_enumeration_agrees_with_pgmpy_on_rungs_1_and_2() -> None:
    """pgmpy, an independent exact library, gives the same rung-1 and rung-2 values (to 1e-9)
    as this file's enumerator on every single-target hand-made categorical case."""
    checked = 0
    for _, world, query in CATEGORICAL_CASES:
        if query["rung"] < 3 and len(query["target"]) == 1:
            assert _pgmpy_value(world, query) == pytest.approx(_enumerate_exact(world, query),
                                                               abs=1e-9)
            checked += 1
    assert checked == 10


def _with_names(world: World) -> World:
    """The same binary world as rungbench.world/2, every variable's states named."""
    named = copy.deepcopy(world)
    named["schema"] = "rungbench.world/2"
    for variable in named["variables"]:
        variable["states"] = [f"{variable['name']}-no", f"{variable['name']}-yes"]
    return named


def _with_idle_three_state(world: World) -> World:
    """The binary world plus an unconnected three-state root sorted last by name."""
    named = _with_names(world)
    named["variables"].append(_cat("ZZZ", ["p", "q", "r"], [], [(0.2, [0]), (0.3, [1]),
                                                               (0.5, [2])]))
    return named


BINARY_QUERIES: list[Query] = [
    {"rung": 1, "target": {"C": 1}, "evidence": {"A": 0}},
    {"rung": 2, "target": {"C": 0}, "do": {"B": 1}},
    {"rung": 3, "target": {"C": 0}, "do": {"B": 0}, "evidence": {"C": 1, "A": 1}},
]


def test_named_binary_world_gives_the_binary_estimates() -> None:
    """A binary world written as rungbench.world/2 with state names gives, for one seed, the
    same estimates as the /1 world, whether its queries give state indices or names."""
    named = _with_names(CHAIN)
    by_name = [{key: ({v: f"{v}-yes" if x else f"{v}-no" for v, x in event.items()}
                      if key != "rung" else event) for key, event in q.items()}
               for q in BINARY_QUERIES]
    expected = check_queries(CHAIN, BINARY_QUERIES, draws=20_000, rng=np.random.default_rng(4))
    assert check_queries(named, BINARY_QUERIES, draws=20_000,
                         rng=np.random.default_rng(4)) == expected
    assert check_queries(named, by_name, draws=20_000, rng=np.random.default_rng(4)) == expected


@pytest.mark.parametrize("world", [CHAIN, FORK, XOR, NOISY_OR], ids=["chain", "fork", "xor",
                                                                     "noisy-or"])
def test_categorical_sampler_reproduces_the_packed_sampler(world: World) -> None:
    """Adding an unconnected three-state variable (named to draw last) moves a binary world to
    the categorical sampler; on the same seed every binary query's estimate is unchanged."""
    names = sorted(v["name"] for v in world["variables"])
    queries: list[Query] = [
        {"rung": 1, "target": {names[-1]: 1}},
        {"rung": 2, "target": {names[-1]: 0}, "do": {names[0]: 1}},
        {"rung": 3, "target": {names[-1]: 1}, "do": {names[0]: 0},
         "evidence": {v["name"]: 1 for v in world["variables"] if v["observed"]}},
    ]
    packed = check_queries(world, queries, draws=20_000, rng=np.random.default_rng(9))
    categorical = check_queries(_with_idle_three_state(world), queries, draws=20_000,
                                rng=np.random.default_rng(9))
    assert categorical == packed


@pytest.mark.parametrize("n_parents", [1, 4, 7, 9])
def test_categorical_sampler_reads_wide_binary_tables_like_the_packed_one(n_parents: int) -> None:
    """A binary child of up to 9 binary parents (multi-word packed tables) gets the same
    estimates from the categorical sampler as from the packed one, on the same seed."""
    rng = np.random.default_rng(n_parents)
    parents = [f"P{i}" for i in range(n_parents)]
    tables = sorted({tuple(int(b) for b in rng.integers(0, 2, 2**n_parents)) for _ in range(3)})
    responses = [(1.0 / len(tables), list(t)) for t in tables]
    world = _world(*[_bern(p, 0.5) for p in parents], _var("Y", parents, responses))
    queries: list[Query] = [{"rung": 1, "target": {"Y": 1}, "evidence": {"P0": 1}},
                            {"rung": 3, "target": {"Y": 1}, "do": {parents[-1]: 0},
                             "evidence": {"Y": 0}}]
    packed = check_queries(world, queries, draws=20_000, rng=np.random.default_rng(2))
    categorical = check_queries(_with_idle_three_state(world), queries, draws=20_000,
                                rng=np.random.default_rng(2))
    assert categorical == packed


def _random_categorical_world(rng: np.random.Generator, n: int = 5) -> World:
    names = [f"V{i}" for i in range(n)]
    states = {name: [f"{name}s{j}" for j in range(int(rng.integers(2, 5)))] for name in names}
    variables = []
    for i, name in enumerate(names):
        k = int(rng.integers(0, min(i, 2) + 1))
        parents = [str(p) for p in rng.choice(names[:i], size=k, replace=False)] if k else []
        rows = math.prod(len(states[p]) for p in parents)
        tables = {tuple(int(v) for v in rng.integers(0, len(states[name]), rows))
                  for _ in range(3)}
        weights = rng.uniform(0.2, 1.0, len(tables))
        weights /= weights.sum()
        responses = [(float(w), list(t)) for w, t in zip(weights, sorted(tables), strict=True)]
        variables.append(_cat(name, states[name], parents, responses, observed=i != 0))
    return {"schema": "rungbench.world/2", "world_id": "rc",
            "variables": [variables[i] for i in rng.permutation(n)]}


def _random_categorical_query(rng: np.random.Generator, world: World) -> Query:
    states = {v["name"]: v["states"] for v in world["variables"]}
    names = sorted(states)

    def pick(name: str) -> int | str:
        j = int(rng.integers(0, len(states[name])))
        return states[name][j] if rng.random() < 0.5 else j

    rung = int(rng.integers(1, 4))
    first, second, _ = (str(x) for x in rng.choice(names, size=3, replace=False))
    query: Query = {"rung": rung, "target": {first: pick(first)}}
    if rung > 1:
        query["do"] = {second: pick(second)}
    observed = [n for n in names if n not in ("V0", first)]
    if rng.random() < 0.8:
        seen = str(rng.choice(observed))
        query["evidence"] = {seen: pick(seen)}
    return query


def test_random_categorical_worlds_agree_with_brute_force_enumeration() -> None:
    """On 10 random 5-node worlds of 2 to 4 states, every query of every rung (values given as
    indices or names) is within |z| < 5 of enumeration."""
    rng = np.random.default_rng(2027)
    worst = 0.0
    checked = 0
    for _ in range(10):
        world = _random_categorical_world(rng)
        queries = [q for q in (_random_categorical_query(rng, world) for _ in range(8))
                   if _enumerate_exact(world, q, min_evidence=0.01) is not None]
        estimates = check_queries(world, queries, draws=DRAWS, rng=rng)
        for query, estimate in zip(queries, estimates, strict=True):
            exact = _enumerate_exact(world, query, min_evidence=0.01)
            assert exact is not None
            worst = max(worst, abs(z_score(estimate, exact)))
            checked += 1
    assert checked >= 50
    assert worst < ALARM


def test_hundreds_of_responses_are_drawn_with_their_probabilities() -> None:
    """A variable with 300 responses (past the 255 a byte counts) is sampled correctly: with
    64-state parent and child, P(Y = 0 | X = 5) matches the sum of the chosen responses' p."""
    rng = np.random.default_rng(64)
    states = [f"s{j}" for j in range(64)]
    tables = sorted({tuple(int(v) for v in rng.integers(0, 64, 64)) for _ in range(300)})
    weights = rng.uniform(0.5, 1.0, len(tables))
    weights /= weights.sum()
    world = _world2(
        _cat("X", states, [], [(1 / 64, [j]) for j in range(64)]),
        _cat("Y", states, ["X"], [(float(w), list(t)) for w, t in zip(weights, tables,
                                                                         strict=True)]),
    )
    exact = math.fsum(float(w) for w, t in zip(weights, tables, strict=True) if t[5] == 0)
    query = {"rung": 1, "target": {"Y": 0}, "evidence": {"X": "s5"}}
    estimate = check_query(world, query, draws=1_000_000, rng=np.random.default_rng(1))
    assert len(tables) == 300 and exact > 0.005
    assert abs(z_score(estimate, exact)) < CATEGORICAL_ALARM
