"""Synthetic selectors and coverage/selection aliasing (seed 001, "Falsify the instrument
before measuring the models", "One outcome, two hidden stages")."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rungbench.design.orders import cyclic_counterbalance, independent_shuffles
from rungbench.design.selectors import (
    Selector,
    arm_choice,
    choice_probabilities,
    distractor_contrast,
    simulate_two_stage,
    stage_signature,
)
from rungbench.errors import InputError

NEAR = (1, 2, 3, 4, 5)
FAR = (1, 7, 8, 9, 10)
SHARP, DIFFUSE = Selector("sharp", 0.25), Selector("diffuse", 1.0)


def _cyclic(seed: int) -> tuple[np.ndarray, np.ndarray]:
    return cyclic_counterbalance(200, 5, rng=seed)


def test_diffuse_probabilities_are_inverse_rank() -> None:
    """At τ = 1, exp(−log r) = 1/r: P(rank 1 | ranks 1–5) = 1 / (1 + 1/2 + … + 1/5)."""
    probs = choice_probabilities(np.array([[1, 2, 3, 4, 5]]), DIFFUSE)
    assert probs[0, 0] == pytest.approx(1 / sum(1 / r for r in NEAR))
    assert probs.sum() == pytest.approx(1.0)


def test_primacy_is_an_additive_slot_bias() -> None:
    """With γ the logit of slot s drops by γ·s: equal utilities give weights e^{−γ s}."""
    probs = choice_probabilities(np.array([[1, 1, 1]]), Selector("p", 1.0, math.log(2)))
    assert probs[0].tolist() == pytest.approx([4 / 7, 2 / 7, 1 / 7])


def test_strong_alternatives_hurt_diffuse_more_than_sharp() -> None:
    """near_strong − far_tail anchor-miss contrast: diffuse ≥ 3× sharp, both positive."""
    near, far = ("near_strong", NEAR, _cyclic(1)), ("far_tail", FAR, _cyclic(2))
    sharp = distractor_contrast(near, far, SHARP)
    diffuse = distractor_contrast(near, far, DIFFUSE)
    assert sharp.anchor_miss_delta > 0
    assert diffuse.anchor_miss_delta > 3 * sharp.anchor_miss_delta
    # exact, order-free values without primacy (hand-checkable sums of r^(−1/τ))
    assert diffuse.near.p_anchor == pytest.approx(1 / sum(1 / r for r in NEAR))
    assert diffuse.far.p_anchor == pytest.approx(1 / sum(1 / r for r in FAR))


def test_regret_reported_with_its_own_sign() -> None:
    """Utility regret log(rank): far_tail errors cost more, so diffuse regret Δ is negative."""
    near, far = ("near_strong", NEAR, _cyclic(1)), ("far_tail", FAR, _cyclic(2))
    diffuse = distractor_contrast(near, far, DIFFUSE)
    expected_near = sum(math.log(r) / r for r in NEAR) / sum(1 / r for r in NEAR)
    assert diffuse.near.expected_regret == pytest.approx(expected_near)
    assert diffuse.regret_delta < 0 < distractor_contrast(near, far, SHARP).regret_delta


def test_primacy_does_not_erase_contrast_under_balanced_orders() -> None:
    """With γ = 0.5 and cyclic orders, diffuse still loses the anchor more than sharp."""
    near, far = ("near_strong", NEAR, _cyclic(1)), ("far_tail", FAR, _cyclic(2))
    sharp = distractor_contrast(near, far, Selector("s+p", 0.25, 0.5))
    diffuse = distractor_contrast(near, far, Selector("d+p", 1.0, 0.5))
    assert diffuse.anchor_miss_delta > sharp.anchor_miss_delta > 0
    assert diffuse.anchor_miss_delta > 0.5 * distractor_contrast(near, far,
                                                                 DIFFUSE).anchor_miss_delta


def test_pure_primacy_zero_contrast_only_when_balanced() -> None:
    """A utility-blind primacy selector shows no contrast under cyclic orders, but does
    under order designs that put the anchor in different slots per arm."""
    primacy = Selector("primacy", math.inf, 0.5)
    balanced = distractor_contrast(("n", NEAR, _cyclic(1)), ("f", FAR, _cyclic(2)), primacy)
    assert abs(balanced.anchor_miss_delta) < 1e-12
    last = np.tile([1, 2, 3, 4, 0], (200, 1))
    first = np.tile([0, 1, 2, 3, 4], (200, 1))
    confounded = distractor_contrast(("n", NEAR, [last, last]), ("f", FAR, [first, first]),
                                     primacy)
    assert confounded.anchor_miss_delta > 0.2
    shuffled = distractor_contrast(("n", NEAR, independent_shuffles(200, 5, 3)),
                                   ("f", FAR, independent_shuffles(200, 5, 4)), primacy)
    assert shuffled.anchor_miss_delta != pytest.approx(0.0, abs=1e-9)


def test_arm_without_anchor_raises() -> None:
    """An arm missing rank 1 is refused with an InputError naming the arm."""
    with pytest.raises(InputError, match="rank 1"):
        arm_choice("bad", (2, 3, 4, 5, 6), [np.tile(np.arange(5), (2, 1))], SHARP)


def test_ideas_and_vision_limited_alias() -> None:
    """C = 0.35, S = 0.90 and C = 0.90, S = 0.35 both score 0.315; the ladder separates them."""
    ideas, vision = stage_signature(0.35, 0.90), stage_signature(0.90, 0.35)
    assert ideas.unaided_best_rate == pytest.approx(0.315)
    assert vision.unaided_best_rate == pytest.approx(0.315)
    assert ideas.to_json()["self_shortlist_coverage"] != vision.to_json()[
        "self_shortlist_coverage"]
    assert simulate_two_stage(ideas, 100_000, 0) == pytest.approx(0.315, abs=0.006)


def test_reference_selector_agrees_with_product() -> None:
    """The chess reference SyntheticSelector (read-only) picks the best at rate C × S."""
    from rungbench.chess.reference_agents import SyntheticSelector

    agent = SyntheticSelector(0.35, 0.90)
    rng = np.random.default_rng(5)
    legal = [f"m{i}" for i in range(20)]
    hits = sum(agent.select(rng, agent.shortlist(rng, legal, "m0", 5), "m0") == "m0"
               for _ in range(20_000))
    assert hits / 20_000 == pytest.approx(0.315, abs=0.015)


def test_invalid_selector_inputs() -> None:
    """Non-positive temperatures and probabilities outside [0, 1] raise InputError."""
    with pytest.raises(InputError, match="temperature"):
        Selector("bad", 0.0)
    with pytest.raises(InputError, match="coverage"):
        stage_signature(1.2, 0.5)
