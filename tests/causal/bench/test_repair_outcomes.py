"""Tests for causal.bench.repair_outcomes: question 3's per-case numbers on a hand-made incident
world, every expected loss, success probability and dollar figure computed by hand."""

from __future__ import annotations

import pytest

from rungbench.agents.spec import Pricing
from rungbench.causal.bench.incidents import LEAVE_ALONE, OUTAGE, RESTART, Diagnosis, IncidentWorld
from rungbench.causal.bench.repair_outcomes import (
    NO_PRICES,
    RepairCase,
    chosen_repair,
    expected_repair_loss,
    registered_prices,
    repair_case,
    run_outcomes,
    sandbox_success,
    usd_of,
)
from rungbench.causal.scm import mechanisms
from rungbench.causal.scm.world import Variable, World
from rungbench.errors import InputError


def hand_world() -> IncidentWorld:
    """Faults f0 (prior 0.2), f1 (0.1); s0 = f0 exactly; the outage a *noisy* OR of the faults
    (link strengths 0.9 and 0.5, no leak), so repair success is a probability, not a bit."""
    world = World("hand", (
        Variable("f0", (), mechanisms.root(0.2)),
        Variable("f1", (), mechanisms.root(0.1)),
        Variable("s0", ("f0",), mechanisms.noisy_or([1.0], 0.0)),
        Variable(OUTAGE, ("f0", "f1"), mechanisms.noisy_or([0.9, 0.5], 0.0)),
    ))
    return IncidentWorld(world=world, faults=("f0", "f1"), symptoms=("s0",),
                         tool_of={"s0": "logs"}, probe_cost={"s0": 0.5},
                         repair_cost={"f0": 1.0, "f1": 2.0}, restart_cost=0.3,
                         joint={"f0+f1": ("f0", "f1")})


# P(F = onehot(h), outage = 1) = prior(h) × P(outage | do(h)):
#   f0 alone 0.2·0.9 · 0.9 = 0.162; f1 alone 0.8·0.1 · 0.5 = 0.04; both 0.2·0.1 · 0.95 = 0.019.
JOINT = {"f0": 0.162, "f1": 0.04, "f0+f1": 0.019}
TOTAL = sum(JOINT.values())  # 0.221


def test_expected_loss_of_each_repair_matches_the_hand_computation() -> None:
    """E[L(a) | outage] = cost(a) + 10 Σ_h P(h | outage) P(outage | do(h, a)), by hand."""
    d = Diagnosis(hand_world(), {OUTAGE: 1})
    by_hand = {
        "repair:f0": 1.0 + 10 * (JOINT["f1"] * 0.5 + JOINT["f0+f1"] * 0.5) / TOTAL,  # 2.334842
        "repair:f1": 2.0 + 10 * (JOINT["f0"] * 0.9 + JOINT["f0+f1"] * 0.9) / TOTAL,  # 9.371041
        LEAVE_ALONE: 10 * (JOINT["f0"] * 0.9 + JOINT["f1"] * 0.5 + JOINT["f0+f1"] * 0.95)
        / TOTAL,  # 8.319005
    }
    for action, value in by_hand.items():
        assert expected_repair_loss(d, action) == pytest.approx(value, abs=1e-12)
    assert expected_repair_loss(d, "repair:f0") == pytest.approx(2.334842, abs=1e-6)


def test_delivered_evidence_changes_the_loss() -> None:
    """With s0 = 1 delivered, f1 alone is ruled out: E[L(repair:f0)] = 1 + 10·0.019·0.5/0.181."""
    d = Diagnosis(hand_world(), {OUTAGE: 1, "s0": 1})
    assert expected_repair_loss(d, "repair:f0") == pytest.approx(
        1.0 + 10 * 0.019 * 0.5 / 0.181, abs=1e-12)


def test_sandbox_success_is_the_exact_interventional_probability() -> None:
    """Success = 1 − P(outage | do(true cause, repair)): by hand from the noisy-OR strengths."""
    iw = hand_world()
    assert sandbox_success(iw, "f0", "repair:f0") == 1.0
    assert sandbox_success(iw, "f0", "repair:f1") == pytest.approx(0.1)
    assert sandbox_success(iw, "f0+f1", "repair:f0") == pytest.approx(0.5)
    assert sandbox_success(iw, "f0+f1", "repair:f1") == pytest.approx(0.1)
    assert sandbox_success(iw, "f0+f1", LEAVE_ALONE) == pytest.approx(0.05)
    assert sandbox_success(iw, "f0+f1", RESTART) == pytest.approx(0.05)  # fixes no fault


def test_an_unknown_truth_or_repair_is_refused() -> None:
    """A true cause outside H, or a repair of no fault, is an InputError naming the field."""
    iw = hand_world()
    with pytest.raises(InputError, match="true_cause"):
        sandbox_success(iw, "f7", "repair:f0")
    with pytest.raises(InputError, match="action"):
        sandbox_success(iw, "f0", "repair:f7")
    with pytest.raises(InputError, match="not on the repair menu"):
        expected_repair_loss(Diagnosis(iw, {OUTAGE: 1}), "repair:f7")


def test_no_repair_named_is_leave_alone() -> None:
    """An abstention (no action) or an off-menu action applies nothing: leave alone."""
    d = Diagnosis(hand_world(), {OUTAGE: 1})
    assert chosen_repair(d, None) == LEAVE_ALONE
    assert chosen_repair(d, "repair:f9") == LEAVE_ALONE
    assert chosen_repair(d, "repair:f1") == "repair:f1"
    case = repair_case("c", "w", d, "f0", None, (10, 2))
    assert (case.action, case.success) == (LEAVE_ALONE, pytest.approx(0.1))
    assert case.expected_loss == pytest.approx(8.319005, abs=1e-6)


def test_dollars_are_tokens_times_the_registered_prices() -> None:
    """1M prompt tokens at $0.15/M plus 200k completion tokens at $0.60/M is $0.27."""
    case = RepairCase("c", "w", "repair:f0", 2.0, 1.0, 1_000_000, 200_000, 0.0)
    assert usd_of(case, Pricing(0.15, 0.60)) == pytest.approx(0.27)


def test_run_outcomes_by_hand() -> None:
    """Two incidents (loss 2 and 4, success 1 and 0, $0.27 each): mean loss 3, success 0.5,
    $0.54, loss per $ 6/0.54, success per $ 1/0.54."""
    cases = [RepairCase("a", "w0", "repair:f0", 2.0, 1.0, 1_000_000, 200_000, 0.5),
             RepairCase("b", "w1", "repair:f1", 4.0, 0.0, 1_000_000, 200_000, 0.0)]
    out = run_outcomes(cases, Pricing(0.15, 0.60))
    assert (out["n"], out["mean_expected_loss"], out["success_rate"]) == (2, 3.0, 0.5)
    assert out["usd"] == pytest.approx(0.54)
    assert out["usd_per_incident"] == pytest.approx(0.27)
    assert out["loss_per_usd"] == pytest.approx(6 / 0.54)
    assert out["success_per_usd"] == pytest.approx(1 / 0.54)
    assert out["mean_experiment_spent"] == 0.25


def test_missing_prices_give_no_prices_never_zero_dollars() -> None:
    """Without registered prices every dollar figure reads no_prices, not 0."""
    cases = [RepairCase("a", "w0", "repair:f0", 2.0, 1.0, 500, 50, 0.0)]
    out = run_outcomes(cases, None)
    for key in ("prices", "usd", "usd_per_incident", "loss_per_usd", "success_per_usd"):
        assert out[key] == NO_PRICES
    assert out["mean_expected_loss"] == 2.0


def test_registered_prices_are_read_from_the_manifest_description() -> None:
    """Absent, malformed or all-zero prices are no registered prices; one nonzero price is."""
    assert registered_prices({}) is None
    assert registered_prices({"pricing": {"usd_per_mtok_in": 0.0, "usd_per_mtok_out": 0.0}}) \
        is None
    assert registered_prices({"pricing": {"usd_per_mtok_in": -1, "usd_per_mtok_out": 1}}) is None
    assert registered_prices({"pricing": {"usd_per_mtok_in": 0.0}}) is None
    assert registered_prices({"pricing": {"usd_per_mtok_in": 0.0, "usd_per_mtok_out": 0.6}}) \
        == Pricing(0.0, 0.6)
