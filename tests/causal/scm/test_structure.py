"""Tests for rungbench.causal.scm.structure (CPDAG, v-structures, Markov equivalence)."""

from __future__ import annotations

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from rungbench.causal.scm.structure import cpdag_of, is_acyclic, mec_size, mixed_graph, same_mec


def test_chain_cpdag_is_fully_undirected() -> None:
    """A chain A->B->C has no v-structure, so its CPDAG has no arrows and 3 members."""
    cp = cpdag_of([("A", "B"), ("B", "C")])
    assert cp.directed == frozenset()
    assert len(cp.undirected) == 2
    assert mec_size([("A", "B"), ("B", "C")]) == 3


def test_collider_is_compelled() -> None:
    """A->C<-B keeps both arrows; its class has one member."""
    cp = cpdag_of([("A", "C"), ("B", "C")])
    assert cp.directed == {("A", "C"), ("B", "C")}
    assert not cp.undirected
    assert mec_size([("A", "C"), ("B", "C")]) == 1


def test_meek_r1_orients_downstream_of_collider() -> None:
    """A->C<-B, C-D: R1 orients C->D because A and D are non-adjacent."""
    cp = cpdag_of([("A", "C"), ("B", "C"), ("C", "D")])
    assert ("C", "D") in cp.directed
    assert not cp.undirected


def test_meek_r2_orients_to_avoid_cycle() -> None:
    """A->B<-C, B-D, A-D: R1 orients B->D (C, D non-adjacent), then R2 orients A->D."""
    edges = [("A", "B"), ("C", "B"), ("B", "D"), ("A", "D")]
    cp = cpdag_of(edges)
    assert ("B", "D") in cp.directed and ("A", "D") in cp.directed


def test_same_mec_accepts_reversed_chain_rejects_collider() -> None:
    """B->A, C->B is equivalent to the chain A->B->C; A->B<-C is not."""
    cp = cpdag_of([("A", "B"), ("B", "C")])
    assert same_mec([("B", "A"), ("C", "B")], cp)
    assert same_mec([("B", "A"), ("B", "C")], cp)
    assert not same_mec([("A", "B"), ("C", "B")], cp)
    assert not same_mec([("A", "B")], cp)


def test_cyclic_answer_is_never_in_the_class() -> None:
    """A directed triangle shares the skeleton of a fully undirected triangle but is no DAG."""
    cp = cpdag_of([("A", "B"), ("B", "C"), ("A", "C")])
    assert same_mec([("A", "B"), ("B", "C"), ("A", "C")], cp)
    assert not same_mec([("A", "B"), ("B", "C"), ("C", "A")], cp)
    assert not same_mec([("A", "B"), ("B", "A"), ("B", "C"), ("A", "C")], cp)


def test_mixed_graph_round_trip() -> None:
    """to_json and mixed_graph reproduce the same graph."""
    cp = cpdag_of([("A", "C"), ("B", "C"), ("C", "D"), ("D", "E")])
    doc = cp.to_json()
    again = mixed_graph([tuple(e) for e in doc["directed"]], [tuple(e) for e in doc["undirected"]])
    assert again == cp


@st.composite
def _dags(draw: st.DrawFn) -> list[tuple[str, str]]:
    n = draw(st.integers(2, 6))
    names = [f"V{i}" for i in range(n)]
    return [
        (names[i], names[j])
        for i in range(n)
        for j in range(i + 1, n)
        if draw(st.booleans())
    ]


@settings(max_examples=60, deadline=None)
@given(_dags())
def test_mec_size_matches_brute_force(edges: list[tuple[str, str]]) -> None:
    """The CPDAG's class size equals a brute-force count of equivalent orientations."""
    skeleton = sorted({tuple(sorted(e)) for e in edges})
    target = cpdag_of(edges)
    count = 0
    for mask in range(1 << len(skeleton)):
        oriented = [(a, b) if mask >> i & 1 else (b, a) for i, (a, b) in enumerate(skeleton)]
        g = nx.DiGraph(oriented)
        if nx.is_directed_acyclic_graph(g) and cpdag_of(oriented) == target:
            count += 1
    assert mec_size(edges) == max(count, 1)
    assert is_acyclic(edges)


def test_meek_r3_orients_the_edge_into_the_collider() -> None:
    """A->C, A->D, A->B, C->B<-D: R3 (A-C->B, A-D->B, C, D non-adjacent) compels A->B (Meek)."""
    cp = cpdag_of([("A", "C"), ("A", "D"), ("A", "B"), ("C", "B"), ("D", "B")])
    assert cp.directed == {("C", "B"), ("D", "B"), ("A", "B")}
    assert cp.undirected == {frozenset(("A", "C")), frozenset(("A", "D"))}
