"""Items over an imported Bayesian network: the "network" family (seed 003 "Item types").

A bnlearn network read from BIF (``causal.interop.bif``) is encoded as a response-function
world (``causal.scm.cpts``) and asked, in its own variable and state names:

=================  ===========================================  ===========================
item (key)         question                                     reference (exact oracle)
=================  ===========================================  ===========================
``net_r1``         P(Y=y | E=e), 1-3 evidence variables         rung-1 value
``net_r2``         P(Y=y | do(X=x)), the CPTs shown             rung-2 value
``net_ident``      is P(Y=y | do(X=x)) identifiable from the    identifiable; the value,
                   graph and the observational distribution?    checked against back-door
                                                                adjustment for pa(X)
``net_r3``         P(Y_{X=x'}=y | X=x, Y=y0) under a NAMED      rung-3 value under that
                   cross-row coupling, stated in the question   coupling
=================  ===========================================  ===========================

Every variable of a BN is observed, so every P(y | do x) is identified by back-door
adjustment for the parents of X (Pearl 2009, Theorem 3.2.2, "adjustment for direct
causes"), given positivity; a draw whose adjustment needs P(x | pa) = 0 is skipped. A
counterfactual of a CPT-only world depends on the coupling the CPTs leave unspecified
(``cpts.COUPLING_NOTE``), so a rung-3 item names one; only the couplings under which the
network's world can be built are drawn (the independent coupling exceeds its table limit on
alarm, child and insurance, which then get comonotone counterfactuals only).

Rung-2 and identification pairs are drawn among those with an open back-door path
(:func:`has_backdoor_path`) when the network has any of the drawn kind, so that answering
P(y | x) for P(y | do x) is detectably wrong on many of them, as on the confounded motifs.

Held out by query structure (the split rule of :data:`SPLIT_SHAPES`): the test split alone
asks rung-1 items with three evidence variables and interventions / counterfactuals whose
treatment is a non-parent ancestor of the outcome (multi-hop); dev and validation ask one or
two evidence variables and parent -> child pairs. Every split draws its own queries from its
own seed stream, so the same network gives each split different items.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rungbench.causal.bench.items import clamp_unit
from rungbench.causal.bench.records import ItemType, Rung
from rungbench.causal.interop.bif import read_bif
from rungbench.causal.scm import oracle
from rungbench.causal.scm.cpts import COUPLINGS, Coupling, Cpt, world_from_cpts
from rungbench.causal.scm.world import Query, World
from rungbench.errors import InputError, IntegrityError, Reason, Refusal
from rungbench.evidence.canonical import bytes_digest

NETWORK_DIR = Path(__file__).resolve().parents[4] / "data" / "bnlearn"
"""The bundled bnlearn networks (``data/bnlearn`` of the repository)."""

NETWORK_FAMILY = "network"
"""Task family of every network item."""

NETWORK_STRUCTURE = "network"
"""``private_oracle.structure`` of every network item."""

MIN_CELL = 0.02
"""Evidence events (and factual episodes) rarer than this are not asked about."""

MAX_ADJUSTMENT_ROWS = 512
"""Parent configurations the back-door check sums over at most; larger draws are skipped."""

DRAW_TRIES = 20
"""Attempts per item slot before the slot is left empty."""

COUPLING_TEXT: dict[str, str] = {
    "comonotone": (
        "the comonotone coupling: each variable's noise is one uniform draw read through the "
        "inverse CDF of its CPT row, so a unit keeps its quantile across parent settings"),
    "independent": (
        "the independent coupling: each variable responds independently at each setting of "
        "its parents"),
}
"""How a rung-3 item states the coupling it is asked under (``cpts`` module docstring)."""


@dataclass(frozen=True)
class QueryShape:
    """Which query structures a split may draw (the held-out rule)."""

    evidence_sizes: tuple[int, ...]
    """Numbers of evidence variables of a rung-1 item."""
    pair_kinds: tuple[str, ...]
    """``parent`` (X a parent of Y) and/or ``ancestor`` (X a non-parent ancestor of Y)."""


SPLIT_SHAPES: dict[str, QueryShape] = {
    "dev": QueryShape((1, 2), ("parent",)),
    "validation": QueryShape((1, 2), ("parent",)),
    "test": QueryShape((1, 2, 3), ("parent", "ancestor")),
}
"""Query structures per split: three-variable evidence and multi-hop pairs are test-only."""


@dataclass(frozen=True)
class Network:
    """An imported network with the world it is asked about."""

    name: str
    """Network name (the bundled name, or the file stem of a path)."""
    source: str
    """File name of the BIF source."""
    sha256: str
    """Digest of the BIF source."""
    states: Mapping[str, tuple[str, ...]]
    """State names per variable: value i = the (i+1)-th listed."""
    cpts: tuple[Cpt, ...]
    """The CPTs at full precision."""
    worlds: Mapping[str, World]
    """The world under every coupling it can be built with (comonotone always)."""

    @property
    def world(self) -> World:
        """The comonotone world (every rung-1 and rung-2 answer is the same under any)."""
        return self.worlds["comonotone"]


@dataclass(frozen=True)
class NetworkItem:
    """One item over a network, in the network's own names, before skinning."""

    key: str
    """Item slot (``net_r1_0``, ``net_ident_2`` ...)."""
    item_type: ItemType
    """``exact`` (mechanism shown) or ``identification`` (graph + observational CPTs)."""
    rung: Rung
    """Ladder rung."""
    query: Query
    """The structured question (value indices)."""
    estimand: str
    """The estimand in state names (private)."""
    value: float
    """Exact reference value."""
    confusions: Mapping[str, float | None] = field(default_factory=dict)
    """rung1 / rung2_population / resampled values of the same target."""
    coupling: str | None = None
    """Rung-3 items: the cross-row coupling the question names."""
    adjustment: tuple[str, ...] | None = None
    """Identification items: the back-door set (the parents of X)."""


def bundled_networks() -> tuple[str, ...]:
    """Names of the bundled networks, sorted."""
    return tuple(sorted(p.stem for p in NETWORK_DIR.glob("*.bif")))


def network_path(spec: str) -> Path:
    """The BIF file of ``spec``: a bundled name, or a path ending in ``.bif``.

    Refuses (``bad_request``, one line) a name that is neither.
    """
    if spec.endswith(".bif"):
        path = Path(spec)
        if not path.is_file():
            raise InputError("BIF file not found", path=spec, field="networks")
        return path
    if spec in bundled_networks():
        return NETWORK_DIR / f"{spec}.bif"
    raise Refusal([Reason("bad_request", f"unknown network {spec!r}; bundled: "
                          f"{', '.join(bundled_networks())}, or a path to a .bif file",
                          subject="networks")], gate="causal build")


def network_name(spec: str) -> str:
    """The name of network ``spec``: the bundled name, or the file stem of a path."""
    return Path(spec).stem if spec.endswith(".bif") else spec


def parse_networks(text: str) -> list[str]:
    """The comma-separated network specs of ``--networks``, each checked, in order, once."""
    specs = [s.strip() for s in text.split(",") if s.strip()]
    if not specs:
        raise Refusal([Reason("bad_request", "no network named; give bundled names or .bif "
                              "paths, comma-separated", subject="networks")],
                      gate="causal build")
    names = [network_name(s) for s in specs]
    if len(set(names)) != len(names):
        raise Refusal([Reason("bad_request", f"a network is named twice: {names!r}",
                              subject="networks")], gate="causal build")
    for s in specs:
        network_path(s)
    return specs


def load_network(spec: str, world_id: str) -> Network:
    """Read and encode the network ``spec`` as world ``world_id`` under every coupling it
    can be built with."""
    path = network_path(spec)
    net = read_bif(path)
    worlds: dict[str, World] = {}
    for coupling in COUPLINGS:
        named: Coupling = "independent" if coupling == "independent" else "comonotone"
        try:
            worlds[coupling] = world_from_cpts(world_id, net.cpts, coupling=named)
        except InputError:
            if coupling == "comonotone":
                raise
    return Network(network_name(spec), path.name, bytes_digest(path.read_bytes()), net.states,
                   net.cpts, worlds)


# ------------------------------------------------------------------ naming


def state_of(net: Network, variable: str, value: int) -> str:
    """The state name of ``value`` of ``variable`` (binary without names: ``0``/``1``)."""
    names = net.states.get(variable, ())
    return names[value] if value < len(names) else str(value)


def named_event(net: Network, event: Mapping[str, int]) -> str:
    """``A=a,B=b`` in state names, keys sorted (estimand text)."""
    return ",".join(f"{k}={state_of(net, k, v)}" for k, v in sorted(event.items()))


# ------------------------------------------------------------------ drawing


def _probability(world: World, query: Query) -> float | None:
    """The oracle value, or None when the evidence has probability 0."""
    try:
        return oracle.probability(world, query)
    except InputError:
        return None


def _draw_from(world: World, variable: str, given: Mapping[str, int],
               rng: np.random.Generator) -> int | None:
    """A value of ``variable`` drawn from P(variable | given) (None if ``given`` is
    impossible)."""
    probs = [_probability(world, Query(1, {variable: s}, {}, dict(given)))
             for s in range(world.card(variable))]
    if any(p is None for p in probs):
        return None
    p = np.array([max(0.0, float(q or 0.0)) for q in probs])
    return int(rng.choice(len(p), p=p / p.sum()))


def draw_event(world: World, variables: Sequence[str], rng: np.random.Generator
               ) -> dict[str, int] | None:
    """An event on ``variables`` drawn from their observational joint, one at a time."""
    event: dict[str, int] = {}
    for v in variables:
        value = _draw_from(world, v, event, rng)
        if value is None:
            return None
        event[v] = value
    return event


def _pairs(world: World, kind: str) -> list[tuple[str, str]]:
    """(X, Y): X a parent of Y, or X a non-parent ancestor of Y."""
    out = []
    for y in world.observed_names:
        parents = set(world.var(y).parents)
        for x in sorted(world.ancestors([y]) - {y}):
            if (x in parents) == (kind == "parent"):
                out.append((x, y))
    return out


def has_backdoor_path(world: World, x: str, y: str) -> bool:
    """Whether X and Y share an ancestor once X's outgoing edges are cut (an open back-door
    path with nothing conditioned on), so that P(y | do x) and P(y | x) may differ."""
    def up(start: str, cut: str | None) -> set[str]:
        seen, todo = {start}, [start]
        while todo:
            for p in world.var(todo.pop()).parents:
                if p != cut and p not in seen:
                    seen.add(p)
                    todo.append(p)
        return seen

    return bool(up(x, None) & up(y, x))


def _pick_pair(world: World, shape: QueryShape, rng: np.random.Generator, *,
               confounded: bool = False) -> tuple[str, str] | None:
    """An (X, Y) pair of a kind the split allows; with ``confounded``, one with an open
    back-door path when the drawn kind has any."""
    kinds = [k for k in shape.pair_kinds if _pairs(world, k)]
    if not kinds:
        return None
    pairs = _pairs(world, kinds[int(rng.integers(len(kinds)))])
    if confounded:
        pairs = [p for p in pairs if has_backdoor_path(world, *p)] or pairs
    return pairs[int(rng.integers(len(pairs)))]


def rung1_item(net: Network, shape: QueryShape, rng: np.random.Generator, slot: int
               ) -> NetworkItem | None:
    """P(Y=y | E=e): Y and 1-3 evidence variables at random, e drawn from the joint."""
    w = net.world
    names = list(w.observed_names)
    size = min(shape.evidence_sizes[int(rng.integers(len(shape.evidence_sizes)))],
               len(names) - 1)  # a small network has fewer evidence variables to give
    if size < 1:
        return None
    picks = [names[int(i)] for i in rng.choice(len(names), size=size + 1, replace=False)]
    y, ev_vars = picks[0], picks[1:]
    evidence = draw_event(w, ev_vars, rng)
    if evidence is None or (_probability(w, Query(1, evidence, {}, {})) or 0.0) < MIN_CELL:
        return None
    yv = int(rng.integers(w.card(y)))
    q = Query(1, {y: yv}, {}, evidence)
    value = _probability(w, q)
    if value is None:
        return None
    estimand = f"P({named_event(net, q.target)}|{named_event(net, evidence)})"
    return NetworkItem(f"net_r1_{slot}", "exact", 1, q, estimand, value)


def _do_query(w: World, shape: QueryShape, rng: np.random.Generator) -> Query | None:
    """P(Y=y | do(X=x)) over a confounded pair where the network has one, states at random."""
    pair = _pick_pair(w, shape, rng, confounded=True)
    if pair is None:
        return None
    x, y = pair
    xv, yv = int(rng.integers(w.card(x))), int(rng.integers(w.card(y)))
    return Query(2, {y: yv}, {x: xv}, {})


def rung2_item(net: Network, shape: QueryShape, rng: np.random.Generator, slot: int
               ) -> NetworkItem | None:
    """P(Y=y | do(X=x)) with the CPTs shown; the rung-1 P(y | x) is its confusion."""
    w = net.world
    q = _do_query(w, shape, rng)
    if q is None:
        return None
    ((x, xv),), ((y, yv),) = q.do.items(), q.target.items()
    value = oracle.probability(w, q)
    r1 = _probability(w, Query(1, {y: yv}, {}, {x: xv}))
    estimand = f"P({named_event(net, q.target)}|do({named_event(net, q.do)}))"
    return NetworkItem(f"net_r2_{slot}", "exact", 2, q, estimand, value, {"rung1": r1})


def backdoor_adjustment(world: World, x: str, xv: int, y: str, yv: int) -> float | None:
    """Σ_pa P(y | x, pa) P(pa) over the parents of X (None when positivity fails).

    Pearl (2009), Theorem 3.2.2: the parents of X satisfy the back-door criterion
    relative to (X, Y) whenever Y is not a parent of X.
    """
    parents = world.var(x).parents
    cards = [world.card(p) for p in parents]
    if math.prod(cards) > MAX_ADJUSTMENT_ROWS:
        return None
    total = 0.0
    for row in np.ndindex(*cards):
        pa = {p: int(v) for p, v in zip(parents, row, strict=True)}
        p_pa = oracle.probability(world, Query(1, pa, {}, {})) if pa else 1.0
        if p_pa == 0.0:
            continue
        p_y = _probability(world, Query(1, {y: yv}, {}, {x: xv, **pa}))
        if p_y is None:
            return None
        total += p_y * p_pa
    return total


def identification_item(net: Network, shape: QueryShape, rng: np.random.Generator, slot: int
                        ) -> NetworkItem | None:
    """Is P(y | do x) identifiable from the graph and observational CPTs? Yes, by back-door
    adjustment for pa(X); the adjusted value must equal the do-oracle within 1e-9."""
    w = net.world
    q = _do_query(w, shape, rng)
    if q is None:
        return None
    ((x, xv),), ((y, yv),) = q.do.items(), q.target.items()
    truth = oracle.probability(w, q)
    adjusted = backdoor_adjustment(w, x, xv, y, yv)
    if adjusted is None:
        return None
    estimand = f"P({named_event(net, q.target)}|do({named_event(net, q.do)}))"
    if abs(adjusted - truth) > 1e-9:
        raise IntegrityError(f"{net.name}: back-door adjustment {adjusted!r} differs from the "
                             f"oracle {truth!r} for {estimand}")
    parents = tuple(w.var(x).parents)
    r1 = _probability(w, Query(1, {y: yv}, {}, {x: xv}))
    text = (f"{estimand} = sum over {{{','.join(parents)}}} of "
            f"P({named_event(net, q.target)}|{named_event(net, q.do)},pa)P(pa)") \
        if parents else f"{estimand} = P({named_event(net, q.target)}|{named_event(net, q.do)})"
    return NetworkItem(f"net_ident_{slot}", "identification", 2, q, text, truth,
                       {"rung1": r1}, adjustment=parents)


def rung3_item(net: Network, shape: QueryShape, rng: np.random.Generator, slot: int
               ) -> NetworkItem | None:
    """P(Y_{X=x'}=y | X=x, Y=y0) under a coupling drawn from those the network supports."""
    couplings = sorted(net.worlds)
    coupling = couplings[int(rng.integers(len(couplings)))]
    w = net.worlds[coupling]
    pair = _pick_pair(w, shape, rng)
    if pair is None:
        return None
    x, y = pair
    fact = draw_event(w, [x, y], rng)
    if fact is None or (_probability(w, Query(1, fact, {}, {})) or 0.0) < MIN_CELL:
        return None
    others = [s for s in range(w.card(x)) if s != fact[x]]
    x1 = others[int(rng.integers(len(others)))]
    yv = int(rng.integers(w.card(y)))
    q = Query(3, {y: yv}, {x: x1}, fact)
    ans = oracle.answer(w, q)
    conf = ans.confusions.to_json() if ans.confusions is not None else {}
    estimand = (f"P({y}_{{{named_event(net, q.do)}}}={state_of(net, y, yv)}|"
                f"{named_event(net, fact)}) [{coupling} coupling]")
    return NetworkItem(f"net_r3_{slot}", "exact", 3, q, estimand, ans.value, conf,
                       coupling=coupling)


ITEM_KINDS = (rung1_item, rung2_item, identification_item, rung3_item)
"""The item kinds drawn in every slot, in slot order."""


def network_items(net: Network, rng: np.random.Generator, *, split: str, draws: int
                  ) -> list[NetworkItem]:
    """``draws`` slots of one item of each kind, each retried up to :data:`DRAW_TRIES` times;
    gold numbers clamped into [0, 1]."""
    if split not in SPLIT_SHAPES:
        raise InputError(f"unknown split {split!r}; known: {', '.join(SPLIT_SHAPES)}",
                         field="split")
    shape = SPLIT_SHAPES[split]
    out = []
    for slot in range(draws):
        for kind in ITEM_KINDS:
            for _ in range(DRAW_TRIES):
                item = kind(net, shape, rng, slot)
                if item is not None:
                    out.append(_clamped(item))
                    break
    return out


def _clamped(item: NetworkItem) -> NetworkItem:
    value = clamp_unit(item.value)
    return NetworkItem(item.key, item.item_type, item.rung, item.query, item.estimand,
                       0.0 if value is None else value,
                       {k: clamp_unit(v) for k, v in item.confusions.items()},
                       item.coupling, item.adjustment)


__all__ = [
    "COUPLING_TEXT", "ITEM_KINDS", "NETWORK_DIR", "NETWORK_FAMILY", "NETWORK_STRUCTURE",
    "SPLIT_SHAPES", "Network", "NetworkItem", "QueryShape", "backdoor_adjustment",
    "bundled_networks", "draw_event", "has_backdoor_path", "identification_item",
    "load_network", "named_event", "network_items", "network_name", "network_path",
    "parse_networks", "rung1_item", "rung2_item", "rung3_item", "state_of",
]
