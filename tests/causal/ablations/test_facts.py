"""The causal facts of an arm: production copies, association rows, typed and untyped rows."""

from __future__ import annotations

from rungbench.causal.ablations.facts import (
    arm_rows,
    causal_edges,
    confounded_pairs,
    fact_sentences,
    kept,
)

EDGES = (("u", "a"), ("u", "b"), ("u", "c"), ("a", "c"))
"""u causes a, b, c; a causes c: confounded pairs without an edge are (a, b) and (b, c)."""


def test_confounded_pairs_share_a_parent_and_no_edge() -> None:
    """(a, c) share u but a -> c is an edge, so only (a, b) and (b, c) are confounded pairs."""
    assert confounded_pairs(EDGES) == (("a", "b"), ("b", "c"))


def test_oracle_rows_are_every_edge_as_a_causal_claim() -> None:
    """The oracle content is the true mechanism only: no association rows, typed or not."""
    rows = arm_rows(EDGES, "w1", "oracle", 0.0, 1.0, True)
    assert causal_edges(rows) == EDGES and len(rows) == 4


def test_production_rows_typed_and_untyped_hold_the_same_pairs() -> None:
    """With every pair kept, the production copy holds both association rows; untyped they are
    causal claims, typed they are correlations — the same pairs, another kind."""
    untyped = arm_rows(EDGES, "w1", "production", 1.0, 1.0, False)
    typed = arm_rows(EDGES, "w1", "production", 1.0, 1.0, True)
    assert [(a, b) for a, b, _ in untyped] == [(a, b) for a, b, _ in typed]
    assert ("a", "b", "causal_claim") in untyped and ("a", "b", "correlation") in typed
    assert len(causal_edges(untyped)) == 6 and causal_edges(typed) == tuple(sorted(EDGES))
    assert arm_rows(EDGES, "w1", "production", 1.0, 0.0, False) == tuple(
        (a, b, "causal_claim") for a, b in sorted(EDGES))


def test_production_keeps_edges_by_a_hash_independent_of_associations() -> None:
    """Which true edges a production copy keeps does not depend on the association share."""
    for share in (0.0, 0.5, 1.0):
        rows = arm_rows(EDGES, "w7", "production", 0.5, share, True)
        assert causal_edges(rows) == tuple(e for e in sorted(EDGES) if kept("w7", e, 0.5))


def test_text_renders_association_rows_as_associations_only_when_typed() -> None:
    """Typed association rows read 'is associated with'; untyped ones read 'causes'."""
    assert "- a is associated with b." in fact_sentences((("a", "b", "correlation"),))
    assert "- a causes b." in fact_sentences((("a", "b", "causal_claim"),))
    assert fact_sentences(()) == "Known causal facts: none recorded."
