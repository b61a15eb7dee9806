"""Synthetic selectors that falsify an order-and-distractor design before any model runs
(seed 001, "Falsify the instrument before measuring the models", "One outcome, two
hidden stages").

Softmax selection: a candidate of proposer rank r at slot s is chosen with probability

    P(r | list, order) ∝ exp(u(r) / τ − γ · s),   u(r) = −log(r),

so a small temperature τ is a sharp selector, a large one a diffuse selector, and
γ > 0 adds an additive primacy bias toward early slots. Probabilities are exact,
averaged over every registered order. The utilities are controlled inputs, not
claims about any model.

Two-stage aliasing: with best-move coverage C and conditional selection S the
observed best-move rate is C × S, so an ideas-limited system (C = 0.35, S = 0.90)
and a vision-limited one (C = 0.90, S = 0.35) both score 0.315.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from rungbench.design.orders import OrderArray, cyclic_counterbalance
from rungbench.design.presets import ArmsDesign
from rungbench.errors import InputError
from rungbench.stats.paired import as_generator

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Selector:
    """A softmax selector over rank utilities with an optional primacy bias."""

    name: str
    """Label in audit tables (``sharp``, ``diffuse``, ``diffuse+primacy``)."""
    temperature: float
    """Softmax temperature τ on u(rank) = −log(rank); smaller is sharper; ``inf`` ignores
    utility entirely (a selector driven by slot alone)."""
    primacy_per_slot: float = 0.0
    """γ: logit penalty per slot after the first (0 = no order bias)."""

    def __post_init__(self) -> None:
        if math.isnan(self.temperature) or self.temperature <= 0:
            raise InputError(f"temperature must be a positive number, got {self.temperature!r}",
                             field="temperature")
        if not math.isfinite(self.primacy_per_slot):
            raise InputError(f"primacy must be finite, got {self.primacy_per_slot!r}",
                             field="primacy_per_slot")


@dataclass(frozen=True)
class ArmChoice:
    """Exact choice behaviour of one selector on one arm, averaged over its orders."""

    arm: str
    """Arm name."""
    selector: str
    """Selector name."""
    p_anchor: float
    """Mean probability of choosing proposer rank 1."""
    expected_regret: float
    """Mean utility regret u(1) − u(chosen) = log(chosen rank)."""
    p_by_rank: dict[int, float]
    """Mean choice probability of each rank in the arm."""

    def to_json(self) -> dict[str, Any]:
        """Return the arm's choice summary as a JSON-ready mapping."""
        return {"arm": self.arm, "selector": self.selector, "p_anchor": self.p_anchor,
                "expected_regret": self.expected_regret,
                "p_by_rank": {str(k): v for k, v in self.p_by_rank.items()}}


def registered_selectors(d: ArmsDesign) -> list[Selector]:
    """The registered synthetic selectors, plus a utility-blind pure-primacy selector."""
    g = d.primacy_per_slot
    return [Selector("sharp", d.sharp_temperature), Selector("diffuse", d.diffuse_temperature),
            Selector("sharp+primacy", d.sharp_temperature, g),
            Selector("diffuse+primacy", d.diffuse_temperature, g),
            Selector("primacy_only", math.inf, g)]


def arm_orders(d: ArmsDesign) -> dict[str, tuple[OrderArray, OrderArray]]:
    """The registered cyclic counterbalanced orders of every arm (seeded per arm)."""
    return {arm.name: cyclic_counterbalance(d.positions, d.width, rotation=d.rotation,
                                            rng=np.random.default_rng([d.construction_seed, i]))
            for i, arm in enumerate(d.arms)}


def neg_log_rank(ranks: Sequence[int] | npt.NDArray[np.int64]) -> FloatArray:
    """u(rank) = −log(rank): the audit's monotone utility (seed 001)."""
    values = np.asarray(ranks, dtype=np.float64)
    if values.size and values.min() < 1:
        raise InputError(f"ranks start at 1, got {values.min():g}", field="ranks")
    return -np.log(values)


def choice_probabilities(ranks_by_slot: npt.NDArray[np.int64], selector: Selector) -> FloatArray:
    """Exact softmax choice probabilities; ``ranks_by_slot[..., s]`` is the rank at slot s."""
    ranks = np.asarray(ranks_by_slot, dtype=np.int64)
    slots = np.arange(ranks.shape[-1], dtype=np.float64)
    logits = neg_log_rank(ranks) / selector.temperature - selector.primacy_per_slot * slots
    logits -= logits.max(axis=-1, keepdims=True)
    weights = np.exp(logits)
    result: FloatArray = weights / weights.sum(axis=-1, keepdims=True)
    return result


def arm_choice(arm: str, ranks: Sequence[int], presentations: Sequence[OrderArray],
               selector: Selector) -> ArmChoice:
    """Average exact choice behaviour over every (position, presentation) order.

    Order entries index ``sorted(ranks)``: entry 0 is the arm's best rank (the anchor).
    """
    sorted_ranks = np.array(sorted(ranks), dtype=np.int64)
    if sorted_ranks[0] != 1:
        raise InputError(f"arm {arm!r} must hold proposer rank 1, got {list(ranks)!r}",
                         field=f"arms.{arm}.ranks")
    if not presentations:
        raise InputError("need at least one presentation", field="presentations")
    shown = np.concatenate([sorted_ranks[np.asarray(o)] for o in presentations])
    probs = choice_probabilities(shown, selector)
    by_rank = {int(r): float(np.mean(np.sum(probs * (shown == r), axis=1)))
               for r in sorted_ranks}
    regret = float(np.mean(np.sum(probs * np.log(shown), axis=1)))
    return ArmChoice(arm=arm, selector=selector.name, p_anchor=by_rank[1],
                     expected_regret=regret, p_by_rank=by_rank)


@dataclass(frozen=True)
class DistractorContrast:
    """One selector's near-minus-far contrast on anchor choice and utility regret."""

    selector: str
    """Selector name."""
    near: ArmChoice
    """Choice behaviour on the strong-alternative arm."""
    far: ArmChoice
    """Choice behaviour on the weak-alternative arm."""

    @property
    def anchor_miss_delta(self) -> float:
        """P(miss rank 1 | near) − P(miss rank 1 | far): > 0 when strong alternatives hurt."""
        return self.far.p_anchor - self.near.p_anchor

    @property
    def regret_delta(self) -> float:
        """Expected utility regret near − far."""
        return self.near.expected_regret - self.far.expected_regret

    def to_json(self) -> dict[str, Any]:
        """Return the contrast as a JSON-ready mapping."""
        return {"selector": self.selector, "near": self.near.to_json(),
                "far": self.far.to_json(), "anchor_miss_delta": self.anchor_miss_delta,
                "regret_delta": self.regret_delta}


def distractor_contrast(near: tuple[str, Sequence[int], Sequence[OrderArray]],
                        far: tuple[str, Sequence[int], Sequence[OrderArray]],
                        selector: Selector) -> DistractorContrast:
    """The near − far contrast of one selector; each arm is (name, ranks, its orders)."""
    return DistractorContrast(selector=selector.name,
                              near=arm_choice(near[0], near[1], near[2], selector),
                              far=arm_choice(far[0], far[1], far[2], selector))


@dataclass(frozen=True)
class StageSignature:
    """What each arm of the intervention ladder observes under a two-stage selector."""

    coverage: float
    """C: probability that the best move enters the candidate set."""
    conditional_selection: float
    """S: probability of choosing the best move when it is available."""

    @property
    def unaided_best_rate(self) -> float:
        """P(best move selected) = C × S: all a score alone observes."""
        return self.coverage * self.conditional_selection

    def to_json(self) -> dict[str, Any]:
        """Return the per-arm observations as a JSON-ready mapping."""
        return {"coverage": self.coverage, "conditional_selection": self.conditional_selection,
                "unaided_best_rate": self.unaided_best_rate,
                "self_shortlist_coverage": self.coverage,
                "oracle_list_selection": self.conditional_selection}


def stage_signature(coverage: float, conditional_selection: float) -> StageSignature:
    """Return the two-stage signature; raise :class:`InputError` outside [0, 1]."""
    for label, p in (("coverage", coverage), ("conditional_selection", conditional_selection)):
        if not (math.isfinite(p) and 0.0 <= p <= 1.0):
            raise InputError(f"{label} must be in [0, 1], got {p!r}", field=label)
    return StageSignature(coverage, conditional_selection)


def simulate_two_stage(signature: StageSignature, trials: int,
                       rng: np.random.Generator | int) -> float:
    """Monte Carlo best-move rate of the two-stage process (checks C × S independently)."""
    if trials < 1:
        raise InputError(f"trials must be >= 1, got {trials!r}", field="trials")
    gen = as_generator(rng)
    covered = gen.random(trials) < signature.coverage
    chosen = gen.random(trials) < signature.conditional_selection
    return float(np.mean(covered & chosen))
