"""Tests for rungbench.causal.scm.witness: same observed joint, different P(y | do x)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from rungbench.causal.scm import mechanisms as mech
from rungbench.causal.scm import oracle
from rungbench.causal.scm.identify import identify
from rungbench.causal.scm.joint import observed_joint
from rungbench.causal.scm.motifs import latent_confounded, motif_catalogue
from rungbench.causal.scm.random_dag import DagSpec, random_world
from rungbench.causal.scm.witness import (
    WITNESS_TOL,
    Witness,
    build_witness,
    ordered_blankets,
    projection,
    threshold_responses,
)
from rungbench.causal.scm.world import Query, Variable, World


def test_latent_confounded_witness_is_the_unconfounded_model() -> None:
    """For X <- L -> Y, X -> Y the witness answers P(y | x) and keeps P(X, Y) exactly."""
    m = latent_confounded(np.random.default_rng(0), "l")
    w = build_witness(m.world, "X", "Y")
    assert w is not None
    assert w.world.latent_names == ()
    assert w.witness_value == pytest.approx(
        oracle.probability(m.world, Query(1, {"Y": 1}, {}, {"X": 1})), abs=1e-12)
    assert w.true_value == pytest.approx(
        oracle.probability(m.world, Query(2, {"Y": 1}, {"X": 1}, {})), abs=1e-12)
    assert np.max(np.abs(observed_joint(w.world).table - observed_joint(m.world).table)) < 1e-12
    assert w.gap > WITNESS_TOL and w.keeps_item


def test_witness_gap_distribution() -> None:
    """Confounders are strong: over 40 draws >= 34 gaps exceed 0.02 and the median is >= 0.10."""
    rng = np.random.default_rng(11)
    gaps = []
    for i in range(40):
        m = latent_confounded(rng, f"g{i}")
        w = build_witness(m.world, "X", "Y")
        assert w is not None
        gaps.append(w.gap)
    assert sum(g > WITNESS_TOL for g in gaps) >= 34
    assert float(np.median(gaps)) >= 0.10


def test_witnesses_keep_the_joint_on_random_worlds() -> None:
    """Every witness built on random worlds with latents reproduces the observed joint."""
    rng = np.random.default_rng(12)
    built = 0
    for i in range(25):
        world = random_world(DagSpec(6, 0.4, 0.34), rng, f"w{i}")
        for x, y in itertools.permutations(world.observed_names, 2):
            w = build_witness(world, x, y)
            if w is None:
                continue
            assert w.joint_max_diff < 1e-12
            # Recomputed here, not trusted from the witness: same observed joint, no latents.
            mine, theirs = observed_joint(world), observed_joint(w.world)
            order = [theirs.names.index(n) for n in mine.names]
            assert np.max(np.abs(np.transpose(theirs.table, order) - mine.table)) < 1e-12
            assert w.world.latent_names == ()
            do = Query(2, {y: 1}, {x: 1}, {})
            assert w.true_value == pytest.approx(oracle.probability(world, do), abs=1e-12)
            assert w.witness_value == pytest.approx(oracle.probability(w.world, do), abs=1e-12)
            built += 1
    assert built > 0


def test_no_witness_when_the_blanket_leaves_the_graph() -> None:
    """A latent confounding two non-adjacent variables has no in-graph latent-free witness."""
    m = next(m for m in motif_catalogue(np.random.default_rng(3)) if m.name == "m_bias")
    blankets = ordered_blankets(m.world)
    # C and X share L1 but there is no edge between them
    assert "X" in blankets["C"] or "C" in blankets["X"]
    assert build_witness(m.world, "X", "Y") is None
    assert identify(m.world, "X", "Y").verdict == "backdoor"


def test_threshold_responses_reproduce_a_cpd() -> None:
    """The comonotone encoding gives exactly the requested P(V=1 | row)."""
    p = np.array([0.1, 0.75, 0.0, 0.4])
    v = Variable("V", ("A", "B"), threshold_responses(p))
    assert v.p_one() == pytest.approx(p, abs=1e-15)


def test_witness_on_a_world_too_large_for_a_dense_joint() -> None:
    """Latent-confounded X, Y beside 20 unrelated roots: the witness (family marginals) keeps
    the gap of the small world."""
    from rungbench.causal.scm import mechanisms as mech
    from rungbench.causal.scm.world import World

    small = latent_confounded(np.random.default_rng(4), "s")
    extra = tuple(Variable(f"R{i:02d}", (), mech.root(0.3 + 0.01 * i)) for i in range(20))
    big = World("big", small.world.variables + extra)
    assert len(big.observed_names) == 22
    w_small = build_witness(small.world, "X", "Y")
    w_big = build_witness(big, "X", "Y")
    assert w_small is not None and w_big is not None
    assert w_big.joint_max_diff < 1e-12
    assert w_big.gap == pytest.approx(w_small.gap, abs=1e-12)


def test_item_is_kept_only_when_the_gap_exceeds_the_tolerance() -> None:
    """keeps_item is gap > WITNESS_TOL: a 0.01 gap is dropped, a 0.03 gap kept."""
    w = latent_confounded(np.random.default_rng(0), "w").world
    assert not Witness(w, 0.50, 0.49, 0.0).keeps_item
    assert Witness(w, 0.50, 0.53, 0.0).keeps_item
    assert Witness(w, 0.50, 0.53, 0.0).gap == pytest.approx(0.03)


def test_projection_follows_latent_chains() -> None:
    """L1 → L2 (both latent), L1 → Z, L2 → X, L2 → Y: X, Y, Z are pairwise bidirected."""
    w = World("p", (
        Variable("L1", (), mech.root(0.5), observed=False),
        Variable("L2", ("L1",), mech.noisy_function(lambda b: b[0], 1, 0.2), observed=False),
        Variable("Z", ("L1",), mech.noisy_function(lambda b: b[0], 1, 0.2)),
        Variable("X", ("L2",), mech.noisy_function(lambda b: b[0], 1, 0.2)),
        Variable("Y", ("L2", "X"), mech.noisy_or([0.5, 0.5], 0.1)),
    ))
    parents, siblings = projection(w)
    assert parents == {"Z": set(), "X": set(), "Y": {"X"}}
    assert siblings == {"Z": {"X", "Y"}, "X": {"Y", "Z"}, "Y": {"X", "Z"}}


def test_witness_that_moves_the_joint_by_1e_6_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """If the saturated world's joint differs by 1e-6 (> JOINT_CHECK), IntegrityError is raised."""
    from rungbench.causal.scm import witness as witness_module
    from rungbench.errors import IntegrityError

    original = witness_module.saturated_world

    def nudged(world: World, joint: object, parents: dict[str, tuple[str, ...]]) -> World:
        alt = original(world, joint, parents)  # type: ignore[arg-type]
        x = alt.var("X")
        p = float(x.p_one()[0]) + 1e-6
        vs = tuple(Variable("X", (), mech.root(p)) if v.name == "X" else v for v in alt.variables)
        return World(alt.world_id, vs)

    monkeypatch.setattr(witness_module, "saturated_world", nudged)
    m = latent_confounded(np.random.default_rng(0), "l")
    with pytest.raises(IntegrityError, match="changes the observed joint"):
        build_witness(m.world, "X", "Y")


def _categorical_latent_confounded() -> World:
    """L (3 states, latent) -> X (3 states), L -> Y (4 states), X -> Y; X copies L with
    probability 0.8 and Y follows L more than X, so the confounding is strong."""
    lat, xs, ys = ("l0", "l1", "l2"), ("x0", "x1", "x2"), ("y0", "y1", "y2", "y3")
    x_resp = mech._mixture([(0.8, (0, 1, 2)), (0.1, (0, 0, 0)), (0.1, (2, 2, 2))])
    # Y's rows: x + 3 lv; Y = lv plus one when x = 2, else lv (a structural equation) w.p. 0.85
    y_table = tuple(min(3, lv + int(x == 2)) for lv in range(3) for x in range(3))
    y_resp = mech._mixture([(0.85, y_table), (0.15, (3,) * 9)])
    return World("cat-latent", (
        Variable("L", (), mech.categorical_root([0.3, 0.3, 0.4]), False, lat),
        Variable("X", ("L",), x_resp, True, xs),
        Variable("Y", ("X", "L"), y_resp, True, ys)))


def test_categorical_witness_keeps_the_joint_and_the_states() -> None:
    """On a categorical latent-confounded world the witness is latent-free, keeps every
    variable's named states, reproduces P(X, Y) to 1e-12, answers P(y | x) and differs from
    the true P(y | do x) by more than the tolerance."""
    world = _categorical_latent_confounded()
    w = build_witness(world, "X", "Y", x_val=2, y_val=3)
    assert w is not None
    assert w.world.latent_names == () and w.world.state_names() == {
        "X": ("x0", "x1", "x2"), "Y": ("y0", "y1", "y2", "y3")}
    assert np.max(np.abs(observed_joint(w.world).table - observed_joint(world).table)) < 1e-12
    assert w.witness_value == pytest.approx(
        oracle.probability(world, Query(1, {"Y": 3}, {}, {"X": 2})), abs=1e-12)
    assert w.true_value == pytest.approx(
        oracle.probability(world, Query(2, {"Y": 3}, {"X": 2}, {})), abs=1e-12)
    assert w.gap > WITNESS_TOL
    assert identify(world, "X", "Y", x_val=2, y_val=3).verdict == "not_identifiable"
