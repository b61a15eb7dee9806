"""Tests for rungbench.causal.scm.relevance: d-separated evidence is dropped, exactly."""

from __future__ import annotations

import numpy as np
import pytest

from rungbench.causal.scm import elimination, oracle, relevance
from rungbench.causal.scm import mechanisms as mech
from rungbench.causal.scm.random_dag import DagSpec, random_world
from rungbench.causal.scm.world import Query, Response, Variable, World
from rungbench.errors import InputError


def _two_parts(d_given_c: tuple[Response, ...] | None = None) -> World:
    """A -> B, and apart from it C -> D (D copies C unless ``d_given_c`` says otherwise)."""
    d = mech.deterministic(lambda b: b[0], 1) if d_given_c is None else d_given_c
    return World("two", (Variable("A", (), mech.root(0.3)),
                         Variable("B", ("A",), mech.noisy_function(lambda b: b[0], 1, 0.1)),
                         Variable("C", (), mech.root(0.6)), Variable("D", ("C",), d)))


def _plan_tables(w: World) -> int:
    plan = next(iter(elimination._network(w).plans.values()))
    return len(plan.tables)


def test_components_join_factors_through_shared_variables() -> None:
    """Scopes {a,b}, {b,c}, {d}, {} fall into three components: a-b-c, d, and the empty one."""
    assert relevance.components([("a", "b"), ("b", "c"), ("d",), ()]) == [0, 0, 1, 2]


def test_d_separated_evidence_is_not_eliminated() -> None:
    """P(B | D=1) reads only A and B: the C-D component is certified possible and dropped
    (two tables left), and the answer equals enumeration's P(B=1) to 1e-12."""
    w = _two_parts()
    elimination.clear_caches()
    q = Query(1, {"B": 1}, {}, {"D": 1})
    got = oracle.probability(w, q, method="elimination")
    assert _plan_tables(w) == 2
    want = oracle.probability(w, Query(1, {"B": 1}, {}, {}), method="enumeration")
    assert got == pytest.approx(want, abs=1e-12)


def test_impossible_evidence_in_a_separate_part_is_still_refused() -> None:
    """D copies C, so C=1, D=0 is impossible: though it is d-separated from B, both engines
    refuse the query (the witness fails, so the part is eliminated and P(evidence) = 0)."""
    w = _two_parts()
    q = Query(1, {"B": 1}, {}, {"C": 1, "D": 0})
    for method in ("enumeration", "elimination"):
        elimination.clear_caches()
        with pytest.raises(InputError, match="probability zero"):
            oracle.probability(w, q, method=method)


def test_the_witness_search_backtracks() -> None:
    """D=1 has probability zero when C=1 and positive when C=0: the search tries the more
    probable C=1 first, backtracks to C=0, certifies the C-D part and drops it (two tables
    left); the answer is unchanged."""
    w = _two_parts((Response(0.5, (0, 0)), Response(0.5, (1, 0))))
    elimination.clear_caches()
    q = Query(1, {"B": 1}, {}, {"D": 1})
    got = oracle.probability(w, q, method="elimination")
    assert _plan_tables(w) == 2
    want = oracle.probability(w, Query(1, {"B": 1}, {}, {}), method="enumeration")
    assert got == pytest.approx(want, abs=1e-12)


def test_a_search_out_of_steps_certifies_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no search steps allowed, the C-D part is eliminated with the rest (four tables)
    and the answer is unchanged."""
    monkeypatch.setattr(relevance, "WITNESS_STEPS", 0)
    w = _two_parts()
    elimination.clear_caches()
    got = oracle.probability(w, Query(1, {"B": 1}, {}, {"D": 1}), method="elimination")
    assert _plan_tables(w) == 4
    want = oracle.probability(w, Query(1, {"B": 1}, {}, {}), method="enumeration")
    assert got == pytest.approx(want, abs=1e-12)


def test_evidence_possible_in_every_row_needs_no_search(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """D is a noisy copy of C, so D=1 has positive probability whatever C: with no search
    steps allowed, the C-D part is still certified and dropped (two tables left)."""
    monkeypatch.setattr(relevance, "WITNESS_STEPS", 0)
    w = _two_parts(mech.noisy_function(lambda b: b[0], 1, 0.2))
    elimination.clear_caches()
    got = oracle.probability(w, Query(1, {"B": 1}, {}, {"D": 1}), method="elimination")
    assert _plan_tables(w) == 2
    want = oracle.probability(w, Query(1, {"B": 1}, {}, {}), method="enumeration")
    assert got == pytest.approx(want, abs=1e-12)


def test_dropping_parts_changes_no_answer_and_no_refusal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On 20 random 12-20-node worlds with evidence on every leaf, rung 1, 2 and 3 answers
    with relevance pruning equal those eliminating the whole ancestral network to 1e-12,
    refusals included."""
    rng = np.random.default_rng(8)
    cases = []
    for k in range(20):
        w = random_world(DagSpec(int(rng.integers(12, 21)), 0.15, 0.1), rng, f"r{k}")
        has_child = {p for v in w.variables for p in v.parents}
        leaves = [n for n in w.observed_names if n not in has_child]
        y, x = leaves[-1], w.observed_names[0]
        ev = {n: int(rng.integers(0, 2)) for n in leaves[:-1]}
        cases += [(w, Query(1, {y: 1}, {}, ev)), (w, Query(2, {y: 1}, {x: 1}, ev)),
                  (w, Query(3, {y: 1}, {x: 1}, {x: 0, **ev}))]

    def answers() -> list[float | None]:
        elimination.clear_caches()
        out: list[float | None] = []
        for w, q in cases:
            try:
                out.append(oracle.probability(w, q, method="elimination"))
            except InputError:
                out.append(None)
        return out

    def tables() -> int:
        return sum(len(p.tables) for w in {id(w): w for w, _ in cases}.values()
                   for p in elimination._network(w).plans.values())

    pruned = answers()
    pruned_tables = tables()
    monkeypatch.setattr(elimination, "_split",
                        lambda reduced, query: (list(range(len(reduced))), []))
    whole = answers()
    assert pruned_tables < tables()  # parts were dropped
    elimination.clear_caches()
    assert sum(a is not None for a in pruned) > 30
    for a, b in zip(pruned, whole, strict=True):
        assert (a is None) == (b is None)
        if a is not None and b is not None:
            assert abs(a - b) <= 1e-12
