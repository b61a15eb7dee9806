"""The exact oracle for all three rungs (seed 003, "Generated-world benchmark").

``answer(world, query)`` returns the exact probability of a `rungbench.query/1`
query, and for rung 3 the values a confused answer would give (seed 003,
"Failure taxonomy": observation/intervention confusion, intervention/
counterfactual confusion, incorrect noise reuse):

- ``rung1``: P(target | X=x' observed instead of set, plus the evidence on
  non-descendants of X) — seeing instead of doing;
- ``rung2_population``: P(target | do(x')) with the episode's evidence ignored;
- ``resampled``: abduction of the non-descendants' noise only, the noise of X's
  descendants drawn fresh (a post-intervention redraw).

Small worlds are enumerated (`enumeration.Enumerator`); worlds with more than
`enumeration.MAX_CONFIGURATIONS` exogenous configurations go to variable
elimination and the twin network (`elimination`). Both are exact. Elimination first
estimates the largest table its order builds and refuses (``world_too_large``, the
estimate in the reason's data) past ``memory_budget`` bytes (default
`elimination.MEMORY_BUDGET_BYTES`), before any table is allocated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rungbench.causal.scm import elimination
from rungbench.causal.scm.enumeration import MAX_CONFIGURATIONS, Enumerator
from rungbench.causal.scm.world import Query, World, check_query
from rungbench.errors import InputError

Method = Literal["auto", "enumeration", "elimination"]
"""Which exact engine answers: ``auto`` enumerates small worlds and eliminates large ones."""


@dataclass(frozen=True)
class Confusions:
    """Values a confused answer to a rung-3 query gives (seed 003 "Failure taxonomy")."""

    rung1: float | None
    """P(target | do-values observed, evidence on non-descendants); None if impossible."""
    rung2_population: float | None
    """P(target | do) ignoring the episode's evidence."""
    resampled: float | None
    """Counterfactual with the noise of the intervened variables' descendants redrawn."""

    def to_json(self) -> dict[str, float | None]:
        """Render as in the private-oracle record (CONTRACTS §3)."""
        return {"rung1": self.rung1, "rung2_population": self.rung2_population,
                "resampled": self.resampled}


@dataclass(frozen=True)
class Answer:
    """The oracle's answer to one query."""

    value: float
    """The exact probability."""
    confusions: Confusions | None
    """Rung-3 queries only: the confused values; None on rungs 1 and 2."""
    method: str
    """``enumeration`` or ``elimination``."""


_ENGINES: dict[int, tuple[World, Enumerator]] = {}
_MAX_CACHED = 256


def enumerator(world: World) -> Enumerator:
    """Return the compiled enumerator of ``world`` (cached by identity)."""
    hit = _ENGINES.get(id(world))
    if hit is not None and hit[0] is world:
        return hit[1]
    if len(_ENGINES) >= _MAX_CACHED:
        _ENGINES.pop(next(iter(_ENGINES)))
    engine = Enumerator(world)
    _ENGINES[id(world)] = (world, engine)
    return engine


def _use_enumeration(world: World, method: Method) -> bool:
    if method == "auto":
        return world.n_configurations() <= MAX_CONFIGURATIONS
    return method == "enumeration"


def probability(world: World, query: Query, *, method: Method = "auto",
                memory_budget: int | None = None) -> float:
    """The exact value of ``query`` in ``world``.

    Refuses (``world_too_large``) a query whose elimination would build a table larger
    than ``memory_budget`` bytes (default `elimination.MEMORY_BUDGET_BYTES`).
    """
    check_query(world, query)
    t, d, e = query.target, query.do, query.evidence
    if _use_enumeration(world, method):
        en = enumerator(world)
        if query.rung == 1:
            return en.rung1(t, e)
        return en.rung2(t, d, e) if query.rung == 2 else en.rung3(t, d, e)
    budget = memory_budget
    if query.rung == 1:
        return elimination.rung1(world, t, e, memory_budget=budget)
    if query.rung == 2:
        return elimination.rung2(world, t, d, e, memory_budget=budget)
    return elimination.rung3(world, t, d, e, memory_budget=budget)


def answer(world: World, query: Query, *, method: Method = "auto",
           memory_budget: int | None = None) -> Answer:
    """The exact value of ``query`` and, for rung 3, its confusion values."""
    value = probability(world, query, method=method, memory_budget=memory_budget)
    used = "enumeration" if _use_enumeration(world, method) else "elimination"
    if query.rung != 3:
        return Answer(value, None, used)
    return Answer(value, confusions(world, query, method=method, memory_budget=memory_budget),
                  used)


def confusions(world: World, query: Query, *, method: Method = "auto",
               memory_budget: int | None = None) -> Confusions:
    """The rung-1, population rung-2 and resampled-noise values of a rung-3 query."""
    check_query(world, query)
    downstream = world.descendants(query.do)
    upstream_ev = {k: v for k, v in query.evidence.items() if k not in downstream}
    seen = {**upstream_ev, **query.do}
    enum = _use_enumeration(world, method)
    budget = memory_budget
    try:
        rung1 = (enumerator(world).rung1(query.target, seen) if enum
                 else elimination.rung1(world, query.target, seen, memory_budget=budget))
    except InputError:
        rung1 = None
    pop = (enumerator(world).rung2(query.target, query.do, {}) if enum
           else elimination.rung2(world, query.target, query.do, {}, memory_budget=budget))
    resampled = (enumerator(world).resampled(query.target, query.do, query.evidence) if enum
                 else _resampled_by_elimination(world, query, budget))
    return Confusions(rung1, pop, resampled)


def _resampled_by_elimination(world: World, query: Query, memory_budget: int | None) -> float:
    """Resampled value on a multi-world network whose counterfactual copies get fresh noise."""
    return elimination.multiworld_probability(
        world,
        [elimination.WorldSpec(query.do, query.target, fresh_noise=True)],
        [elimination.WorldSpec({}, query.evidence)],
        memory_budget=memory_budget,
    )


def _flip(v: int) -> int:
    return 1 - v


def pn(world: World, x: str, y: str, *, x_val: int = 1, y_val: int = 1,
       method: Method = "auto") -> float:
    """Probability of necessity PN = P(Y_{x'} = y' | X = x, Y = y) (Pearl 2009, ch. 9)."""
    q = Query(3, {y: _flip(y_val)}, {x: _flip(x_val)}, {x: x_val, y: y_val})
    return probability(world, q, method=method)


def ps(world: World, x: str, y: str, *, x_val: int = 1, y_val: int = 1,
       method: Method = "auto") -> float:
    """Probability of sufficiency PS = P(Y_x = y | X = x', Y = y') (Pearl 2009, ch. 9)."""
    q = Query(3, {y: y_val}, {x: x_val}, {x: _flip(x_val), y: _flip(y_val)})
    return probability(world, q, method=method)


def pns(world: World, x: str, y: str, *, x_val: int = 1, y_val: int = 1,
        method: Method = "auto", memory_budget: int | None = None) -> float:
    """Probability of necessity and sufficiency PNS = P(Y_x = y, Y_{x'} = y')."""
    for name in (x, y):
        world.var(name)
    a = ({x: x_val}, {y: y_val})
    b = ({x: _flip(x_val)}, {y: _flip(y_val)})
    if _use_enumeration(world, method):
        return enumerator(world).joint_counterfactual([a, b])
    specs = [elimination.WorldSpec(*a), elimination.WorldSpec(*b)]
    return elimination.multiworld_probability(world, specs, [], memory_budget=memory_budget)


@dataclass(frozen=True)
class MediationEffects:
    """Natural effects of X on Y through mediators M (Pearl 2001), on the risk-difference scale."""

    total: float
    """E[Y_{x1}] - E[Y_{x0}]."""
    nde: float
    """Natural direct effect E[Y_{x1, M_{x0}}] - E[Y_{x0}]."""
    nie: float
    """Natural indirect effect E[Y_{x0, M_{x1}}] - E[Y_{x0}]."""


def mediation(world: World, x: str, mediators: tuple[str, ...], y: str, *,
              x0: int = 0, x1: int = 1) -> MediationEffects:
    """NDE and NIE by nested counterfactuals evaluated on the same exogenous state.

    Enumeration only: worlds up to `enumeration.MAX_CONFIGURATIONS` configurations; for
    larger worlds use ``estimands.nde`` / ``estimands.nie`` (variable elimination).
    """
    for name in (x, y, *mediators):
        world.var(name)
    en = enumerator(world)
    base = en.expectation_nested({x: x0}, {x: x0}, mediators, y)
    top = en.expectation_nested({x: x1}, {x: x1}, mediators, y)
    direct = en.expectation_nested({x: x1}, {x: x0}, mediators, y)
    indirect = en.expectation_nested({x: x0}, {x: x1}, mediators, y)
    return MediationEffects(top - base, direct - base, indirect - base)
