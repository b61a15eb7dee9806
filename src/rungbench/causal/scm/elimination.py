"""Variable elimination over finite factors, and the twin network for rung 3.

For worlds too large to enumerate (seed 003, "Cost report": enumeration is
impractical past ~15 nodes). Rungs 1 and 2 use each variable's CPD with U_V
marginalized; surgery for do(X=x) drops X's CPD (its incoming edges) and fixes
X=x where its children read it. Rung 3 uses the twin (multi-world) network of
Balke & Pearl (1994): every world (factual, and one per intervention) has its
own copy of the variables the intervention changes, and the copies of one
variable share its exogenous U_V — summing U_V out gives one joint factor over
the copies, so the shared noise is never abducted per root separately (the
pyAgrum XOR failure). Variables an intervention does not reach share the
factual node. A world may also *borrow* a variable's node from an earlier world
(``WorldSpec.borrow``): the nested counterfactual Y_{x1, M_{x0}} of the natural effects
(``nested_expectation``). ``coupled_variables`` reads the same network structurally to
say whether a query depends on anything beyond each variable's CPT.

A query compiles once into a plan: the factors connected to its target once the evidence
is fixed (``relevance``: d-separated parts are dropped when their evidence is certified
possible), a treewidth-aware order (``ordering``), the memory check, and the aligned einsum
calls (``contraction``). The plan and its answer are kept per world.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rungbench.causal.scm import ordering, relevance
from rungbench.causal.scm.contraction import ALIGN_FROM, Contraction, compile_contraction
from rungbench.causal.scm.world import Variable, World
from rungbench.errors import InputError, Reason, Refusal

MEMORY_BUDGET_BYTES = 512 * 1024 * 1024
"""Default memory budget of one elimination: the largest table it may build (512 MiB).

Pass ``memory_budget=`` to any oracle or elimination function to change it. A query
whose estimated largest table exceeds the budget is refused (``world_too_large``)
before any table is allocated.
"""

FLOAT_BYTES = 8
"""Bytes per table entry (float64); index tables are int64, the same size."""


@dataclass(frozen=True)
class Factor:
    """A nonnegative table over finite variables."""

    variables: tuple[str, ...]
    """Axis names; axis i holds the value of variables[i]."""
    table: np.ndarray
    """Array with one axis per variable, of length its number of values."""


def _assignments(cards: Sequence[int]) -> np.ndarray:
    """Row index -> values, shape (prod(cards), len(cards)); the first variable is the least
    significant digit (for binary variables, bit i is (row >> i) & 1)."""
    idx = np.arange(math.prod(cards))
    out = np.empty((idx.size, len(cards)), dtype=np.int64)
    for i, k in enumerate(cards):
        out[:, i] = idx % k
        idx = idx // k
    return out


def cpd_factor(v: Variable, node: str, parent_nodes: Sequence[str]) -> Factor:
    """P(V | parents) with U_V summed out, as a factor over (node, *parent_nodes)."""
    return Factor((node, *parent_nodes), _cpd_axes(v))


def _cpd_axes(v: Variable) -> np.ndarray:
    """P(V | parents) as an array over (V, *parents), built once per variable (read-only)."""
    table = v.__dict__.get("_cpd_axes")  # the same table whatever the node names
    if table is None:
        table = _rows_to_axes(v.cpd(), v.parent_cards, lead=1)  # axis 0: V, 1: row index
        table.setflags(write=False)
        object.__setattr__(v, "_cpd_axes", table)
    return np.asarray(table)


def _rows_to_axes(arr: np.ndarray, cards: Sequence[int], *, lead: int) -> np.ndarray:
    """Reshape a trailing row-index axis (first parent = least significant digit) into one
    axis per parent, of length ``cards[i]``."""
    k = len(cards)
    shaped = arr.reshape(arr.shape[:lead] + tuple(reversed(cards)))
    # C-order reshape puts the most significant digit first; reverse the parent axes.
    order = list(range(lead)) + [lead + k - 1 - i for i in range(k)]
    return np.ascontiguousarray(shaped.transpose(order)) if k else shaped


def shared_noise_factor(v: Variable, copies: Sequence[tuple[str, Sequence[str | int]]]) -> Factor:
    """Joint factor over the copies of V that share U_V (twin network).

    ``copies`` lists (node, parents) per copy; a parent is a node name or a
    constant value (an intervened value). The factor is
    sum_r p_r prod_c 1[node_c = table_r(parents_c)].
    """
    copy_nodes = [c[0] for c in copies]
    parent_nodes = [n for n in dict.fromkeys(
        p for _, ps in copies for p in ps if isinstance(p, str)) if n not in copy_nodes]
    axes = copy_nodes + parent_nodes
    card_of = {p: k for _, ps in copies for p, k in zip(ps, v.parent_cards, strict=True)
               if isinstance(p, str)}
    cards = [card_of[n] for n in parent_nodes]
    n_rows = math.prod(cards)
    assign = _assignments(cards)  # (rows, m): values of parent_nodes
    probs = np.array([r.p for r in v.responses])
    tables = np.array([r.table for r in v.responses], dtype=np.int64)  # (R, V's rows)
    shape = (v.card,) * len(copy_nodes) + (n_rows,)
    out = np.zeros(shape)
    outputs = []
    for _, parents in copies:
        row = np.zeros(n_rows, dtype=np.int64)
        for p, stride in zip(parents, v.strides, strict=True):
            value = (assign[:, parent_nodes.index(p)] if isinstance(p, str)
                     else np.full(n_rows, int(p), dtype=np.int64))
            row += value * stride
        outputs.append(tables[:, row])  # (R, rows)
    cols = np.arange(n_rows)
    for r, pr in enumerate(probs):
        index = (*tuple(o[r] for o in outputs), cols)
        np.add.at(out, index, pr)
    return Factor(tuple(axes), _rows_to_axes(out, cards, lead=len(copy_nodes)))


def reduce(factor: Factor, evidence: Mapping[str, int]) -> Factor:
    """Fix the evidence variables of ``factor`` to their values."""
    if not any(v in evidence for v in factor.variables):
        return factor
    index = tuple(evidence[v] if v in evidence else slice(None) for v in factor.variables)
    kept = tuple(v for v in factor.variables if v not in evidence)
    return Factor(kept, factor.table[index])


OrderKey = tuple[tuple[tuple[str, ...], ...], tuple[str, ...], tuple[tuple[str, int], ...]]
"""Canonical (scopes, keep, cards of the scopes' variables) of an elimination order."""

_ORDERS: dict[OrderKey, tuple[ordering.Order, bool]] = {}
"""Elimination orders already chosen, by :data:`OrderKey`, each with whether the search
past min-degree ran: a warm query reuses its order, and the budget check and the
elimination share one computation."""

_MAX_ORDERS = 4096


SEARCH_FROM_ENTRIES = 2**19
"""Entries built by the min-degree order from which the other heuristics
(:data:`SEARCH_HEURISTICS`) are tried too, on networks of up to 32 variables (see
:data:`SEARCH_ENTRIES_PER_VARIABLE` beyond). With answers kept per plan, an order serves one
contraction: the search pays only where it can save about as much contraction (~3 ns per
entry); below it, min-degree's largest table has fewer than 2**18 entries (2 MiB)."""

SEARCH_ENTRIES_PER_VARIABLE = 2**14
"""On larger networks the search starts from this many min-degree entries per variable: its
time grows with the variables (30-70 us per variable for the three heuristics, measured on
dense 45-80-node worlds and 10x10-16x16 grids), the saving with the entries. A 12x12 grid
query (min-degree: 1.4 million entries over 144 variables) took 18 ms cold with the search
and 12.5 ms without; a 16x16 one 64-74 ms with it, 460 ms with min-degree and min-fill
alone."""

SEARCH_HEURISTICS = ("level_sweep", "min_fill", "weighted_min_fill")
"""The heuristics tried after min-degree, in this order (``ordering.best_order``): the level
sweep for grid-like worlds (where greedy fill merges several fronts), min-fill for dense
worlds, weighted min-fill where variables have different numbers of states (skipped when
they all have one: it is min-fill's order then). The sweep goes first because a heuristic
stops as soon as it can no longer beat the best order so far: on a grid, min-fill stops
early behind the sweep; on a dense world, the sweep stops early behind min-degree."""


def _chosen_order(scopes: Sequence[Sequence[str]], keep: Iterable[str],
                  cards: ordering.Cards | None = None, *,
                  budget: int = MEMORY_BUDGET_BYTES) -> ordering.Order:
    """A treewidth-aware elimination order over the interaction (moral) graph of ``scopes``,
    chosen before any table is built.

    The scopes are those of the pruned network (only ancestors of the target and evidence,
    evidence already reduced), so the graph is the moralized, pruned one. Greedy min-degree
    first; when it builds :data:`SEARCH_FROM_ENTRIES` entries or more (more on large
    networks: :data:`SEARCH_ENTRIES_PER_VARIABLE`), or its largest table exceeds ``budget``
    bytes, :data:`SEARCH_HEURISTICS` are tried too and the order with the
    fewest entries in its largest table, then in all, is kept (``ordering.best_order``; the
    treewidth lower bound is left to a refusal, which names it): easy queries skip the
    search's cost, and a query is refused only when the best order found is over the budget.
    Orders are memoized by canonical input (a warm query with another structure-equal plan
    reuses one computation).
    """
    keep_t = tuple(sorted(set(keep)))
    canon = tuple(sorted({tuple(sorted(s)) for s in scopes}))
    names = {a for sc in canon for a in sc}
    card_t = () if cards is None else tuple(sorted((a, int(c)) for a, c in cards.items()
                                                   if a in names and c != 2))
    key = (canon, keep_t, card_t)
    hit = _ORDERS.get(key)
    if hit is not None and (hit[1] or not _needs_search(hit[0], budget)):
        return hit[0]
    card_map = dict(card_t) or None
    best = hit[0] if hit is not None else ordering.min_degree(canon, keep_t, card_map,
                                                              bound=False)
    searched = _needs_search(best, budget)
    if searched:
        best = ordering.best_order(canon, keep_t, card_map, heuristics=SEARCH_HEURISTICS,
                                   incumbent=best, bound=False)
    if len(_ORDERS) >= _MAX_ORDERS and key not in _ORDERS:
        _ORDERS.pop(next(iter(_ORDERS)))
    _ORDERS[key] = (best, searched)
    return best


def _needs_search(order: ordering.Order, budget: int) -> bool:
    """Whether the min-degree ``order`` is worth improving (:data:`SEARCH_FROM_ENTRIES`) or
    must be (its largest table is over ``budget``)."""
    enough = max(SEARCH_FROM_ENTRIES, SEARCH_ENTRIES_PER_VARIABLE * len(order.names))
    return order.cost >= enough or order.largest * FLOAT_BYTES > budget


def _elimination_order(scopes: Sequence[Sequence[str]], keep: Iterable[str]) -> list[str]:
    """The names of :func:`_chosen_order` (binary variables, the default budget)."""
    return list(_chosen_order(scopes, keep).names)


def _order_unless_small(scopes: Sequence[Sequence[str]], keep: Sequence[str],
                        budget: int, cards: Mapping[str, int] | None = None
                        ) -> ordering.Order | None:
    """The elimination order, or none when the network holds fewer than
    ``contraction.ALIGN_FROM`` variables: one einsum over every factor then sums them all
    out (at most 1,024 entries per operand pass, and no order or steps to compile)."""
    if len({a for sc in scopes for a in sc}) < ALIGN_FROM:
        return None
    return _chosen_order(scopes, keep, cards or None, budget=budget)


def eliminate(factors: Sequence[Factor], keep: Sequence[str]) -> Factor:
    """Sum out every variable not in ``keep``; return the product over ``keep`` (in order)."""
    scopes = [f.variables for f in factors]
    plan = compile_contraction(scopes, _elimination_order(scopes, keep), keep)
    tables = [plan.align(i, f.variables, f.table) for i, f in enumerate(factors)]
    return Factor(tuple(keep), plan.run(tables))


def largest_table(scopes: Sequence[Sequence[str]], keep: Sequence[str]) -> int:
    """Variables of the largest table :func:`eliminate` builds on factors over ``scopes``.

    Derived from the compiled steps (no table is built): each step multiplies the factors
    touching a variable into one over their union minus it.
    """
    return compile_contraction(scopes, _elimination_order(scopes, keep), keep).largest


def check_budget(world_id: str, scope: Sequence[str], entries: int, budget: int, *,
                 lower_bound: int | None = None) -> None:
    """Refuse (``world_too_large``) when a table of ``entries`` float64s over the variables
    ``scope`` exceeds ``budget`` bytes; the refusal names its estimated bytes and variables
    (and ``lower_bound``, when known: no elimination order builds narrower tables)."""
    estimate = entries * FLOAT_BYTES
    if estimate <= budget:
        return
    bound = ("" if lower_bound is None else f"; every elimination order builds a table over "
             f"at least {lower_bound} variables (treewidth lower bound)")
    raise Refusal([Reason(
        "world_too_large",
        f"world {world_id}: exact elimination would build a table of {entries} entries "
        f"({estimate} bytes, ~{estimate / 2**20:.0f} MiB) over {len(scope)} variables "
        f"({', '.join(scope)}), above the memory budget of {budget} bytes "
        f"(~{budget / 2**20:.1f} MiB){bound}",
        subject=world_id,
        data={"estimated_bytes": estimate, "budget_bytes": budget,
              "largest_factor_variables": len(scope), "largest_factor_scope": list(scope),
              "treewidth_lower_bound": lower_bound},
    )], gate="causal oracle")


def _node_cards(factors: Sequence[tuple[Variable, Sequence[tuple[str, Sequence[str | int]]]]]
                ) -> dict[str, int]:
    """Number of values of every node of ``factors`` (a copy has its variable's; a parent
    node its parent variable's)."""
    cards: dict[str, int] = {}
    for var, group in factors:
        for node, parents in group:
            cards[node] = var.card
            for p, k in zip(parents, var.parent_cards, strict=True):
                if isinstance(p, str):
                    cards[p] = k
    return cards


def _factor_plan(var: Variable, group: Sequence[tuple[str, Sequence[str | int]]]
                 ) -> tuple[tuple[str, ...], int]:
    """(scope, entries of the largest array built) of the factor of ``var`` over ``group``."""
    if len(group) == 1:  # a lone copy: its CPD, constant parents sliced out
        node, ps = group[0]
        parents = [p for p in ps if isinstance(p, str)]
        if len(set(parents)) == len(parents) and node not in parents:
            return _lone_plan(var, node, ps)
    copy_nodes = [n for n, _ in group]
    card_of = {p: k for _, ps in group for p, k in zip(ps, var.parent_cards, strict=True)
               if isinstance(p, str)}
    parents = list(dict.fromkeys(p for _, ps in group for p in ps
                                 if isinstance(p, str) and p not in copy_nodes))
    scope = (*copy_nodes, *parents)
    rows = math.prod(card_of[p] for p in parents)
    built = max(var.card ** len(copy_nodes) * rows, len(var.responses) * rows * len(group),
                rows * len(parents))
    return scope, built


def _lone_plan(var: Variable, node: str, parents: Sequence[str | int]
               ) -> tuple[tuple[str, ...], int]:
    """:func:`_factor_plan` of a lone copy over distinct variable ``parents`` (intervened
    constants dropped): its CPD."""
    names = [p for p in parents if isinstance(p, str)]
    rows = math.prod(k for p, k in zip(parents, var.parent_cards, strict=True)
                     if isinstance(p, str))
    return (node, *names), max(var.card * rows, len(var.responses) * rows, rows * len(names))


def plan_check(world: World, factors: Sequence[tuple[Variable, Sequence[tuple[str, Sequence[
        str | int]]]]], evidence: Mapping[str, int], keep: Sequence[str],
               budget: int, *, only: Sequence[int] | None = None) -> Contraction:
    """Estimate every table an elimination over ``factors`` builds; refuse past ``budget``.

    Returns the compiled contraction (steps over the factors' scopes with the evidence
    reduced), so the elimination runs exactly the steps that were checked. ``only``: the
    indices of the factors eliminated (default all; every factor's own table still counts).
    """
    planned = [_factor_plan(var, group) for var, group in factors]
    return _checked(world.world_id, planned, _reduced(planned, evidence), keep, budget, only,
                    {} if world.is_binary else _node_cards(factors))


def _reduced(planned: Sequence[tuple[tuple[str, ...], int]], evidence: Mapping[str, int]
             ) -> list[tuple[str, ...]]:
    """Each planned factor's scope with the evidence variables fixed (dropped)."""
    if not evidence:
        return [scope for scope, _ in planned]
    return [tuple([v for v in scope if v not in evidence]) for scope, _ in planned]


def _checked(world_id: str, planned: Sequence[tuple[tuple[str, ...], int]],
             reduced: Sequence[tuple[str, ...]], keep: Sequence[str], budget: int,
             only: Sequence[int] | None, cards: Mapping[str, int]) -> Contraction:
    """:func:`plan_check` on the factors' (scope, entries built) and reduced scopes already
    computed (``cards``: the number of values of every node, 2 when absent): the order is
    chosen first, then the largest of the factors' own arrays, the order's tables and the
    result over ``keep`` is checked against ``budget``, then the einsum steps are compiled
    (no table is built before the check)."""
    scopes = list(reduced) if only is None else [reduced[i] for i in only]
    order = _order_unless_small(scopes, keep, budget, cards)
    worst: tuple[int, Sequence[str]] = (math.prod(cards.get(a, 2) for a in keep), keep)
    for scope, entries in planned:
        if entries > worst[0]:
            worst = (entries, scope)
    if order is not None and order.largest > worst[0]:
        worst = (order.largest, order.largest_scope)
    lower = None  # computed for a refusal only (about a min-degree search's time)
    if order is not None and worst[0] * FLOAT_BYTES > budget:
        lower = ordering.order_lower_bound(scopes, keep)
    check_budget(world_id, worst[1], worst[0], budget, lower_bound=lower)
    return compile_contraction(scopes, [] if order is None else order.names, keep)


@dataclass(frozen=True)
class WorldSpec:
    """One world of a multi-world network: an intervention and the event read in it."""

    do: Mapping[str, int]
    """Intervention defining this world ({} is the factual world)."""
    event: Mapping[str, int]
    """Event required to hold in this world."""
    fresh_noise: bool = False
    """True: the variables this intervention reaches draw NEW noise (not shared with the
    factual world) — the resampled-noise reading of seed 003's failure taxonomy."""
    borrow: Mapping[str, int] = field(default_factory=dict)
    """Nested intervention: variable -> index of an EARLIER world of the same call whose
    value of that variable this world uses (Y_{x1, M_{x0}}: M borrowed from the x0 world)."""


class _Network:
    """Per-world caches: descendant sets and factors keyed by their copies."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.factors: dict[tuple[object, ...], Factor] = {}
        self.reached: dict[frozenset[str], frozenset[str]] = {}
        self.plans: dict[tuple[object, ...], _Plan] = {}
        self.answers: dict[tuple[object, ...], float] = {}

    def descendants(self, do: Mapping[str, int]) -> frozenset[str]:
        key = frozenset(do)
        if key not in self.reached:
            self.reached[key] = self.world.descendants(key)
        return self.reached[key]

    def factor(self, var: Variable, group: Sequence[tuple[str, Sequence[str | int]]]) -> Factor:
        key = (var.name, *((n, tuple(ps)) for n, ps in group))
        hit = self.factors.get(key)
        if hit is None:
            if len(group) == 1:
                hit = _single_copy(var, group[0][0], group[0][1])
            else:
                hit = shared_noise_factor(var, group)
            if len(self.factors) < 50_000:
                self.factors[key] = hit
        return hit


def _single_copy(var: Variable, node: str, parents: Sequence[str | int]) -> Factor:
    """The CPD of a lone copy, its intervened (constant) parents sliced out: the shared-noise
    factor of one copy is the CPD itself, without building it response by response."""
    names = [p if isinstance(p, str) else f"{node}#{i}" for i, p in enumerate(parents)]
    cpd = cpd_factor(var, node, names)
    if all(isinstance(p, str) for p in parents):
        return cpd
    index = (slice(None), *(slice(None) if isinstance(p, str) else int(p) for p in parents))
    return Factor((node, *(p for p in parents if isinstance(p, str))), cpd.table[index])


_NETWORKS: dict[int, _Network] = {}


def _network(world: World) -> _Network:
    net = _NETWORKS.get(id(world))
    if net is None or net.world is not world:
        if len(_NETWORKS) >= 256:
            _NETWORKS.pop(next(iter(_NETWORKS)))
        net = _Network(world)
        _NETWORKS[id(world)] = net
    return net


def clear_caches() -> None:
    """Forget every compiled network, plan, answer and elimination order (the next query
    is cold)."""
    _NETWORKS.clear()
    _ORDERS.clear()


def clear_answers() -> None:
    """Forget the answers only: the next repeated query runs its compiled contractions."""
    for net in _NETWORKS.values():
        net.answers.clear()


Copies = dict[str, dict[str, list[str | int]]]
"""Per variable name, its copies in a multi-world network: node name -> parent nodes."""


def _build_nodes(world: World, net: _Network, specs: Sequence[WorldSpec]
                 ) -> tuple[list[dict[str, str | int]], Copies, set[str]]:
    """Node of every relevant variable in every world, the copies, the fresh-noise nodes."""
    relevant = world.ancestors({n for spec in specs for n in spec.event})
    node_of: list[dict[str, str | int]] = []
    copies: Copies = {}
    fresh: set[str] = set()
    for w, spec in enumerate(specs):
        moved = {**dict(spec.do), **dict(spec.borrow)}
        reached = net.descendants(moved) if moved else frozenset()
        nodes: dict[str, str | int] = {}
        for v in world.variables:
            if v.name not in relevant:
                continue
            if v.name in spec.do:
                nodes[v.name] = int(spec.do[v.name])
                continue
            if v.name in spec.borrow:
                source = spec.borrow[v.name]
                if not 0 <= source < w:
                    raise InputError(f"world {w} borrows {v.name!r} from world {source}, "
                                     "which is not an earlier world", field="borrow")
                nodes[v.name] = node_of[source][v.name]
                continue
            parents = [nodes[p] for p in v.parents]
            if v.name not in reached:
                node: str = v.name
            elif spec.fresh_noise:
                node = f"{v.name}@{w}~"
                fresh.add(node)
            else:
                node = _copy_name(copies, v.name, parents, w, fresh)
            nodes[v.name] = node
            by = copies.setdefault(v.name, {})
            if node not in by:
                by[node] = parents
        node_of.append(nodes)
    return node_of, copies, fresh


def multiworld_probability(world: World, worlds: Sequence[WorldSpec],
                           given: Sequence[WorldSpec], *,
                           memory_budget: int | None = None) -> float:
    """P(all ``worlds`` events | all ``given`` events), on shared exogenous noise.

    Builds the multi-world network: variable V gets one node per distinct
    (world, parents) copy; a copy is shared with the factual node when no
    intervention of that world reaches V. Only ancestors of the events are
    built (barren nodes sum to one). Exact by variable elimination. Before any table
    is built, the largest table is estimated; past ``memory_budget`` bytes (default
    :data:`MEMORY_BUDGET_BYTES`) the query is refused (``world_too_large``). The compiled
    plan (reduced factors, elimination order, einsum steps) is kept per world, so a new
    query of the same structure only runs the contractions; the answer is kept too (the
    world is immutable, so a repeated query is a look-up, as pyAgrum re-reads a posterior
    whose evidence did not change). :func:`clear_answers` drops the answers only.
    """
    net = _network(world)
    budget = MEMORY_BUDGET_BYTES if memory_budget is None else memory_budget
    key = (_specs_key(worlds), _specs_key(given), budget)
    known = net.answers.get(key)
    if known is not None:
        return known
    plan = net.plans.get(key)
    if plan is None:
        plan = _compile(world, net, worlds, given, budget)
        _bounded_put(net.plans, key, plan)
    value = plan.run()
    _bounded_put(net.answers, key, value)
    return value


def _bounded_put(cache: dict[tuple[object, ...], Any], key: tuple[object, ...],
                 value: object) -> None:
    if len(cache) >= _MAX_PLANS:
        cache.pop(next(iter(cache)))
    cache[key] = value


_MAX_PLANS = 512
"""Compiled plans (and answers) kept per world."""


def _specs_key(specs: Sequence[WorldSpec]) -> tuple[object, ...]:
    return tuple((tuple(sorted(s.do.items())), tuple(sorted(s.event.items())), s.fresh_noise,
                  tuple(sorted(s.borrow.items()))) for s in specs)


@dataclass(frozen=True)
class _Plan:
    """A compiled multi-world query: aligned reduced factor tables and their contraction."""

    zero_evidence: bool
    """The evidence contradicts itself or a do(): P(evidence) = 0."""
    conflict: bool
    """The target contradicts itself or the evidence (P = 0 when P(evidence) > 0)."""
    query: tuple[str, ...]
    """Target nodes still free after the evidence, in axis order."""
    values: tuple[int, ...]
    """The target's value at each query node."""
    tables: tuple[np.ndarray, ...]
    """Reduced factor tables in the contraction's aligned layouts."""
    contraction: Contraction | None
    """The einsum steps over ``tables`` (None when ``zero_evidence``)."""

    def run(self) -> float:
        """Run the contractions: P(target | evidence)."""
        if self.zero_evidence or self.contraction is None:
            return _zero_evidence()
        joint = self.contraction.run(self.tables)
        total = float(joint.sum())
        if total <= 0.0:
            return _zero_evidence()
        if self.conflict:
            return 0.0
        if not self.query:
            return 1.0
        return float(joint[self.values]) / total


def _compile(world: World, net: _Network, worlds: Sequence[WorldSpec],
             given: Sequence[WorldSpec], budget: int) -> _Plan:
    specs = list(worlds) + list(given)
    for spec in specs:
        for part, names in (("event", spec.event), ("do", spec.do), ("borrow", spec.borrow)):
            for name in names:
                if name not in world:
                    raise InputError(f"unknown variable {name!r}", field=f"{part}.{name}")
    do = _one_world(specs)
    if do is not None:
        return _compile_one_world(world, net, do, specs, len(worlds), budget)
    return _compile_multi_world(world, net, specs, len(worlds), budget)


def _compile_multi_world(world: World, net: _Network, specs: Sequence[WorldSpec],
                         n_targets: int, budget: int) -> _Plan:
    """The plan of a query over ``specs`` (the first ``n_targets`` hold the target)."""
    node_of, copies, fresh = _build_nodes(world, net, specs)
    resolved = _resolve(specs, n_targets, lambda w, name: node_of[w][name])
    if resolved is None:
        return _Plan(True, False, (), (), (), None)
    target, evidence, conflict = resolved
    query = tuple(sorted(target))
    needed = _ancestral_nodes(copies, set(query) | set(evidence))
    plan: list[tuple[Variable, list[tuple[str, list[str | int]]]]] = []
    for name, by_node in copies.items():
        var = world.var(name)
        live = [(n, ps) for n, ps in by_node.items() if n in needed and n not in fresh]
        groups = [[c] for c in by_node.items() if c[0] in needed and c[0] in fresh]
        plan.extend((var, group) for group in ([live] if live else []) + groups)
    planned = [_factor_plan(var, group) for var, group in plan]
    reduced = _reduced(planned, evidence)
    kept, others = _split(reduced, query)
    kept = sorted(kept + _doubtful(plan, evidence, others))
    contraction = _checked(world.world_id, planned, reduced, query, budget, kept,
                           {} if world.is_binary else _node_cards(plan))
    factors = [reduce(net.factor(*plan[i]), evidence) for i in kept]
    tables = tuple(contraction.align(i, f.variables, f.table) for i, f in enumerate(factors))
    return _Plan(False, conflict, query, tuple(target[q] for q in query), tables, contraction)


def _resolve(specs: Sequence[WorldSpec], n_targets: int,
             node_at: Callable[[int, str], str | int]
             ) -> tuple[dict[str, int], dict[str, int], bool] | None:
    """The events of ``specs`` on their nodes (``node_at(world index, variable)``, an int
    for an intervened variable): (target, evidence, conflict), target nodes fixed by the
    evidence removed and all of them dropped on a conflict (the target contradicts itself or
    the evidence: P = 0 when P(evidence) > 0); None when the evidence contradicts itself or
    a do() (P(evidence) = 0). The first ``n_targets`` specs hold the target."""
    target: dict[str, int] = {}
    evidence: dict[str, int] = {}
    conflict = False
    for w, spec in enumerate(specs):
        is_target = w < n_targets
        bucket = target if is_target else evidence
        for name, value in spec.event.items():
            at = node_at(w, name)
            if isinstance(at, int) or bucket.get(at, value) != value:
                if (at if isinstance(at, int) else bucket[at]) == value:
                    continue
                if not is_target:
                    return None
                conflict = True
                continue
            bucket[at] = value
    for at, value in list(target.items()):
        if at in evidence:
            conflict = conflict or evidence[at] != value
            del target[at]
    return ({} if conflict else target), evidence, conflict


def _one_world(specs: Sequence[WorldSpec]) -> Mapping[str, int] | None:
    """The shared intervention when every spec reads one world (the same ``do``, no borrowed
    or fresh noise: rungs 1 and 2); None for a multi-world network."""
    if not specs:
        return None
    do = specs[0].do
    for spec in specs:
        if spec.borrow or spec.fresh_noise or spec.do != do:
            return None
    return do


def _compile_one_world(world: World, net: _Network, do: Mapping[str, int],
                       specs: Sequence[WorldSpec], n_targets: int, budget: int) -> _Plan:
    """:func:`_compile` of a one-world network, without building the multi-world one.

    The same plan, bit for bit (the same node names, factors, order and contraction:
    ``tests/causal/scm/test_elimination.py`` compares them): a variable the intervention
    reaches is node ``V@0``, as :func:`_build_nodes` names the copy of world 0, the others
    keep their name; each factor is its variable's CPD indexed once by the intervened
    values and the evidence. Cold rung-1 and rung-2 queries on small worlds spend most of
    their time here (the multi-world bookkeeping was about a third of it, measured)."""
    reached = net.descendants(do) if do else frozenset()

    def at(name: str) -> str | int:
        if name in do:
            return int(do[name])
        return f"{name}@0" if name in reached else name

    resolved = _resolve(specs, n_targets, lambda _, name: at(name))
    if resolved is None:
        return _Plan(True, False, (), (), (), None)
    target, evidence, conflict = resolved
    query = tuple(sorted(target))
    needed = {name for spec in specs for name in spec.event
              if at(name) in target or at(name) in evidence}
    for v in reversed(world.variables):  # ancestors in the mutilated graph
        if v.name in needed and v.name not in do:
            needed.update(v.parents)
    plan: list[tuple[Variable, list[tuple[str, list[str | int]]]]] = []
    planned: list[tuple[tuple[str, ...], int]] = []
    for v in world.variables:
        if v.name in needed and v.name not in do:
            node, parents = str(at(v.name)), [at(p) for p in v.parents]
            plan.append((v, [(node, parents)]))
            planned.append(_lone_plan(v, node, parents))
    reduced = _reduced(planned, evidence)
    kept, others = _split(reduced, query)
    kept = sorted(kept + _doubtful(plan, evidence, others))
    contraction = _checked(world.world_id, planned, reduced, query, budget, kept,
                           {} if world.is_binary else _node_cards(plan))
    tables = []
    every = slice(None)
    for slot, i in enumerate(kept):
        var, ((node, parents),) = plan[i]
        index = tuple([evidence.get(a, every) if isinstance(a, str) else a
                       for a in (node, *parents)])
        tables.append(contraction.align(slot, reduced[i], _cpd_axes(var)[index]))
    return _Plan(False, conflict, query, tuple(target[q] for q in query), tuple(tables),
                 contraction)


Group = Sequence[tuple[str, Sequence[str | int]]]
"""The copies one factor covers: (node, parent nodes or intervened constants) per copy."""


def _split(reduced: Sequence[tuple[str, ...]], query: Sequence[str]
           ) -> tuple[list[int], list[list[int]]]:
    """(indices of the factors connected to a query node once the evidence is fixed, the
    other components' indices): ``relevance.split`` on the reduced scopes, no table built."""
    if not query:
        return list(range(len(reduced))), []
    kept, others = relevance.split(reduced, query)
    return kept, list(others.values())


def _doubtful(plan: Sequence[tuple[Variable, Group]], evidence: Mapping[str, int],
              others: Sequence[Sequence[int]]) -> list[int]:
    """The factors of the components whose evidence is not surely possible: they are
    eliminated too, so that impossible evidence is still refused. Reads the variables'
    CPDs only (no factor is built before the budget check); a component holding a factor
    over several copies that share their noise is not certified."""
    out: list[int] = []
    for members in others:
        groups = [plan[i] for i in members]
        if any(len(group) != 1 for _, group in groups) or not relevance.has_positive_witness(
                [(var, group[0][0], group[0][1]) for var, group in groups], evidence):
            out.extend(members)
    return out


def _copy_name(copies: Mapping[str, Mapping[str, Sequence[str | int]]], name: str,
               parents: Sequence[str | int], w: int, fresh: set[str]) -> str:
    for node, ps in copies.get(name, {}).items():
        if node not in fresh and list(ps) == list(parents):
            return node
    return f"{name}@{w}"


def _ancestral_nodes(copies: Mapping[str, Mapping[str, Sequence[str | int]]],
                     start: set[str]) -> set[str]:
    parents_of = {n: ps for by in copies.values() for n, ps in by.items()}
    seen: set[str] = set()
    stack = list(start)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        stack.extend(p for p in parents_of.get(n, ()) if isinstance(p, str))
    return seen


def _zero_evidence() -> float:
    raise InputError("the conditioning event has probability zero", field="evidence")


def rung1(world: World, target: Mapping[str, int], evidence: Mapping[str, int], *,
          memory_budget: int | None = None) -> float:
    """P(target | evidence) by variable elimination."""
    return multiworld_probability(world, [WorldSpec({}, target)], [WorldSpec({}, evidence)],
                                  memory_budget=memory_budget)


def rung2(world: World, target: Mapping[str, int], do: Mapping[str, int],
          evidence: Mapping[str, int], *, memory_budget: int | None = None) -> float:
    """P(target | do, evidence) by variable elimination on the mutilated graph."""
    return multiworld_probability(world, [WorldSpec(do, target)], [WorldSpec(do, evidence)],
                                  memory_budget=memory_budget)


def rung3(world: World, target: Mapping[str, int], do: Mapping[str, int],
          evidence: Mapping[str, int], *, memory_budget: int | None = None) -> float:
    """P(target_do | evidence) by variable elimination on the twin network."""
    return multiworld_probability(world, [WorldSpec(do, target)], [WorldSpec({}, evidence)],
                                  memory_budget=memory_budget)


def coupled_variables(world: World, worlds: Sequence[WorldSpec],
                      given: Sequence[WorldSpec]) -> tuple[str, ...]:
    """Variables whose mechanism the query reads at two or more parent settings per unit.

    In the multi-world network of the query (only the nodes the target and the
    evidence need), a variable with a single copy is read at one parent setting per
    unit, so only its CPD P(V | parents) enters the answer. A variable with two or
    more copies whose parents differ (after substituting the evidence) enters through
    the JOINT law of its response across parent rows — the cross-row coupling, which
    a CPT does not fix. Deterministic mechanisms (one response table) are never listed:
    every coupling gives them the same single table. An empty result means the answer is
    the same under every coupling of every CPT; a non-empty one names where it may differ
    (conservatively: two copies whose parent nodes differ are counted as two settings).
    """
    net = _network(world)
    specs = list(worlds) + list(given)
    node_of, copies, fresh = _build_nodes(world, net, specs)
    evidence: dict[str, int] = {}
    target: set[str] = set()
    for w, spec in enumerate(specs):
        for name, value in spec.event.items():
            at = node_of[w][name]
            if isinstance(at, str):
                if w < len(worlds):
                    target.add(at)
                else:
                    evidence[at] = value
    needed = _ancestral_nodes(copies, target | set(evidence))
    out: list[str] = []
    for name, by_node in copies.items():
        if len(world.var(name).responses) == 1:
            continue  # a deterministic mechanism has one response under every coupling
        settings = {tuple(evidence.get(p, p) if isinstance(p, str) else p for p in ps)
                    for n, ps in by_node.items() if n in needed and n not in fresh}
        if len(settings) > 1:
            out.append(name)
    return tuple(v.name for v in world.variables if v.name in out)


def nested_expectation(world: World, outer_do: Mapping[str, int], inner_do: Mapping[str, int],
                       mediators: Sequence[str], outcome: str, *,
                       memory_budget: int | None = None) -> float:
    """E[Y_{outer_do, M = M_{inner_do}}] by variable elimination (Pearl 2001 natural effects).

    Two worlds on shared noise: the inner world (``inner_do``) produces the mediators'
    values, the outer world (``outer_do``) borrows them and reads the outcome.
    """
    return multiworld_probability(world, nested_specs(outer_do, inner_do, mediators, outcome),
                                  [], memory_budget=memory_budget)


def nested_specs(outer_do: Mapping[str, int], inner_do: Mapping[str, int],
                 mediators: Sequence[str], outcome: str) -> list[WorldSpec]:
    """The two world specs of :func:`nested_expectation` (inner world first)."""
    return [WorldSpec(dict(inner_do), {}),
            WorldSpec(dict(outer_do), {outcome: 1}, borrow={m: 0 for m in mediators})]
