"""Endpoint validity of E023: what every registered endpoint is expected to show under
synthetic selectors that have the declared mechanism by construction (seed 001, "Falsify
the instrument before measuring the models"; "Outcomes that can prove us wrong": "If
near_strong does not worsen conditional regret relative to far_tail, E023 does not support
the declared distractor-strength mechanism").

The declared mechanism (:data:`MECHANISM`): strong nearby alternatives hurt a diffuse
selector, so on the primary contrast the near arm is worse than the far arm, more for the
diffuse selector than for the sharp one. For every selector of
:func:`~rungbench.design.selectors.registered_selectors`, every registered (near, far)
contrast and every E023 endpoint, the expected near − far contrast is computed exactly (no
simulation) from the softmax choice probabilities p over the arm's cyclic orders::

    wdl_regret          Σ_r p(r) · g(r)              g(r): WDL regret of pass A rank r
    catastrophic_rate   Σ_r p(r) · c(r)              c(r): share of positions with g(r) ≥ t
    rank1_selection     p(1)
    order_disagreement  1 − Σ_m p_A(m) · p_B(m)      presentations A and B, choices
                                                     independent given the orders
    utility_regret      Σ_r p(r) · log r             the selectors' own −log(rank) regret

each averaged over positions (and, but for order_disagreement, over both presentations);
t is ``[analysis] catastrophic_regret``. Legality, latency, tokens and cost are stated as
not modelled: a softmax over ranks answers legally and costs nothing.

Each endpoint has a declared worse direction (:data:`WORSE`). A primary endpoint
(``[analysis] primary_endpoints``) whose diffuse primary contrast lies in the better
direction is warned about (``primary_endpoint_inconsistent_with_mechanism``): the registered
primary test would count a selector that has the mechanism as evidence against it. A zero
contrast (``primary_endpoint_blind_to_mechanism``) and an endpoint the selectors do not
model (``primary_endpoint_not_modelled``) are warned about too. Warnings, not failed checks:
they say what a primary result can mean, not that the design is broken.

The regret profile g is the registered ``[selectors] wdl_regret_by_rank`` (a controlled
input) until positions are bound; then pass A's WDL expectations E, known from the label
stage before any model call, give g_p(r) = E_p(1) − E_p(r) per position, averaged over
positions, and c(r) is the share of positions whose g_p(r) reaches t. A utility-only
selector's choice probabilities do not depend on the position, so for sharp and diffuse the
averaged profile gives the exact position-averaged endpoint.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from rungbench.design.orders import OrderArray
from rungbench.design.preset_models import PASS_A_DEPTH
from rungbench.design.presets import ArmsDesign
from rungbench.design.selectors import (
    FloatArray,
    Selector,
    arm_orders,
    choice_probabilities,
    registered_selectors,
)
from rungbench.errors import InputError

Worse = Literal["higher", "lower"]
"""Which direction of an endpoint is worse for the chooser."""
Verdict = Literal["consistent", "against", "null", "not_modelled"]
"""How an expected near − far contrast relates to the mechanism: in the worse direction,
in the better one, exactly zero, or not computable from the selectors."""
ProfileSource = Literal["registered", "pass_a"]
"""Where the regret profile came from: the preset, or the bound positions' pass A."""

MECHANISM = ("strong nearby alternatives hurt a diffuse selector: on the primary contrast "
             "the near arm is worse than the far arm, more for diffuse than for sharp")
"""The mechanism E023 declares (seed 001, "Hold the anchor and width fixed")."""
MODELLED: tuple[str, ...] = ("wdl_regret", "catastrophic_rate", "rank1_selection",
                             "order_disagreement", "utility_regret")
"""Endpoints the synthetic selectors determine (``utility_regret`` is the audit's own)."""
NOT_MODELLED: tuple[str, ...] = ("legality", "latency", "tokens", "cost")
"""E023 endpoints a softmax over ranks says nothing about."""
WORSE: dict[str, Worse] = {
    "wdl_regret": "higher", "catastrophic_rate": "higher", "rank1_selection": "lower",
    "order_disagreement": "higher", "utility_regret": "higher", "legality": "lower",
    "latency": "higher", "tokens": "higher", "cost": "higher"}
"""The declared worse direction of every endpoint."""
NULL_TOLERANCE = 1e-12
"""A contrast this close to zero is exactly zero (floating-point residue)."""


@dataclass(frozen=True)
class RegretProfile:
    """What the ``wdl_regret`` and ``catastrophic_rate`` endpoints read per pass A rank."""

    source: ProfileSource
    """``registered`` (the preset's controlled input) or ``pass_a`` (bound positions)."""
    regret_by_rank: tuple[float, ...]
    """Mean WDL regret of ranks 1-10 against rank 1."""
    catastrophic_by_rank: tuple[float, ...]
    """Share of positions whose rank-r regret reaches ``catastrophic_regret``."""
    catastrophic_regret: float
    """The registered catastrophic threshold t."""
    positions: int
    """Positions the profile was recomputed from (0 when registered)."""

    def to_json(self) -> dict[str, Any]:
        """Return the profile as a JSON-ready mapping (values to 12 decimals)."""
        return {"source": self.source, "positions": self.positions,
                "catastrophic_regret": self.catastrophic_regret,
                "regret_by_rank": [round(v, 12) for v in self.regret_by_rank],
                "catastrophic_by_rank": [round(v, 12) for v in self.catastrophic_by_rank]}


def registered_profile(d: ArmsDesign) -> RegretProfile:
    """The preset's ``wdl_regret_by_rank``, each rank catastrophic iff it reaches t."""
    t = d.catastrophic_regret
    return RegretProfile("registered", tuple(d.wdl_regret_by_rank),
                         tuple(float(g >= t) for g in d.wdl_regret_by_rank), t, 0)


def pass_a_profile(wdl_by_position: Mapping[str, Sequence[float]],
                   catastrophic_regret: float) -> RegretProfile:
    """The profile of bound positions: g_p(r) = E_p(1) − E_p(r) from pass A's WDL
    expectations of ranks 1-10, averaged; c(r) the share of positions with g_p(r) ≥ t."""
    if not wdl_by_position:
        raise InputError("need pass A expectations of at least one position",
                         field="wdl_by_position")
    rows = [_expectations(key, values) for key, values in wdl_by_position.items()]
    regret = np.array([row[0] - row for row in rows])
    caught = regret >= catastrophic_regret
    return RegretProfile("pass_a", tuple(float(v) for v in regret.mean(axis=0)),
                         tuple(float(v) for v in caught.mean(axis=0)), catastrophic_regret,
                         len(rows))


def _expectations(key: str, values: Sequence[float]) -> FloatArray:
    row = np.asarray(values, dtype=np.float64)
    if row.shape != (PASS_A_DEPTH,) or not np.all(np.isfinite(row)) \
            or row.min() < 0 or row.max() > 1:
        raise InputError(f"position {key!r} needs {PASS_A_DEPTH} WDL expectations in [0, 1] "
                         f"(pass A ranks 1-{PASS_A_DEPTH}), got {list(values)!r}",
                         field=f"wdl_by_position.{key}")
    return row


def arm_endpoints(ranks: Sequence[int], orders: tuple[OrderArray, OrderArray],
                  selector: Selector, profile: RegretProfile) -> dict[str, float]:
    """Every modelled endpoint's exact expectation for one arm; order entries index
    ``sorted(ranks)`` (entry 0 is rank 1), rows are positions, A then B presentations."""
    sorted_ranks = np.array(sorted(ranks), dtype=np.int64)
    a, b = (np.asarray(o, dtype=np.int64) for o in orders)
    shown_a, shown_b = sorted_ranks[a], sorted_ranks[b]
    p_a, p_b = choice_probabilities(shown_a, selector), choice_probabilities(shown_b, selector)
    shown, probs = np.concatenate([shown_a, shown_b]), np.concatenate([p_a, p_b])
    out = {endpoint: float(np.mean(np.sum(probs * values[shown - 1], axis=1)))
           for endpoint, values in rank_values(profile).items()}
    return {**out, "order_disagreement": order_disagreement(a, p_a, b, p_b)}


def rank_values(profile: RegretProfile) -> dict[str, FloatArray]:
    """What choosing pass A rank r (entry r − 1) scores on each endpoint that is a function
    of the chosen rank alone (every modelled endpoint but order disagreement)."""
    rank = np.arange(1, PASS_A_DEPTH + 1, dtype=np.float64)
    return {"wdl_regret": np.array(profile.regret_by_rank, dtype=np.float64),
            "catastrophic_rate": np.array(profile.catastrophic_by_rank, dtype=np.float64),
            "rank1_selection": (rank == 1).astype(np.float64),
            "utility_regret": np.log(rank)}


def order_disagreement(a: OrderArray, p_a: FloatArray, b: OrderArray, p_b: FloatArray,
                       ) -> float:
    """Mean over positions of 1 − Σ_m p_A(m) p_B(m): the chance that two independent
    choices, one per presentation, pick different moves (``p[..., s]`` is the probability
    of the slot-s candidate, ``a[..., s]`` that candidate's index)."""
    by_move_a, by_move_b = np.zeros_like(p_a), np.zeros_like(p_b)
    np.put_along_axis(by_move_a, np.asarray(a), p_a, axis=1)
    np.put_along_axis(by_move_b, np.asarray(b), p_b, axis=1)
    return float(1.0 - np.mean(np.sum(by_move_a * by_move_b, axis=1)))


@dataclass(frozen=True)
class EndpointContrast:
    """One selector's expected near − far contrast on one endpoint."""

    contrast: str
    """``near-far`` arm names."""
    selector: str
    """Selector name."""
    endpoint: str
    """Endpoint name."""
    near: float | None
    """Expected value on the near arm (None: not modelled)."""
    far: float | None
    """Expected value on the far arm (None: not modelled)."""

    @property
    def delta(self) -> float | None:
        """Near − far (None: not modelled)."""
        return None if self.near is None or self.far is None else self.near - self.far

    @property
    def harm(self) -> float | None:
        """The contrast oriented so that positive means the near arm is worse."""
        delta = self.delta
        return None if delta is None else (delta if WORSE[self.endpoint] == "higher"
                                           else -delta)

    @property
    def sign(self) -> int | None:
        """Sign of :attr:`delta` (0 within :data:`NULL_TOLERANCE`; None: not modelled)."""
        delta = self.delta
        if delta is None:
            return None
        return 0 if abs(delta) <= NULL_TOLERANCE else int(math.copysign(1, delta))

    @property
    def verdict(self) -> Verdict:
        """Whether the near arm is expected worse (consistent with the mechanism)."""
        harm = self.harm
        if harm is None:
            return "not_modelled"
        if abs(harm) <= NULL_TOLERANCE:
            return "null"
        return "consistent" if harm > 0 else "against"

    def to_json(self) -> dict[str, Any]:
        """Return the cell as a JSON-ready mapping."""
        delta = self.delta
        return {"near": _rounded(self.near), "far": _rounded(self.far),
                "contrast": _rounded(delta), "sign": self.sign,
                "worse": WORSE[self.endpoint], "verdict": self.verdict}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 12)


WarningCode = Literal["primary_endpoint_inconsistent_with_mechanism",
                      "primary_endpoint_blind_to_mechanism", "primary_endpoint_not_modelled"]
"""Why a primary endpoint cannot test the mechanism as registered."""
WARNING_OF: dict[Verdict, WarningCode] = {
    "against": "primary_endpoint_inconsistent_with_mechanism",
    "null": "primary_endpoint_blind_to_mechanism",
    "not_modelled": "primary_endpoint_not_modelled"}
"""The warning each non-consistent verdict of a primary endpoint raises."""


@dataclass(frozen=True)
class EndpointWarning:
    """A primary endpoint that does not move the declared way for the diffuse selector."""

    code: WarningCode
    """Why (one of :data:`WARNING_OF`)."""
    endpoint: str
    """The primary endpoint."""
    selector: str
    """The selector whose expected contrast it is (``diffuse``)."""
    contrast: str
    """The primary contrast, ``near-far``."""
    expected_contrast: float | None
    """Expected near − far (None: not modelled)."""
    message: str
    """The warning in words."""

    def to_json(self) -> dict[str, Any]:
        """Return the warning as a JSON-ready mapping."""
        return {"code": self.code, "endpoint": self.endpoint, "selector": self.selector,
                "contrast": self.contrast, "expected_contrast": _rounded(self.expected_contrast),
                "message": self.message}


def primary_warning(cell: EndpointContrast, profile: RegretProfile) -> EndpointWarning | None:
    """The warning a primary endpoint's diffuse primary contrast raises, or None."""
    verdict = cell.verdict
    if verdict == "consistent":
        return None
    delta = cell.delta
    said = ("not modelled" if delta is None
            else "0" if cell.sign == 0 else f"{delta:+.4f}")
    why = {"against": f"moves against the declared mechanism ({WORSE[cell.endpoint]} is "
                      "worse, yet the near arm is expected better)",
           "null": "cannot detect the declared mechanism (expected contrast zero)",
           "not_modelled": "is not modelled by the synthetic selectors"}[verdict]
    return EndpointWarning(
        WARNING_OF[verdict], cell.endpoint, cell.selector, cell.contrast, delta,
        f"primary endpoint {cell.endpoint} {why} for the {cell.selector} selector: expected "
        f"{cell.contrast} contrast {said} under the {profile.source} regret profile")


@dataclass(frozen=True)
class EndpointValidity:
    """Every (contrast, selector, endpoint) expectation, and the primary endpoints' warnings."""

    profile: RegretProfile
    """The regret profile the WDL endpoints read."""
    primary_contrast: str
    """``near-far`` of the registered primary contrast."""
    primary_endpoints: tuple[str, ...]
    """The registered primary endpoints."""
    cells: tuple[EndpointContrast, ...]
    """Contrast × selector × endpoint, in registered order."""
    warnings: tuple[EndpointWarning, ...]
    """The primary endpoints that do not move the declared way for the diffuse selector."""

    def cell(self, contrast: str, selector: str, endpoint: str) -> EndpointContrast:
        """Return one cell of the table."""
        for c in self.cells:
            if (c.contrast, c.selector, c.endpoint) == (contrast, selector, endpoint):
                return c
        raise InputError(f"no cell {contrast}/{selector}/{endpoint}", field="cell")

    def detects_mechanism(self, contrast: str, endpoint: str) -> bool:
        """Whether the endpoint shows the mechanism on ``contrast``: the diffuse selector's
        near arm worse, and by more than the sharp selector's."""
        diffuse, sharp = (self.cell(contrast, s, endpoint) for s in ("diffuse", "sharp"))
        return (diffuse.verdict == "consistent" and sharp.harm is not None
                and diffuse.harm is not None and diffuse.harm > sharp.harm)

    def to_json(self) -> dict[str, Any]:
        """Return the table, the profile and the warnings as a JSON-ready mapping."""
        contrasts = list(dict.fromkeys(c.contrast for c in self.cells))
        table: dict[str, dict[str, dict[str, Any]]] = {}
        for c in self.cells:
            table.setdefault(c.contrast, {}).setdefault(c.selector, {})[c.endpoint] = \
                c.to_json()
        return {
            "mechanism": MECHANISM, "profile": self.profile.to_json(),
            "primary_contrast": self.primary_contrast,
            "endpoints": {e: {"worse": WORSE[e], "primary": e in self.primary_endpoints,
                              "modelled": e in MODELLED} for e in (*MODELLED, *NOT_MODELLED)},
            "table": table,
            "detects_mechanism": {k: {e: self.detects_mechanism(k, e) for e in MODELLED}
                                  for k in contrasts},
            "warnings": [w.to_json() for w in self.warnings]}


def endpoint_validity(design: ArmsDesign,
                      wdl_by_position: Mapping[str, Sequence[float]] | None = None, *,
                      orders: Mapping[str, tuple[OrderArray, OrderArray]] | None = None,
                      ) -> EndpointValidity:
    """The endpoint-validity table of ``design``: the registered profile, or with
    ``wdl_by_position`` (position → pass A's WDL expectations of ranks 1-10) the bound
    positions' own; over the audit's cyclic orders, or the bound ``orders``."""
    profile = (registered_profile(design) if wdl_by_position is None
               else pass_a_profile(wdl_by_position, design.catastrophic_regret))
    orders = arm_orders(design) if orders is None else orders
    cells: list[EndpointContrast] = []
    for near, far in (design.primary_contrast, *design.secondary_contrasts):
        for sel in registered_selectors(design):
            ends = {arm: arm_endpoints(design.arm(arm).ranks, orders[arm], sel, profile)
                    for arm in (near, far)}
            cells += [EndpointContrast(f"{near}-{far}", sel.name, e, ends[near][e],
                                       ends[far][e]) for e in MODELLED]
            cells += [EndpointContrast(f"{near}-{far}", sel.name, e, None, None)
                      for e in NOT_MODELLED]
    primary = f"{design.primary_contrast[0]}-{design.primary_contrast[1]}"
    diffuse = {c.endpoint: c for c in cells if (c.contrast, c.selector) == (primary, "diffuse")}
    found = (primary_warning(diffuse[e], profile) for e in design.primary_endpoints)
    return EndpointValidity(profile, primary, design.primary_endpoints, tuple(cells),
                            tuple(w for w in found if w is not None))
