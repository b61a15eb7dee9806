"""Named causal estimands: ATE, ETT, NDE, NIE (seed 003 "Task families and generator coverage",
the mechanisms-and-mediation row: "NDE/NIE estimands to add").

Risk-difference scale, binary X and Y, x1 = treated and x0 = control values:

- ATE = E[Y_{x1}] - E[Y_{x0}] (rung 2);
- ETT = E[Y_{x1} - Y_{x0} | X = x1] (rung 3; by consistency E[Y_{x1} | X=x1] = P(Y=1 | X=x1));
- NDE = E[Y_{x1, M_{x0}}] - E[Y_{x0}] and NIE = E[Y_{x0, M_{x1}}] - E[Y_{x0}] (Pearl 2001),
  with M = :func:`mediators` unless a mediator set is given.

Every helper answers by enumeration on small worlds and by variable elimination
(``elimination.nested_expectation`` for the nested counterfactuals) on large ones, so
mediation no longer stops at the enumeration limit. :func:`coupled` names, per
estimand, the variables through which it would depend on a CPT coupling (none for
these four with the derived mediator set).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rungbench.causal.scm import elimination, enumeration, oracle
from rungbench.causal.scm.oracle import Method
from rungbench.causal.scm.world import Query, World
from rungbench.errors import InputError

ESTIMANDS: tuple[str, ...] = ("ate", "ett", "nde", "nie")
"""Every estimand name :func:`estimate` accepts."""


def mediators(world: World, x: str, y: str) -> tuple[str, ...]:
    """Descendants of ``x`` that are ancestors of ``y`` (both excluded), topological order."""
    world.var(x)
    world.var(y)
    between = (world.descendants([x]) & world.ancestors([y])) - {x, y}
    return tuple(n for n in world.names if n in between)


@dataclass(frozen=True)
class Estimate:
    """The value of one named estimand and how it was computed."""

    estimand: str
    """``ate``, ``ett``, ``nde`` or ``nie``."""
    value: float
    """Exact value on the risk-difference scale."""
    mediators: tuple[str, ...]
    """Mediator set used (NDE/NIE; empty otherwise)."""
    method: str
    """``enumeration`` or ``elimination``."""


def _engine(world: World, method: Method) -> str:
    if method == "auto":
        return ("enumeration" if world.n_configurations() <= enumeration.MAX_CONFIGURATIONS
                else "elimination")
    return method


def ate(world: World, x: str, y: str, *, x1: int = 1, x0: int = 0,
        method: Method = "auto") -> float:
    """Average treatment effect P(Y=1 | do(X=x1)) - P(Y=1 | do(X=x0))."""
    top = oracle.probability(world, Query(2, {y: 1}, {x: x1}), method=method)
    bottom = oracle.probability(world, Query(2, {y: 1}, {x: x0}), method=method)
    return top - bottom


def ett(world: World, x: str, y: str, *, x1: int = 1, x0: int = 0,
        method: Method = "auto") -> float:
    """Effect of treatment on the treated E[Y_{x1} - Y_{x0} | X = x1]."""
    factual = oracle.probability(world, Query(1, {y: 1}, {}, {x: x1}), method=method)
    cf = oracle.probability(world, Query(3, {y: 1}, {x: x0}, {x: x1}), method=method)
    return factual - cf


def _nested(world: World, outer: int, inner: int, x: str, ms: tuple[str, ...], y: str,
            method: Method) -> float:
    if _engine(world, method) == "enumeration":
        return oracle.enumerator(world).expectation_nested({x: outer}, {x: inner}, ms, y)
    return elimination.nested_expectation(world, {x: outer}, {x: inner}, ms, y)


def _mediator_set(world: World, x: str, y: str, given: Sequence[str] | None) -> tuple[str, ...]:
    if given is None:
        return mediators(world, x, y)
    for m in given:
        world.var(m)
        if m in (x, y):
            raise InputError(f"{m!r} cannot mediate its own effect", field="mediators")
    return tuple(given)


def nde(world: World, x: str, y: str, *, x1: int = 1, x0: int = 0,
        mediator_set: Sequence[str] | None = None, method: Method = "auto") -> float:
    """Natural direct effect E[Y_{x1, M_{x0}}] - E[Y_{x0}]."""
    ms = _mediator_set(world, x, y, mediator_set)
    return _nested(world, x1, x0, x, ms, y, method) - _nested(world, x0, x0, x, ms, y, method)


def nie(world: World, x: str, y: str, *, x1: int = 1, x0: int = 0,
        mediator_set: Sequence[str] | None = None, method: Method = "auto") -> float:
    """Natural indirect effect E[Y_{x0, M_{x1}}] - E[Y_{x0}]."""
    ms = _mediator_set(world, x, y, mediator_set)
    return _nested(world, x0, x1, x, ms, y, method) - _nested(world, x0, x0, x, ms, y, method)


def _require_binary(world: World, x: str, y: str) -> None:
    """Refuse a treatment or outcome of more than two states: these risk differences read
    Y = 1 under X = x1 vs x0, which names no contrast of a categorical variable. The
    treatment and the outcome must differ (the effect of X on itself is no estimand)."""
    if x == y:
        raise InputError(f"treatment and outcome must differ, both are {x!r}", field="y")
    for name, role in ((x, "x"), (y, "y")):
        k = world.card(name)
        if k != 2:
            raise InputError(f"the risk-difference estimands need binary X and Y; {name!r} has "
                             f"{k} states (ask P(Y = s | do(X = x)) with a query instead)",
                             field=role)


def estimate(world: World, name: str, x: str, y: str, *, x1: int = 1, x0: int = 0,
             mediator_set: Sequence[str] | None = None, method: Method = "auto") -> Estimate:
    """The named estimand (one of :data:`ESTIMANDS`) of ``x`` on ``y``."""
    _require_binary(world, x, y)
    used = _engine(world, method)
    if name == "ate":
        return Estimate(name, ate(world, x, y, x1=x1, x0=x0, method=method), (), used)
    if name == "ett":
        return Estimate(name, ett(world, x, y, x1=x1, x0=x0, method=method), (), used)
    if name in ("nde", "nie"):
        ms = _mediator_set(world, x, y, mediator_set)
        fn = nde if name == "nde" else nie
        return Estimate(name, fn(world, x, y, x1=x1, x0=x0, mediator_set=ms, method=method),
                        ms, used)
    raise InputError(f"unknown estimand {name!r}; choose one of {list(ESTIMANDS)}",
                     field="estimand")


def coupled(world: World, name: str, x: str, y: str, *, x1: int = 1, x0: int = 0,
            mediator_set: Sequence[str] | None = None) -> tuple[str, ...]:
    """Variables through which the named estimand depends on a CPT coupling (() if none)."""
    _require_binary(world, x, y)
    W = elimination.WorldSpec
    if name == "ate":
        return ()
    if name == "ett":
        return elimination.coupled_variables(world, [W({x: x0}, {y: 1})], [W({}, {x: x1})])
    if name in ("nde", "nie"):
        ms = _mediator_set(world, x, y, mediator_set)
        outer, inner = (x1, x0) if name == "nde" else (x0, x1)
        specs = elimination.nested_specs({x: outer}, {x: inner}, ms, y)
        return elimination.coupled_variables(world, specs, [])
    raise InputError(f"unknown estimand {name!r}; choose one of {list(ESTIMANDS)}",
                     field="estimand")
