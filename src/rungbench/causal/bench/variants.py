"""Matched diagnostic variants ("twins") of benchmark items (seed 003 "Failure taxonomy").

Six labels of the seed's taxonomy are licensed only by a matched variant: the agent is
wrong on an item and right on its twin (or the reverse), and only that pattern shows the
mechanism. This module derives, from a drawn world and its items, the diagnostic pairs
the world supports, in world names and before skinning (``build`` renders them):

===================  ===================  =============================================
world (structure)    twin kind            the twin
===================  ===================  =============================================
fork                 ``edge_real``        Y's parent Z replaced by X: the association
                                          the fork shows is now an effect
confounded, latent_  ``z_removed``        the confounder removed: X a root with its
confounded                                marginal, Y on X alone with P(Y | do X)
chain                ``reversed``         every edge reversed, mechanisms kept by position
collider             ``unconditioned``    the collider removed: nothing to condition on
mediation            ``m_unobserved``     the mediator marked unobserved in the graph
any with discovery   ``order_aligned``,   the same world listed in causal order, and in
                     ``order_opposed``    reverse causal order
===================  ===================  =============================================

The diagnostic item is the world's exact rung-2 item (``exact_r2``), the identification
item for mediation and the discovery item for listing order; its twin asks the same
question. A pair is kept only when it can discriminate: the confused reading must differ
from the reference answer by more than tol where the pattern needs it to be wrong, and
agree within tol where it needs it to be right (the same rule that keeps witness-backed
items only above tol). Every value comes from the exact oracle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from rungbench.causal.bench.items import (
    TOL,
    RawItem,
    WorldDraw,
    clamp_unit,
    threshold_coupling,
)
from rungbench.causal.bench.taxonomy import (
    COLLIDER_SELECTION,
    CONFOUNDING_NEGLECT,
    CORRELATION_AS_CAUSATION,
    MEDIATOR_MISUSE,
    REVERSE_CAUSATION,
    TEMPORAL_ORDER,
)
from rungbench.causal.scm import oracle
from rungbench.causal.scm.identify import identify
from rungbench.causal.scm.structure import cpdag_of, same_mec
from rungbench.causal.scm.world import Query, Variable, World
from rungbench.errors import InputError

ITEM = "item"
"""Kind of the diagnostic item itself in its ``Variant`` record."""

TWIN_KINDS: dict[str, str] = {
    "edge_real": CORRELATION_AS_CAUSATION,
    "reversed": REVERSE_CAUSATION,
    "z_removed": CONFOUNDING_NEGLECT,
    "unconditioned": COLLIDER_SELECTION,
    "m_unobserved": MEDIATOR_MISUSE,
    "order_aligned": TEMPORAL_ORDER,
    "order_opposed": TEMPORAL_ORDER,
}
"""Twin kind -> the label its pair diagnoses."""


@dataclass(frozen=True)
class Twin:
    """One matched variant of a diagnostic item, in world names."""

    kind: str
    """A key of :data:`TWIN_KINDS`."""
    draw: WorldDraw
    """The twin world (its id is the parent's until ``build`` names it)."""
    item: RawItem
    """The same question asked of the twin world."""
    confused: tuple[float, ...] = ()
    """Values the confused reading gives on the twin."""
    order: int = 0
    """Listing: +1 every edge parent first, -1 every edge child first, 0 a free shuffle."""


@dataclass(frozen=True)
class Pair:
    """A diagnostic item of a world with its twins."""

    label: str
    """The label the pair diagnoses."""
    item_key: str
    """``RawItem.key`` of the diagnostic item."""
    confused: tuple[float, ...]
    """Values the confused reading gives on the diagnostic item."""
    twins: tuple[Twin, ...]
    """Its matched variants."""


def _tabled(name: str, parents: tuple[str, ...], p_rows: Sequence[float],
            observed: bool = True) -> Variable:
    """A variable with P(V=1 | parent row) = ``p_rows`` (one shared-threshold mixture)."""
    return Variable(name, parents, threshold_coupling([clamp_unit(p) or 0.0 for p in p_rows],
                                                      frozenset()), observed)


def _p(world: World, target: dict[str, int], do: dict[str, int] | None = None,
       evidence: dict[str, int] | None = None) -> float | None:
    """P(target | do, evidence) by the exact oracle; None when the evidence has mass 0."""
    try:
        return clamp_unit(oracle.probability(world, Query(2 if do else 1, target, do or {},
                                                          evidence or {})))
    except InputError:
        return None


def edge_real_world(d: WorldDraw) -> World:
    """The fork X ← Z → Y with Y's parent Z replaced by X (the association made causal)."""
    w = d.world
    vs = tuple(Variable(v.name, (d.treatment,), v.responses, v.observed)
               if v.name == d.outcome else v for v in w.variables)
    return World(w.world_id, vs)


def z_removed_world(d: WorldDraw) -> World:
    """X and Y alone: X a root with P(X=1), Y on X with P(Y=1 | do X=x) of the parent world."""
    w, x, y = d.world, d.treatment, d.outcome
    px = _p(w, {x: 1}) or 0.0
    p_do = [_p(w, {y: 1}, {x: v}) or 0.0 for v in (0, 1)]
    return World(w.world_id, (_tabled(x, (), [px]), _tabled(y, (x,), p_do)))


def reversed_world(d: WorldDraw) -> World:
    """A chain with every edge reversed; each position keeps its mechanism."""
    w = d.world
    order = list(w.names)
    flipped = order[::-1]
    vs = []
    for i, name in enumerate(flipped):
        source = w.var(order[i])
        parents = (flipped[i - 1],) if i else ()
        vs.append(Variable(name, parents, source.responses, source.observed))
    return World(w.world_id, tuple(vs))


def unconditioned_world(d: WorldDraw) -> World:
    """The collider world without its collider (the common child of X and Y)."""
    w, x, y = d.world, d.treatment, d.outcome
    return World(w.world_id, tuple(v for v in w.variables
                                   if not (x in v.parents and y in v.parents)))


def m_unobserved_world(d: WorldDraw) -> World:
    """The mediation world with its mediators marked unobserved."""
    w = d.world
    return World(w.world_id, tuple(Variable(v.name, v.parents, v.responses,
                                            v.observed and v.name not in d.mediators)
                                   for v in w.variables))


def _apart(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and abs(a - b) > TOL


def _rung2_twin(item: RawItem, world: World) -> RawItem:
    """``item`` (an exact rung-2 item) asked of ``world``: value and rung-1 confusion."""
    q = item.query
    assert q is not None
    value = _p(world, dict(q.target), dict(q.do), dict(q.evidence))
    rung1 = _p(world, dict(q.target), None, {**q.do, **q.evidence})
    return replace(item, value=value, confusions={"rung1": rung1})


def _by_key(raws: Sequence[RawItem], key: str) -> RawItem | None:
    return next((r for r in raws if r.key == key), None)


def _fork_pair(d: WorldDraw, item: RawItem) -> Pair | None:
    rung1 = item.confusions.get("rung1")
    if not _apart(rung1, item.value) or rung1 is None:
        return None
    twin = _rung2_twin(item, edge_real_world(d))
    if _apart(twin.confusions.get("rung1"), twin.value):
        return None
    return Pair(CORRELATION_AS_CAUSATION, item.key, (rung1,),
                (Twin("edge_real", replace(d, world=edge_real_world(d)), twin),))


def _confounded_pair(d: WorldDraw, item: RawItem) -> Pair | None:
    rung1 = item.confusions.get("rung1")
    if not _apart(rung1, item.value) or rung1 is None:
        return None
    world = z_removed_world(d)
    twin = _rung2_twin(item, world)
    return Pair(CONFOUNDING_NEGLECT, item.key, (rung1,),
                (Twin("z_removed", replace(d, world=world), twin),))


def _chain_pair(d: WorldDraw, item: RawItem) -> Pair | None:
    if _apart(item.confusions.get("rung1"), item.value):
        return None
    world = reversed_world(d)
    twin = _rung2_twin(item, world)
    forward = twin.confusions.get("rung1")
    if not _apart(forward, twin.value) or forward is None:
        return None
    return Pair(REVERSE_CAUSATION, item.key, (),
                (Twin("reversed", replace(d, world=world), twin, (forward,)),))


def _collider_pair(d: WorldDraw, item: RawItem) -> Pair | None:
    q = item.query
    assert q is not None
    colliders = [v.name for v in d.world.variables
                 if d.treatment in v.parents and d.outcome in v.parents]
    conditioned = [_p(d.world, dict(q.target), None, {**q.do, **q.evidence, c: cv})
                   for c in colliders for cv in (0, 1)]
    confused = tuple(v for v in conditioned if v is not None and _apart(v, item.value))
    if not confused:
        return None
    world = unconditioned_world(d)
    return Pair(COLLIDER_SELECTION, item.key, confused,
                (Twin("unconditioned", replace(d, world=world), _rung2_twin(item, world)),))


def mediator_adjusted(world: World, x: str, xv: int, target: dict[str, int],
                      mediators: Sequence[str]) -> float | None:
    """Σ_m P(target | x, m) P(m): the total effect read with the mediators adjusted for."""
    total = 0.0
    for values in _assignments(len(mediators)):
        m = dict(zip(mediators, values, strict=True))
        pm, py = _p(world, m), _p(world, target, None, {x: xv, **m})
        if pm is None:
            return None
        total += (py or 0.0) * pm
    return clamp_unit(total)


def _assignments(n: int) -> list[tuple[int, ...]]:
    return [tuple(k >> i & 1 for i in range(n)) for k in range(1 << n)]


def _mediation_pair(d: WorldDraw, item: RawItem) -> Pair | None:
    q = item.query
    if q is None or not item.identifiable or not d.mediators:
        return None
    (x, xv), = q.do.items()
    adjusted = mediator_adjusted(d.world, x, xv, dict(q.target), d.mediators)
    if not _apart(adjusted, item.value) or adjusted is None:
        return None
    world = m_unobserved_world(d)
    (y, yv), = q.target.items()
    found = identify(world, x, y, x_val=xv, y_val=yv)
    if found.estimate is None or _apart(found.estimate, item.value):
        return None
    twin = replace(item, confusions={"rung1": _p(world, dict(q.target), None, {x: xv})})
    return Pair(MEDIATOR_MISUSE, item.key, (adjusted,),
                (Twin("m_unobserved", replace(d, world=world), twin),))


def _order_pair(d: WorldDraw, item: RawItem) -> Pair | None:
    edges = list(item.true_edges or ())
    if same_mec([(b, a) for a, b in edges], cpdag_of(edges)):
        return None  # reversing every edge stays in the class: the order cannot mislead
    return Pair(TEMPORAL_ORDER, item.key, (), (
        Twin("order_aligned", d, item, order=1), Twin("order_opposed", d, item, order=-1)))


def diagnostic_pairs(d: WorldDraw, raws: Sequence[RawItem]) -> list[Pair]:
    """Every diagnostic pair the world ``d`` supports, given its items ``raws``."""
    out: list[Pair | None] = []
    r2, ident, disc = (_by_key(raws, k) for k in ("exact_r2", "ident", "discovery"))
    if r2 is not None and r2.value is not None:
        if d.structure == "fork":
            out.append(_fork_pair(d, r2))
        elif d.structure in ("confounded", "latent_confounded"):
            out.append(_confounded_pair(d, r2))
        elif d.structure == "chain":
            out.append(_chain_pair(d, r2))
        elif d.structure == "collider":
            out.append(_collider_pair(d, r2))
    if ident is not None and d.structure == "mediation":
        out.append(_mediation_pair(d, ident))
    if disc is not None:
        out.append(_order_pair(d, disc))
    return [p for p in out if p is not None]
