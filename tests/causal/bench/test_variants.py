"""Tests for rungbench.causal.bench.variants (matched diagnostic twins, by the exact oracle)."""

from __future__ import annotations

import numpy as np
import pytest

from rungbench.causal.bench.items import TOL, WorldDraw, draw_world, world_items
from rungbench.causal.bench.taxonomy import (
    COLLIDER_SELECTION,
    CONFOUNDING_NEGLECT,
    CORRELATION_AS_CAUSATION,
    MEDIATOR_MISUSE,
    REVERSE_CAUSATION,
    TEMPORAL_ORDER,
)
from rungbench.causal.bench.variants import (
    TWIN_KINDS,
    diagnostic_pairs,
    edge_real_world,
    m_unobserved_world,
    mediator_adjusted,
    reversed_world,
    unconditioned_world,
    z_removed_world,
)
from rungbench.causal.scm import oracle
from rungbench.causal.scm.identify import identify
from rungbench.causal.scm.joint import observed_joint
from rungbench.causal.scm.world import Query, World


def _draw(structure: str, seed: int = 3) -> WorldDraw:
    return draw_world(structure, np.random.default_rng(seed), "w0")


def _p(w: World, target: dict[str, int], do: dict[str, int] | None = None,
       evidence: dict[str, int] | None = None) -> float:
    return oracle.probability(w, Query(2 if do else 1, target, do or {}, evidence or {}))


def test_edge_real_twin_makes_the_association_causal() -> None:
    """On the fork the association differs from the effect; on its twin they are equal."""
    d = _draw("fork")
    assert abs(_p(d.world, {"Y": 1}, {"X": 1}) - _p(d.world, {"Y": 1}, None, {"X": 1})) > TOL
    twin = edge_real_world(d)
    assert ("X", "Y") in twin.edges() and ("Z", "Y") not in twin.edges()
    assert _p(twin, {"Y": 1}, {"X": 1}) == pytest.approx(_p(twin, {"Y": 1}, None, {"X": 1}))


def test_z_removed_twin_keeps_the_effect_and_loses_the_confounding() -> None:
    """Without Z, P(y | x) equals P(y | do x), which equals the parent's P(y | do x)."""
    d = _draw("confounded")
    twin = z_removed_world(d)
    assert twin.names == ("X", "Y")
    for x in (0, 1):
        effect = _p(d.world, {"Y": 1}, {"X": x})
        assert _p(twin, {"Y": 1}, {"X": x}) == pytest.approx(effect, abs=1e-12)
        assert _p(twin, {"Y": 1}, None, {"X": x}) == pytest.approx(effect, abs=1e-12)
    assert _p(twin, {"X": 1}) == pytest.approx(_p(d.world, {"X": 1}), abs=1e-12)


def test_reversed_twin_reverses_every_edge_and_x_no_longer_moves_y() -> None:
    """X → M → Y becomes Y → M → X; then P(Y | do X) = P(Y) while P(Y | X) differs."""
    d = _draw("chain")
    twin = reversed_world(d)
    assert sorted(twin.edges()) == [("M", "X"), ("Y", "M")]
    assert _p(twin, {"Y": 1}, {"X": 1}) == pytest.approx(_p(twin, {"Y": 1}), abs=1e-12)
    assert twin.var("Y").responses == d.world.var("X").responses


def test_unconditioned_twin_drops_the_collider() -> None:
    """The collider C is gone; X and Y stay independent roots with their mechanisms."""
    d = _draw("collider")
    twin = unconditioned_world(d)
    assert set(twin.names) == {"X", "Y"} and twin.edges() == []
    assert _p(twin, {"Y": 1}, {"X": 0}) == pytest.approx(_p(d.world, {"Y": 1}), abs=1e-12)


def test_mediator_adjusted_matches_a_hand_sum_over_the_observed_joint() -> None:
    """Σ_m P(y | x, m) P(m) equals the same sum read off the observed joint table by hand."""
    d = _draw("mediation")
    joint = observed_joint(d.world)

    def pr(event: dict[str, int]) -> float:
        return float(joint.prob(event))

    hand = sum(pr({"X": 1, "M": m, "Y": 1}) / pr({"X": 1, "M": m}) * pr({"M": m})
               for m in (0, 1))
    assert mediator_adjusted(d.world, "X", 1, {"Y": 1}, ("M",)) == pytest.approx(hand)


def test_m_unobserved_twin_is_identified_without_the_mediator() -> None:
    """With M latent, P(y | do x) is still identified, by P(y | x), and equals the truth."""
    d = _draw("mediation")
    twin = m_unobserved_world(d)
    assert twin.latent_names == ("M",)
    found = identify(twin, "X", "Y", x_val=1, y_val=1)
    assert found.estimate == pytest.approx(_p(d.world, {"Y": 1}, {"X": 1}), abs=1e-9)


@pytest.mark.parametrize(("structure", "label", "kinds"), [
    ("fork", CORRELATION_AS_CAUSATION, ["edge_real"]),
    ("confounded", CONFOUNDING_NEGLECT, ["z_removed"]),
    ("latent_confounded", CONFOUNDING_NEGLECT, ["z_removed"]),
    ("chain", REVERSE_CAUSATION, ["reversed"]),
    ("collider", COLLIDER_SELECTION, ["unconditioned"]),
    ("mediation", MEDIATOR_MISUSE, ["m_unobserved"]),
])
def test_each_structure_yields_its_pair(structure: str, label: str, kinds: list[str]) -> None:
    """Some drawn world of each structure yields its label's pair, the twins of the right kind,
    and every kept pair discriminates: the confused value is more than tol from the answer."""
    found = []
    for seed in range(12):
        d = _draw(structure, seed)
        raws = world_items(d, np.random.default_rng(seed + 100))
        for p in diagnostic_pairs(d, raws):
            if p.label != label:
                continue
            found.append(p)
            assert [t.kind for t in p.twins] == kinds
            assert all(TWIN_KINDS[t.kind] == label for t in p.twins)
            item = next(r for r in raws if r.key == p.item_key)
            confused = p.confused or p.twins[0].confused
            answer = item.value if p.confused else p.twins[0].item.value
            assert confused and answer is not None
            assert all(abs(c - answer) > TOL for c in confused)
    assert found


def test_listing_order_pair_only_where_reversal_changes_the_class() -> None:
    """A collider's reversal leaves its equivalence class (pair kept); a chain's does not."""
    def order_pairs(structure: str) -> list[str]:
        d = _draw(structure)
        return [p.label for p in diagnostic_pairs(d, world_items(d, np.random.default_rng(1)))
                if p.label == TEMPORAL_ORDER]
    assert order_pairs("collider") == [TEMPORAL_ORDER]
    assert order_pairs("chain") == []


def test_every_twin_kind_names_a_twin_label() -> None:
    """The twin kinds cover the six twin-licensed labels and no other."""
    assert set(TWIN_KINDS.values()) == {CORRELATION_AS_CAUSATION, REVERSE_CAUSATION,
                                        CONFOUNDING_NEGLECT, COLLIDER_SELECTION,
                                        MEDIATOR_MISUSE, TEMPORAL_ORDER}
    assert len(TWIN_KINDS) == 7
