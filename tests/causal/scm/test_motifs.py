"""Tests for rungbench.causal.scm.motifs: each motif has the structure its name promises."""

from __future__ import annotations

import numpy as np
import pytest

from rungbench.causal.scm import oracle
from rungbench.causal.scm.identify import is_backdoor_set
from rungbench.causal.scm.motifs import MOTIFS, build_motif, motif_catalogue
from rungbench.causal.scm.world import Query
from rungbench.errors import InputError

# (edges parent -> child, latent variables, treatment, outcome) for every motif kind.
STRUCTURE: dict[str, tuple[set[tuple[str, str]], set[str], str, str]] = {
    "chain": ({("X", "M"), ("M", "Y")}, set(), "X", "Y"),
    "chain_reversed": ({("X", "M"), ("M", "Y")}, set(), "Y", "X"),
    "fork": ({("Z", "X"), ("Z", "Y")}, set(), "X", "Y"),
    "collider": ({("X", "C"), ("Y", "C")}, set(), "X", "Y"),
    "selection": ({("X", "C"), ("Y", "C")}, set(), "X", "Y"),
    "confounded": ({("Z", "X"), ("Z", "Y"), ("X", "Y")}, set(), "X", "Y"),
    "confounded_reversed": ({("Z", "X"), ("Z", "Y"), ("X", "Y")}, set(), "Y", "X"),
    "latent_confounded": ({("L", "X"), ("L", "Y"), ("X", "Y")}, {"L"}, "X", "Y"),
    "latent_confounded_reversed": ({("L", "X"), ("L", "Y"), ("X", "Y")}, {"L"}, "Y", "X"),
    "mediation": ({("X", "M"), ("X", "Y"), ("M", "Y")}, set(), "X", "Y"),
    "and_interaction": ({("X", "Y"), ("W", "Y")}, set(), "X", "Y"),
    "front_door": ({("L", "X"), ("L", "Y"), ("X", "M"), ("M", "Y")}, {"L"}, "X", "Y"),
    "m_bias": ({("L1", "X"), ("L1", "C"), ("L2", "C"), ("L2", "Y"), ("X", "Y")},
               {"L1", "L2"}, "X", "Y"),
    "xor": ({("X", "Y"), ("W", "Y")}, set(), "X", "Y"),
}


def test_catalogue_covers_every_seed_family() -> None:
    """All 14 kinds are registered, including the seed's reversed-query variants."""
    assert set(MOTIFS) == set(STRUCTURE)


@pytest.mark.parametrize("kind", sorted(STRUCTURE))
def test_motif_has_its_edges_latents_and_roles(kind: str) -> None:
    """Each motif's graph, latent set and (treatment, outcome) are exactly the textbook ones."""
    edges, latents, x, y = STRUCTURE[kind]
    m = build_motif(kind, np.random.default_rng(0), "w")
    assert m.name == kind
    assert set(m.world.edges()) == edges
    assert set(m.world.latent_names) == latents
    assert (m.treatment, m.outcome) == (x, y)


def test_selection_conditions_on_the_collider() -> None:
    """Selection is the collider with every item conditioned on C = 1, which makes X and Y
    dependent: P(Y=1 | X=1, C=1) != P(Y=1 | C=1) while P(Y=1 | X=1) = P(Y=1)."""
    m = build_motif("selection", np.random.default_rng(1), "s")
    assert dict(m.condition) == {"C": 1}
    w = m.world
    unconditioned = (oracle.probability(w, Query(1, {"Y": 1}, {}, {"X": 1})),
                     oracle.probability(w, Query(1, {"Y": 1}, {}, {})))
    assert unconditioned[0] == pytest.approx(unconditioned[1], abs=1e-12)
    selected = (oracle.probability(w, Query(1, {"Y": 1}, {}, {"X": 1, "C": 1})),
                oracle.probability(w, Query(1, {"Y": 1}, {}, {"C": 1})))
    assert abs(selected[0] - selected[1]) > 0.01


def test_m_bias_adjusting_for_the_collider_is_invalid() -> None:
    """In M-bias the empty set is a back-door set and {C} is not (it opens L1 -> C <- L2)."""
    w = build_motif("m_bias", np.random.default_rng(2), "m").world
    assert is_backdoor_set(w, "X", "Y", ())
    assert not is_backdoor_set(w, "X", "Y", ("C",))


def test_confounders_are_strong_enough_to_matter() -> None:
    """In the latent-confounded motif P(y | x) and P(y | do x) differ by more than 0.02."""
    rng = np.random.default_rng(3)
    for i in range(10):
        w = build_motif("latent_confounded", rng, f"c{i}").world
        seen = oracle.probability(w, Query(1, {"Y": 1}, {}, {"X": 1}))
        done = oracle.probability(w, Query(2, {"Y": 1}, {"X": 1}, {}))
        assert abs(seen - done) > 0.02


def test_xor_mechanism_is_exact() -> None:
    """Y := X XOR W with fair roots: one deterministic response table."""
    y = build_motif("xor", np.random.default_rng(4), "x").world.var("Y")
    assert [(r.p, r.table) for r in y.responses] == [(1.0, (0, 1, 1, 0))]


def test_catalogue_ids_and_seed_determinism() -> None:
    """The catalogue numbers worlds {prefix}0000… and the same seed draws the same worlds."""
    one = motif_catalogue(np.random.default_rng(5), repeats=2, prefix="vm")
    two = motif_catalogue(np.random.default_rng(5), repeats=2, prefix="vm")
    assert [m.world.world_id for m in one] == [f"vm{i:04d}" for i in range(28)]
    assert one == two
    assert one != motif_catalogue(np.random.default_rng(6), repeats=2, prefix="vm")


def test_unknown_motif_is_an_input_error() -> None:
    """An unknown kind raises InputError on the motif field."""
    with pytest.raises(InputError) as info:
        build_motif("diamond", np.random.default_rng(0), "d")
    assert info.value.field == "motif"


def test_categorical_latent_confounded_world() -> None:
    """The categorical latent-confounded motif: L latent, X and Y observed, each of 2-4
    states named s0…; edges L→X, L→Y, X→Y; identify refuses a value with a witness."""
    from rungbench.causal.scm.identify import identify
    from rungbench.causal.scm.motifs import categorical_latent_confounded

    rng = np.random.default_rng(8)
    cards: set[int] = set()
    for i in range(10):
        m = categorical_latent_confounded(rng, f"cl{i}")
        w = m.world
        assert (m.treatment, m.outcome) == ("X", "Y") and w.latent_names == ("L",)
        assert sorted(w.edges()) == [("L", "X"), ("L", "Y"), ("X", "Y")]
        for v in w.variables:
            assert 2 <= v.card <= 4 and v.states == tuple(f"s{s}" for s in range(v.card))
            assert np.allclose(v.cpd().sum(axis=0), 1.0, atol=1e-12)
            cards.add(v.card)
        result = identify(w, "X", "Y", x_val=w.card("X") - 1, y_val=w.card("Y") - 1)
        assert result.verdict == "not_identifiable" and result.estimate is None
    assert cards == {2, 3, 4}


def test_categorical_motif_bad_state_range_is_an_input_error() -> None:
    """A state range below 2 is an InputError on ``states``."""
    from rungbench.causal.scm.motifs import categorical_latent_confounded

    with pytest.raises(InputError) as info:
        categorical_latent_confounded(np.random.default_rng(0), "bad", states=(1, 3))
    assert info.value.field == "states"
