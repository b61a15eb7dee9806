"""Tests for rungbench.causal.scm.identify: back-door, front-door, verdicts and estimates.

Verdicts are cross-checked against y0's complete ID algorithm (Shpitser & Pearl
2006) on the motif catalogue and on random worlds with latents; back-door set
search is cross-checked by brute force over all subsets; every estimate is
compared with the do-oracle.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable

import networkx as nx
import numpy as np
import pytest

from rungbench.causal.scm import identify as identify_module
from rungbench.causal.scm import mechanisms as mech
from rungbench.causal.scm import oracle
from rungbench.causal.scm.identify import (
    causal_graph,
    find_backdoor_set,
    identify,
    is_backdoor_set,
    is_frontdoor_set,
)
from rungbench.causal.scm.motifs import motif_catalogue
from rungbench.causal.scm.random_dag import DagSpec, random_world
from rungbench.causal.scm.witness import Witness, projection
from rungbench.causal.scm.world import Query, Response, Variable, World
from rungbench.errors import InputError

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from y0.algorithm.identify import identify_outcomes
    from y0.dsl import Variable as Y0Variable
    from y0.graph import NxMixedGraph

EXPECTED_VERDICTS = {
    "chain": "backdoor", "fork": "no_causal_path", "collider": "no_causal_path",
    "selection": "no_causal_path", "confounded": "backdoor",
    "latent_confounded": "not_identifiable", "confounded_reversed": "no_causal_path",
    "latent_confounded_reversed": "no_causal_path", "chain_reversed": "no_causal_path",
    "mediation": "backdoor", "and_interaction": "backdoor", "front_door": "frontdoor",
    "m_bias": "backdoor", "xor": "backdoor",
}


def _y0_graph(w: World) -> NxMixedGraph:
    parents, siblings = projection(w)
    directed = [(Y0Variable(a), Y0Variable(b)) for b, ps in parents.items() for a in ps]
    undirected = sorted({tuple(sorted((a, b))) for a, ss in siblings.items() for b in ss})
    return NxMixedGraph.from_edges(
        nodes=[Y0Variable(n) for n in w.observed_names], directed=directed,
        undirected=[(Y0Variable(a), Y0Variable(b)) for a, b in undirected])


def test_motif_verdicts() -> None:
    """Each motif's (treatment, outcome) gets the textbook verdict; M-bias adjusts for nothing."""
    for m in motif_catalogue(np.random.default_rng(0), repeats=2):
        r = identify(m.world, m.treatment, m.outcome)
        assert r.verdict == EXPECTED_VERDICTS[m.name], m.name
        if m.name == "m_bias":
            assert r.adjustment_set == ()
        if m.name == "confounded":
            assert r.adjustment_set == ("Z",)
        if m.name == "front_door":
            assert r.frontdoor_set == ("M",)


def test_verdicts_agree_with_y0() -> None:
    """Identified by us => identified by y0's ID algorithm; witnessed non-ID => y0 non-ID."""
    rng = np.random.default_rng(1)
    worlds = [m.world for m in motif_catalogue(rng)]
    worlds += [random_world(DagSpec(5, 0.45, 0.4), rng, f"r{i}") for i in range(12)]
    counts = {"identified": 0, "not_identifiable": 0}
    for w in worlds:
        g = _y0_graph(w)
        for x, y in itertools.permutations(w.observed_names, 2):
            r = identify(w, x, y)
            y0_id = identify_outcomes(g, treatments=Y0Variable(x),
                                      outcomes=Y0Variable(y)) is not None
            if r.identifiable:
                assert y0_id, (w.world_id, x, y, r.verdict)
                counts["identified"] += 1
            elif r.verdict == "not_identifiable":
                assert not y0_id, (w.world_id, x, y)
                counts["not_identifiable"] += 1
    assert counts["identified"] > 100 and counts["not_identifiable"] >= 3


def test_estimates_equal_do_oracle() -> None:
    """Every identified estimate (from the observed joint alone) equals the do-oracle to 1e-12."""
    rng = np.random.default_rng(2)
    worlds = [m.world for m in motif_catalogue(rng)]
    worlds += [random_world(DagSpec(6, 0.45, 0.34), rng, f"r{i}") for i in range(8)]
    n = 0
    for w in worlds:
        for x, y in itertools.permutations(w.observed_names, 2):
            for xv, yv in itertools.product((0, 1), repeat=2):
                r = identify(w, x, y, x_val=xv, y_val=yv)
                if r.estimate is None:
                    continue
                truth = oracle.probability(w, Query(2, {y: yv}, {x: xv}, {}))
                assert r.estimate == pytest.approx(truth, abs=1e-12)
                n += 1
    assert n > 400


def test_backdoor_search_is_complete_by_brute_force() -> None:
    """find_backdoor_set is None iff no subset of observed non-descendants is a back-door set."""
    rng = np.random.default_rng(3)
    for i in range(15):
        w = random_world(DagSpec(6, 0.45, 0.34), rng, f"b{i}")
        for x, y in itertools.permutations(w.observed_names, 2):
            if y not in w.descendants([x]):
                continue
            found = find_backdoor_set(w, x, y)
            pool = [n for n in w.observed_names if n not in w.descendants([x]) and n != y]
            exists = any(is_backdoor_set(w, x, y, s) for k in range(len(pool) + 1)
                         for s in itertools.combinations(pool, k))
            assert (found is not None) == exists
            if found is not None:
                assert is_backdoor_set(w, x, y, found)


def test_backdoor_rejects_descendants_of_treatment() -> None:
    """A mediator (descendant of X) is never a valid adjustment set (pgmpy issue 3553)."""
    m = motif_catalogue(np.random.default_rng(4))[0]  # chain X -> M -> Y
    assert m.name == "chain"
    assert not is_backdoor_set(m.world, "X", "Y", ["M"])
    assert is_backdoor_set(m.world, "X", "Y", [])
    g = causal_graph(m.world)
    assert nx.is_d_separator(g, {"X"}, {"Y"}, {"M"})  # d-separation alone would accept M


def test_frontdoor_conditions() -> None:
    """In the front-door motif M qualifies; X itself or an empty set does not."""
    m = next(m for m in motif_catalogue(np.random.default_rng(5)) if m.name == "front_door")
    assert is_frontdoor_set(m.world, "X", "Y", ["M"])
    assert not is_frontdoor_set(m.world, "X", "Y", [])
    assert not is_frontdoor_set(m.world, "X", "Y", ["X"])


def test_identify_rejects_latent_and_unknown_names() -> None:
    """Unknown or latent treatment/outcome raises InputError naming the role."""
    m = next(m for m in motif_catalogue(np.random.default_rng(6)) if m.name == "front_door")
    with pytest.raises(InputError) as exc:
        identify(m.world, "L", "Y")
    assert exc.value.field == "treatment"
    with pytest.raises(InputError) as exc:
        identify(m.world, "X", "Q")
    assert exc.value.field == "outcome"


def test_large_world_identification_uses_marginals() -> None:
    """With 27 observed variables (no dense joint) estimates still equal the do-oracle."""
    w = random_world(DagSpec(27, 0.12, 0.15), np.random.default_rng(8), "big")
    rng = np.random.default_rng(9)
    verdicts = set()
    for _ in range(12):
        x, y = (str(s) for s in rng.choice(w.observed_names, 2, replace=False))
        r = identify(w, x, y)
        verdicts.add(r.verdict)
        if r.estimate is not None:
            truth = oracle.probability(w, Query(2, {y: 1}, {x: 1}, {}))
            assert r.estimate == pytest.approx(truth, abs=1e-12)
        if r.witness is not None:
            assert r.witness.joint_max_diff < 1e-9
    assert verdicts & {"backdoor", "no_causal_path"}


def _confounded_without_effect() -> World:
    """L → X, L → Y, X → Y with X ignoring L and Y ignoring X: P(y | do x) = P(y | x) = P(L=1)."""
    return World("z", (Variable("L", (), mech.root(0.3), observed=False),
                       Variable("X", ("L",), (Response(0.4, (1, 1)), Response(0.6, (0, 0)))),
                       Variable("Y", ("X", "L"), (Response(1.0, (0, 0, 1, 1)),))))


def test_zero_gap_witness_leaves_the_verdict_unknown() -> None:
    """A witness that gives the same P(y | do x) (gap 0) proves nothing: verdict ``unknown``."""
    result = identify(_confounded_without_effect(), "X", "Y")
    assert result.verdict == "unknown"
    assert result.witness is None and result.estimate is None


def test_rounding_level_gap_leaves_the_verdict_unknown(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A witness whose gap (1e-17) is within the joint check (1e-9) is rounding, not a
    second world that disagrees: the verdict stays ``unknown``; 1e-6 is a real gap."""
    world = _confounded_without_effect()

    def witness_with_gap(gap: float) -> Callable[..., Witness]:
        return lambda *a, **k: Witness(world, 0.5, 0.5 + gap, 0.0)

    monkeypatch.setattr(identify_module, "build_witness", witness_with_gap(1e-17))
    assert identify(world, "X", "Y").verdict == "unknown"
    monkeypatch.setattr(identify_module, "build_witness", witness_with_gap(1e-6))
    assert identify(world, "X", "Y").verdict == "not_identifiable"


def test_latent_set_is_not_a_backdoor_set() -> None:
    """The latent confounder {L} d-separates X and Y but cannot be adjusted for."""
    w = _confounded_without_effect()
    assert not is_backdoor_set(w, "X", "Y", ["L"])
    assert not is_backdoor_set(w, "X", "Y", [])


def _named(world_id: str, edges: list[tuple[str, str]], latents: set[str]) -> World:
    """A world on ``edges`` (parents in the order listed) with random mechanisms."""
    rng = np.random.default_rng(7)
    names: list[str] = []
    for a, b in edges:
        names += [n for n in (a, b) if n not in names]
    parents = {n: tuple(a for a, b in edges if b == n) for n in names}
    order: list[str] = []
    while len(order) < len(names):
        order += [n for n in names if n not in order and set(parents[n]) <= set(order)]
    return World(world_id, tuple(Variable(n, parents[n], mech.random_mixture(len(parents[n]),
                                                                             rng),
                                          observed=n not in latents) for n in order))


NAMED_GRAPHS = {  # name: (edges, latents, our verdict for X -> Y, y0 identifies)
    "bow": ([("L", "X"), ("L", "Y"), ("X", "Y")], {"L"}, "not_identifiable", False),
    "iv_latent": ([("Z", "X"), ("L", "X"), ("L", "Y"), ("X", "Y")], {"L"},
                  "unknown", False),
    "front_door_latent": ([("L", "X"), ("L", "Y"), ("X", "M"), ("M", "Y")], {"L"},
                          "frontdoor", True),
    "backdoor_behind_latent": ([("L", "Z"), ("L", "Y"), ("Z", "X"), ("X", "Y")], {"L"},
                               "backdoor", True),
    "napkin": ([("L1", "W1"), ("L1", "X"), ("L2", "W1"), ("L2", "Y"), ("W1", "W2"),
                ("W2", "X"), ("X", "Y")], {"L1", "L2"}, "unknown", True),
}


@pytest.mark.parametrize("name", sorted(NAMED_GRAPHS))
def test_named_latent_graphs_agree_with_y0(name: str) -> None:
    """The bow is witnessed non-ID and non-ID for y0; front-door and back-door behind a
    latent are identified by both; the latent IV (no witness found) and the napkin
    (identified only by the full ID algorithm) are ``unknown`` here: never a false
    not_identifiable and never an identification y0 rejects."""
    edges, latents, verdict, y0_expected = NAMED_GRAPHS[name]
    w = _named(name, edges, latents)
    r = identify(w, "X", "Y")
    y0_id = identify_outcomes(_y0_graph(w), treatments=Y0Variable("X"),
                              outcomes=Y0Variable("Y")) is not None
    assert r.verdict == verdict
    assert y0_id is y0_expected
    if r.identifiable:
        assert r.estimate == pytest.approx(
            oracle.probability(w, Query(2, {"Y": 1}, {"X": 1})), abs=1e-12)


def _categorical_backdoor_world() -> World:
    """Z (3 states) -> X (3 states), Z -> Y (4 states), X -> Y; Y's parents are (X, Z), so
    its row index is x + 3 z (CONTRACTS §1)."""
    from rungbench.causal.scm.cpts import Cpt, world_from_cpts

    z_states, x_states, y_states = ("lo", "mid", "hi"), ("a", "b", "c"), ("w", "x", "y", "z")
    x_rows = ((0.6, 0.3, 0.1), (0.2, 0.5, 0.3), (0.1, 0.2, 0.7))
    y_rows = []
    for z in range(3):
        for x in range(3):
            p3 = {(2, 0): 0.1, (2, 1): 0.4, (2, 2): 0.7}.get((x, z), 0.25)
            rest = (1.0 - p3) / 3
            y_rows.append((rest, rest, rest, p3))
    return world_from_cpts("cat-backdoor", [
        Cpt("Z", (), (), True, z_states, ((0.5, 0.3, 0.2),)),
        Cpt("X", ("Z",), (), True, x_states, x_rows),
        Cpt("Y", ("X", "Z"), (), True, y_states, tuple(y_rows)),
    ])


def test_categorical_backdoor_estimate_equals_the_hand_adjustment() -> None:
    """On Z -> X -> Y <- Z with 3, 3 and 4 states, identify adjusts for Z and returns
    sum_z P(z) P(Y=3 | X=2, z) = 0.5 * 0.1 + 0.3 * 0.4 + 0.2 * 0.7 = 0.31 (by hand), which
    is the do-oracle's answer and not the confounded P(Y=3 | X=2)."""
    world = _categorical_backdoor_world()
    result = identify(world, "X", "Y", x_val=2, y_val=3)
    assert result.verdict == "backdoor" and result.adjustment_set == ("Z",)
    assert result.estimate == pytest.approx(0.31, abs=1e-12)
    assert oracle.probability(world, Query(2, {"Y": 3}, {"X": 2}, {})) == pytest.approx(
        0.31, abs=1e-12)
    assert abs(oracle.probability(world, Query(1, {"Y": 3}, {}, {"X": 2})) - 0.31) > 0.05


def test_identification_on_generated_categorical_worlds_equals_the_do_oracle() -> None:
    """On 12 generated categorical worlds every identified P(Y=y | do(X=x)), over every
    value of X, equals the do-oracle to 1e-12; at least 100 effects are identified."""
    from rungbench.causal.scm.joint import observed_distribution
    from rungbench.causal.scm.random_dag import categorical_world

    rng = np.random.default_rng(21)
    identified = 0
    for k in range(12):
        world = categorical_world(DagSpec(6, 0.45, 0.34 if k % 2 else 0.0), rng, f"ci{k}")
        joint = observed_distribution(world)
        for x in world.observed_names:
            for y in sorted(world.descendants([x]) & set(world.observed_names) - {x}):
                top = world.card(y) - 1
                for xv in range(world.card(x)):
                    result = identify(world, x, y, x_val=xv, y_val=top, joint=joint)
                    if result.estimate is None:
                        continue
                    truth = oracle.probability(world, Query(2, {y: top}, {x: xv}, {}))
                    assert result.estimate == pytest.approx(truth, abs=1e-12)
                    identified += 1
    assert identified >= 100
