"""Case generation from the committed selection rule."""

from __future__ import annotations

from collections import Counter

from rungbench.causal.instrument.cases import build_world, ceiling_cases, selection


def test_standard_and_generated_sets_follow_the_committed_counts() -> None:
    """40 and 200 cases, stratified exactly as data/case_selection.json says."""
    for name, n in (("standard", 40), ("generated", 200)):
        world = build_world(name)
        assert len(world.cases) == n
        assert Counter(c.tag for c in world.cases) == selection()[name]["tags"]


def test_generation_is_deterministic_and_modules_are_node_disjoint() -> None:
    """The same seed gives the same cases; no two cases share a node."""
    one, two = build_world(), build_world()
    assert one == two
    seen: set[str] = set()
    for case in one.cases:
        nodes = {n for e in case.target + case.mechanism for n in (e.cause, e.effect)}
        assert not nodes & seen
        seen |= nodes


def test_ceiling_draws_only_direct_edges() -> None:
    """The five-case ceiling is drawn from direct-edge cases only."""
    assert {c.tag for c in ceiling_cases(build_world().cases)} == {"direct"}
