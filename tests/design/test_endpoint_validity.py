"""Endpoint validity of E023: every registered endpoint's expected near − far contrast under
the synthetic selectors, and the warnings on primary endpoints that move against the declared
mechanism (src/rungbench/design/endpoint_validity.py)."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest

from rungbench.design.endpoint_validity import (
    NOT_MODELLED,
    endpoint_validity,
    pass_a_profile,
)
from rungbench.design.orders import OrderArray
from rungbench.design.presets import Arm, ArmsDesign, arms_design
from rungbench.errors import InputError

TINY_PROFILE = (0.0, 0.3, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6)
"""g(r) of the tiny design: rank 2 below the catastrophic 0.40, rank 3 above it."""
TINY_ORDERS: dict[str, tuple[OrderArray, OrderArray]] = {
    arm: (np.array([[0, 1], [1, 0]]), np.array([[1, 0], [0, 1]]))
    for arm in ("near_strong", "far_tail")}
"""Two positions; presentation B swaps A's two slots (the cyclic rotation at width 2)."""


def _tiny() -> ArmsDesign:
    """near_strong shows ranks (1, 2), far_tail (1, 3); primacy γ = log 2 (weight 1/2 per
    slot), so every probability below is a small fraction."""
    return dataclasses.replace(
        arms_design(), positions=2, width=2, rotation=1,
        arms=(Arm("near_strong", (1, 2)), Arm("far_tail", (1, 3))),
        primary_contrast=("near_strong", "far_tail"), secondary_contrasts=(),
        diffuse_temperature=1.0, primacy_per_slot=math.log(2), catastrophic_regret=0.40,
        wdl_regret_by_rank=TINY_PROFILE)


def _with_profile(profile: tuple[float, ...]) -> ArmsDesign:
    return dataclasses.replace(arms_design(), wdl_regret_by_rank=profile)


def test_tiny_design_matches_a_hand_computation_for_the_diffuse_selector() -> None:
    """Diffuse (τ = 1, p ∝ 1/rank): near (1, 2) picks rank 1 with 2/3, far (1, 3) with 3/4,
    so WDL regret 1/3·0.3 − 1/4·0.5, catastrophic 0 − 1/4, rank-1 selection 2/3 − 3/4,
    order disagreement (1 − 4/9 − 1/9) − (1 − 9/16 − 1/16), utility regret
    1/3·log 2 − 1/4·log 3."""
    table = endpoint_validity(_tiny(), orders=TINY_ORDERS)
    expected = {
        "wdl_regret": Fraction(1, 3) * Fraction(3, 10) - Fraction(1, 4) * Fraction(1, 2),
        "catastrophic_rate": Fraction(0) - Fraction(1, 4),
        "rank1_selection": Fraction(2, 3) - Fraction(3, 4),
        "order_disagreement": Fraction(4, 9) - Fraction(3, 8)}
    for endpoint, value in expected.items():
        cell = table.cell("near_strong-far_tail", "diffuse", endpoint)
        assert cell.delta == pytest.approx(float(value), abs=1e-12), endpoint
    utility = table.cell("near_strong-far_tail", "diffuse", "utility_regret")
    assert utility.delta == pytest.approx(math.log(2) / 3 - math.log(3) / 4, abs=1e-12)


def test_order_disagreement_pairs_the_two_presentations_by_move_not_by_slot() -> None:
    """Diffuse + primacy (weights 1/rank · (1/2)^slot): near's A order (1, 2) gives 4/5, 1/5
    and B (2, 1) gives 1/2, 1/2, agreement 1/2; far's A (1, 3) gives 6/7, 1/7 and B (3, 1)
    gives 3/5 for rank 1, 2/5 for rank 3, agreement 4/7; the contrast is 1/2 − 3/7."""
    cell = endpoint_validity(_tiny(), orders=TINY_ORDERS).cell(
        "near_strong-far_tail", "diffuse+primacy", "order_disagreement")
    assert (cell.near, cell.far) == (pytest.approx(0.5), pytest.approx(3 / 7))
    assert cell.delta == pytest.approx(1 / 14, abs=1e-12)


def test_each_endpoint_has_a_worse_direction_and_a_verdict() -> None:
    """On the tiny design the diffuse near arm picks rank 1 less (rank1_selection: lower is
    worse, so consistent) yet scores less WDL regret (higher is worse: against); legality,
    latency, tokens and cost have no value and no sign."""
    table = endpoint_validity(_tiny(), orders=TINY_ORDERS)
    rank1 = table.cell("near_strong-far_tail", "diffuse", "rank1_selection")
    wdl = table.cell("near_strong-far_tail", "diffuse", "wdl_regret")
    assert (rank1.sign, rank1.verdict) == (-1, "consistent")
    assert (wdl.sign, wdl.verdict) == (-1, "against")
    for endpoint in NOT_MODELLED:
        cell = table.cell("near_strong-far_tail", "diffuse", endpoint)
        assert (cell.delta, cell.sign, cell.verdict) == (None, None, "not_modelled")
        assert cell.to_json()["contrast"] is None


def test_an_inverse_rank_closed_form_reproduces_the_bundled_sharp_and_diffuse_rows() -> None:
    """Without primacy p(r) = r^(−1/τ) / Σ over the arm's ranks whatever the order, so the
    bundled table's sharp and diffuse rows equal that closed form: Σ p·g, Σ p·[g ≥ 0.40],
    p(1), 1 − Σ p² and Σ p·log r, near − far, on both contrasts."""
    d = arms_design()
    table = endpoint_validity(d)
    g = np.array(d.wdl_regret_by_rank)

    def closed(ranks: tuple[int, ...], tau: float) -> dict[str, float]:
        r = np.array(ranks, dtype=float)
        p = r ** (-1 / tau) / np.sum(r ** (-1 / tau))
        idx = np.array(ranks) - 1
        return {"wdl_regret": float(p @ g[idx]),
                "catastrophic_rate": float(p @ (g[idx] >= d.catastrophic_regret)),
                "rank1_selection": float(p[0]), "order_disagreement": float(1 - p @ p),
                "utility_regret": float(p @ np.log(r))}

    for near, far in (d.primary_contrast, *d.secondary_contrasts):
        for name, tau in (("sharp", d.sharp_temperature), ("diffuse", d.diffuse_temperature)):
            a, b = closed(d.arm(near).ranks, tau), closed(d.arm(far).ranks, tau)
            for endpoint, value in a.items():
                cell = table.cell(f"{near}-{far}", name, endpoint)
                assert cell.delta == pytest.approx(value - b[endpoint], abs=1e-12), \
                    (near, far, name, endpoint)


def test_a_profile_that_hides_the_mechanism_warns() -> None:
    """A linear profile (0.05 per rank): the diffuse near_strong picks more strong-but-wrong
    moves, far_tail fewer but worse ones, so the diffuse primary WDL contrast is negative
    and the primary_endpoint_inconsistent_with_mechanism warning names wdl_regret, the
    diffuse selector and that contrast."""
    linear = tuple(0.05 * r for r in range(10))
    validity = endpoint_validity(_with_profile(linear))
    cell = validity.cell("near_strong-far_tail", "diffuse", "wdl_regret")
    assert cell.delta is not None and cell.delta < 0
    warned = {w.endpoint: w for w in validity.warnings}
    w = warned["wdl_regret"]
    assert w.code == "primary_endpoint_inconsistent_with_mechanism"
    assert (w.selector, w.contrast) == ("diffuse", "near_strong-far_tail")
    assert w.expected_contrast == pytest.approx(cell.delta)
    assert "wdl_regret" in w.message and "diffuse" in w.message
    assert f"{cell.delta:+.4f}" in w.message


def test_a_profile_under_which_near_is_worse_gives_no_warning() -> None:
    """A step profile (every rank but 1 loses 0.45, at or above the catastrophic 0.40): WDL
    regret and the catastrophic rate both become P(miss rank 1) × const, the diffuse near
    arm is worse on both, and no primary endpoint warns."""
    step = (0.0, *[0.45] * 9)
    validity = endpoint_validity(_with_profile(step))
    for endpoint in ("wdl_regret", "catastrophic_rate"):
        cell = validity.cell("near_strong-far_tail", "diffuse", endpoint)
        assert cell.delta is not None and cell.delta > 0 and cell.verdict == "consistent"
    assert validity.warnings == ()
    assert validity.detects_mechanism("near_strong-far_tail", "wdl_regret")


def test_only_registered_primary_endpoints_are_warned_about() -> None:
    """With wdl_regret the only primary, the catastrophic rate's zero contrast raises no
    warning; with both, it raises primary_endpoint_blind_to_mechanism."""
    both = endpoint_validity(arms_design())
    only = endpoint_validity(dataclasses.replace(arms_design(),
                                                 primary_endpoints=("wdl_regret",)))
    assert [w.endpoint for w in only.warnings] == ["wdl_regret"]
    assert [(w.endpoint, w.code) for w in both.warnings][1] == (
        "catastrophic_rate", "primary_endpoint_blind_to_mechanism")
    assert not only.to_json()["endpoints"]["catastrophic_rate"]["primary"]


def test_pass_a_expectations_recompute_the_profile_per_position() -> None:
    """Two positions: g(r) = mean of E_p(1) − E_p(r), and c(r) the share of positions whose
    regret reaches 0.40 (rank 10: 0.5 and 0.3, so 0.4 on average and c = 1/2)."""
    first = [0.9, 0.8, 0.7, 0.6, 0.6, 0.55, 0.55, 0.55, 0.4, 0.4]
    second = [0.5, 0.5, 0.45, 0.4, 0.4, 0.35, 0.3, 0.25, 0.2, 0.2]
    profile = pass_a_profile({"p1": first, "p2": second}, 0.40)
    assert profile.source == "pass_a" and profile.positions == 2
    expected = [((first[0] - a) + (second[0] - b)) / 2 for a, b in zip(first, second,
                                                                      strict=True)]
    assert profile.regret_by_rank == pytest.approx(expected)
    assert profile.catastrophic_by_rank == (0, 0, 0, 0, 0, 0, 0, 0, 0.5, 0.5)
    validity = endpoint_validity(arms_design(), {"p1": first, "p2": second})
    assert validity.to_json()["profile"]["source"] == "pass_a"
    assert "pass_a regret profile" in validity.warnings[0].message


def test_pass_a_expectations_of_the_wrong_length_are_refused_naming_the_position() -> None:
    """Nine expectations (pass A lists ranks 1-10) or one above 1 are refused, naming the
    position key; no positions at all is refused too."""
    with pytest.raises(InputError) as info:
        pass_a_profile({"k7": [0.5] * 9}, 0.40)
    assert info.value.field == "wdl_by_position.k7"
    with pytest.raises(InputError, match="k8"):
        pass_a_profile({"k8": [1.5] + [0.5] * 9}, 0.40)
    with pytest.raises(InputError):
        pass_a_profile({}, 0.40)
