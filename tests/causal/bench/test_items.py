"""Tests for rungbench.causal.bench.items (gold values from the oracle, witnesses, bounds)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from rungbench.causal.bench.items import (
    TOL,
    couplings,
    draw_world,
    pn_witness,
    tian_pearl_pn_bounds,
    world_items,
)
from rungbench.causal.scm import oracle
from rungbench.causal.scm.joint import observed_joint
from rungbench.causal.scm.motifs import MOTIFS
from rungbench.causal.scm.world import Query, World


@pytest.mark.parametrize("structure", [*MOTIFS, "random_dag"])
def test_items_carry_oracle_values(structure: str) -> None:
    """Every identifiable numeric item's value is the oracle's value of its query."""
    rng = np.random.default_rng(11)
    d = draw_world(structure, rng, "w1")
    items = world_items(d, rng)
    assert {"exact_r1", "exact_r2"} <= {i.key for i in items}
    for item in items:
        if item.value is not None and item.query is not None and item.template != "mediation":
            assert item.value == pytest.approx(oracle.probability(d.world, item.query), abs=1e-12)
        if not item.identifiable:
            assert item.witness is not None and item.witness_gap is not None
            assert item.witness_gap > TOL


def test_latent_confounding_gives_witnessed_non_id_identification() -> None:
    """latent_confounded worlds yield a not_identifiable identification item with a witness."""
    found = 0
    for seed in range(5):
        rng = np.random.default_rng(seed)
        items = world_items(draw_world("latent_confounded", rng, "w"), rng)
        ident = [i for i in items if i.key == "ident"]
        found += sum(1 for i in ident if not i.identifiable)
    assert found >= 3


def test_couplings_preserve_observed_joint_but_move_pn() -> None:
    """Coupling witnesses keep P(Y=1 | parents) per row, so the observed joint is unchanged."""
    rng = np.random.default_rng(5)
    d = draw_world("confounded", rng, "w")
    y = d.world.var(d.outcome)
    for responses in couplings(y):
        p = sum(r.p * np.array(r.table) for r in responses)
        assert np.allclose(p, y.p_one(), atol=1e-12)
    q = Query(3, {d.outcome: 0}, {d.treatment: 0}, {d.treatment: 1, d.outcome: 1})
    truth = oracle.probability(d.world, q)
    wit = pn_witness(d.world, d.outcome, q, truth)
    assert wit is not None
    assert np.allclose(observed_joint(wit[0]).table, observed_joint(d.world).table, atol=1e-12)
    assert abs(oracle.probability(wit[0], q) - truth) == pytest.approx(wit[1])


def test_tian_pearl_bounds_known_answer() -> None:
    """Hand-computed: P(y)=.5, P(y_x')=.3, P(x,y)=.4, P(x',y')=.3 → PN in [0.5, 1.0]."""
    lo, hi = tian_pearl_pn_bounds(0.5, 0.3, 0.4, 0.3)
    assert lo == pytest.approx(0.5)
    assert hi == pytest.approx(1.0)
    lo, hi = tian_pearl_pn_bounds(0.5, 0.45, 0.4, 0.3)
    assert lo == pytest.approx(0.125)
    assert hi == pytest.approx(0.625)


def test_bounds_items_contain_true_pn() -> None:
    """Every bounds item brackets the oracle's probability of necessity."""
    for seed in range(6):
        rng = np.random.default_rng(seed)
        d = draw_world("mediation", rng, "w")
        for item in world_items(d, rng):
            if item.bounds is not None and item.query is not None:
                v = oracle.probability(d.world, item.query)
                assert item.bounds[0] - 1e-9 <= v <= item.bounds[1] + 1e-9


def test_decision_item_losses_are_exact() -> None:
    """Each action's expected loss is 10·P(Y=1 | do(a)) + cost, leave-alone uses P(Y=1)."""
    rng = np.random.default_rng(2)
    d = draw_world("confounded", rng, "w")
    items = world_items(d, rng)
    decide = [i for i in items if i.key == "decide"]
    assert decide, "a confounded world with strong effects yields a decision item"
    y = d.outcome
    for a in decide[0].actions:
        if a.variable is None:
            p = oracle.probability(d.world, Query(1, {y: 1}))
            assert a.cost == 0.0
        else:
            p = oracle.probability(d.world, Query(2, {y: 1}, {a.variable: a.value}, {}))
        assert a.expected_loss == pytest.approx(10 * p + a.cost, abs=1e-12)
    losses = sorted(a.expected_loss for a in decide[0].actions)
    assert losses[1] - losses[0] >= 0.05


def _joint_probs(world: World) -> dict[tuple[tuple[str, int], ...], float]:
    """Every cell of the observed joint keyed by its (name, value) event, order-free."""
    joint = observed_joint(world)
    names = sorted(joint.names)
    return {
        tuple(zip(names, cell, strict=True)): joint.prob(dict(zip(names, cell, strict=True)))
        for cell in itertools.product((0, 1), repeat=len(names))
    }


@pytest.mark.parametrize("structure", ["latent_confounded", "front_door", "chain",
                                       "confounded", "mediation", "m_bias", "random_dag"])
def test_every_non_id_item_is_proved_by_its_witness(structure: str) -> None:
    """Each non-ID item's witness has the same observed joint and an answer more than tol away."""
    proved = 0
    for seed in range(8):
        rng = np.random.default_rng(seed)
        d = draw_world(structure, rng, "w")
        for item in world_items(d, rng):
            if item.identifiable:
                continue
            assert item.witness is not None and item.query is not None and item.value is None
            base, alt = _joint_probs(d.world), _joint_probs(item.witness)
            assert base.keys() == alt.keys()
            assert max(abs(base[k] - alt[k]) for k in base) <= 1e-9
            truth = oracle.probability(d.world, item.query)
            gap = abs(oracle.probability(item.witness, item.query) - truth)
            assert gap == pytest.approx(item.witness_gap, abs=1e-9)
            assert gap > TOL
            proved += 1
    assert proved > 0


def test_mediation_items_follow_the_mediation_formula() -> None:
    """Unconfounded X → M → Y, X → Y: nde_part = Σ_m P(y | X=1, m) P(m | X=0) and nie_part
    = Σ_m P(y | X=0, m) P(m | X=1) (Pearl 2001 mediation formula, from rung-1 values)."""
    rng = np.random.default_rng(11)
    d = draw_world("mediation", rng, "w1")
    items = {i.key: i for i in world_items(d, rng)}
    w = d.world

    def formula(outer: int, inner: int) -> float:
        return sum(oracle.probability(w, Query(1, {"Y": 1}, {}, {"X": outer, "M": m}))
                   * oracle.probability(w, Query(1, {"M": m}, {}, {"X": inner})) for m in (0, 1))

    assert items["nde_part"].value == pytest.approx(formula(1, 0), abs=1e-12)
    assert items["nie_part"].value == pytest.approx(formula(0, 1), abs=1e-12)
    assert abs(formula(1, 0) - formula(1, 1)) > 1e-6


def test_identifiable_pn_items_have_bounds_within_tolerance() -> None:
    """A cf_pn item is identifiable only when its Tian–Pearl bounds are no wider than tol."""
    checked = 0
    for structure in ("chain", "confounded", "mediation", "random_dag", "and_interaction"):
        for seed in range(6):
            rng = np.random.default_rng(seed)
            items = {i.key: i for i in world_items(draw_world(structure, rng, "w"), rng)}
            pn = items.get("cf_pn")
            if pn is None or not pn.identifiable:
                continue
            bounds = items["cf_bounds"].bounds
            assert bounds is not None and bounds[1] - bounds[0] <= TOL
            assert bounds[0] - 1e-9 <= (pn.value or 0.0) <= bounds[1] + 1e-9
            checked += 1
    assert checked >= 1


def test_decision_items_never_keep_a_near_tie_between_the_two_best_actions() -> None:
    """Across many worlds, every kept decision item's two best losses differ by >= 0.05."""
    from rungbench.causal.bench.items import MIN_DECISION_MARGIN, decision_item

    kept = 0
    for seed in range(60):
        rng = np.random.default_rng(seed)
        d = draw_world("random_dag" if seed % 2 else "mediation", rng, "w")
        item = decision_item(d, rng)
        if item is None:
            continue
        losses = sorted(a.expected_loss for a in item.actions)
        assert losses[1] - losses[0] >= MIN_DECISION_MARGIN
        kept += 1
    assert kept >= 10


def test_factual_cell_is_never_rarer_than_min_cell() -> None:
    """X ~ B(0.99), Y := X: the factual cell is always (1, 1); (0, 0) has mass 0.01 < 0.02."""
    from rungbench.causal.bench.items import _pick_factual
    from rungbench.causal.scm import mechanisms as mech
    from rungbench.causal.scm.world import Response, Variable

    w = World("f", (Variable("X", (), mech.root(0.99)),
                    Variable("Y", ("X",), (Response(1.0, (0, 1)),))))
    for seed in range(20):
        assert _pick_factual(w, "X", "Y", np.random.default_rng(seed), {}) == (1, 1)


def test_clamp_unit_clamps_rounding_and_refuses_real_excursions() -> None:
    """1 + 1e-12 clamps to 1 and -1e-12 to 0; 1.01 is an IntegrityError, None passes through."""
    from rungbench.causal.bench.items import clamp_unit
    from rungbench.errors import IntegrityError

    assert clamp_unit(1.0 + 1e-12) == 1.0
    assert clamp_unit(-1e-12) == 0.0
    assert clamp_unit(None) is None
    with pytest.raises(IntegrityError):
        clamp_unit(1.01)


def test_identified_estimate_disagreeing_with_the_oracle_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An identification estimate 0.01 away from the do-oracle raises IntegrityError."""
    from dataclasses import replace

    from rungbench.causal.bench import items as items_module
    from rungbench.causal.scm.identify import identify as real
    from rungbench.errors import IntegrityError

    def off(*args: object, **kwargs: object) -> object:
        result = real(*args, **kwargs)  # type: ignore[arg-type]
        assert result.estimate is not None
        return replace(result, estimate=result.estimate + 0.01)

    monkeypatch.setattr(items_module, "identify", off)
    rng = np.random.default_rng(0)
    d = draw_world("confounded", rng, "w")
    with pytest.raises(IntegrityError, match="differs from the oracle"):
        items_module.identification_item(d, rng)


def test_antitone_coupling_flips_the_treatment_rows() -> None:
    """Parents (A, X), treatment X: rows with X = 1 read 1[U > 1 − p]; tables derived by hand."""
    from rungbench.causal.bench.items import threshold_coupling
    from rungbench.causal.scm.world import Response, Variable

    p = [0.2, 0.6, 0.7, 0.9]  # rows: A + 2X
    v = Variable("V", ("A", "X"), threshold_coupling(p, frozenset()))
    antitone = couplings(v, "X")[1]
    expected = [(0.1, (1, 1, 0, 0)), (0.1, (1, 1, 0, 1)), (0.1, (0, 1, 0, 1)),
                (0.3, (0, 1, 1, 1)), (0.4, (0, 0, 1, 1))]
    assert [r.table for r in antitone] == [t for _, t in expected]
    assert [r.p for r in antitone] == pytest.approx([q for q, _ in expected])
    assert isinstance(antitone[0], Response)


def test_exact_counterfactual_intervenes_against_the_factual_value() -> None:
    """Every exact_r3 item sets X to the opposite of its factual value (P(y_{x'} | x, y))."""
    seen = 0
    for structure in ("chain", "confounded", "fork", "mediation", "random_dag"):
        rng = np.random.default_rng(3)
        d = draw_world(structure, rng, "w")
        for item in world_items(d, rng):
            if item.key == "exact_r3":
                assert item.query is not None
                x = d.treatment
                assert item.query.do[x] == 1 - item.query.evidence[x]
                seen += 1
    assert seen >= 3
