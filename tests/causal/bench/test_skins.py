"""Tests for rungbench.causal.bench.skins (renaming-only skins and question templates)."""

from __future__ import annotations

import numpy as np

from rungbench.causal.bench.skins import (
    DOMAIN_SKINS,
    SKINS,
    draw_skin,
    renamed_skin,
    render_question,
    swapped_skin,
)


def test_every_skin_pool_is_distinct_and_large_enough() -> None:
    """Each skin holds 16 distinct names; the nonsense skin holds blorp and quix."""
    for pool in SKINS.values():
        assert len(set(pool)) == len(pool) == 16
    assert {"blorp", "quix"} <= set(SKINS["nonsense"])
    assert {"linux", "logistics", "sensors", "physics", "fiction"} <= set(SKINS)


def test_draw_skin_is_a_seeded_bijection() -> None:
    """A skin maps variables one-to-one; the same seed gives the same mapping."""
    names = ["X", "Y", "Z", "L"]
    a = draw_skin("linux", names, np.random.default_rng(3))
    b = draw_skin("linux", names, np.random.default_rng(3))
    assert a == b
    assert len(set(a.mapping.values())) == 4
    assert a.rename_edges([("X", "Y")]) == [(a.rename("X"), a.rename("Y"))]


def test_roles_are_not_tied_to_names() -> None:
    """Across seeds the treatment X gets many different names (no naming shortcut)."""
    seen = {draw_skin("fiction", ["X", "Y"], np.random.default_rng(s)).rename("X")
            for s in range(40)}
    assert len(seen) >= 10


def test_question_lists_events_in_the_given_order() -> None:
    """Event text follows the listing order, not the alphabet."""
    text = render_question("rung3", np.random.default_rng(0), target={"b": 1}, do={"a": 0},
                           evidence={"a": 1, "z": 0}, order=["z", "b", "a"])
    assert "z=0, a=1" in text
    assert "b=1" in text and "a=0" in text


def test_a_skin_swap_takes_another_domain_skin_and_a_renaming_keeps_its_own() -> None:
    """``swapped_skin`` names every variable from another domain skin's pool; ``renamed_skin``
    from the same pool with at least one name changed; both are determined by their rng."""
    names = ["V00", "V01", "V02", "V03"]
    for seed in range(20):
        skin = draw_skin("linux", names, np.random.default_rng(seed))
        swap = swapped_skin(skin, names, np.random.default_rng([seed, 1]))
        assert swap.name in DOMAIN_SKINS and swap.name not in ("linux", "nonsense")
        assert set(swap.mapping.values()) <= set(SKINS[swap.name])
        again = renamed_skin(skin, names, np.random.default_rng([seed, 2]))
        assert again.name == "linux" and dict(again.mapping) != dict(skin.mapping)
        assert set(again.mapping.values()) <= set(SKINS["linux"])
        assert renamed_skin(skin, names, np.random.default_rng([seed, 2])) == again
