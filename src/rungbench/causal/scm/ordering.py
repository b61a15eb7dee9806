"""Greedy elimination orders on the interaction (moral) graph of a set of factor scopes.

Four heuristics, each a greedy choice of the next variable to eliminate (Koller & Friedman
2009, section 9.4.3.2, for the first three):

- :func:`min_degree`: fewest neighbours;
- :func:`min_fill`: fewest fill edges (pairs of neighbours not yet adjacent);
- :func:`weighted_min_fill`: least fill *weight*, an edge weighing the product of its two
  variables' numbers of states, so a fill edge between two 64-state variables counts 1,024
  times one between binary variables;
- :func:`level_sweep`: eliminate the breadth-first levels of the graph one after the other
  from a pseudo-peripheral variable (George & Liu 1979, "An implementation of a
  pseudoperipheral node finder", ACM TOMS 5(3)), weighted min-fill within a level. Greedy
  fill opens several elimination fronts on a grid and merges them into wide tables (min-fill
  builds a 28-variable table on an 18x18 grid world whose sweep needs 19, measured); the
  sweep keeps one front, whose width is about one level.

Every function takes ``cards`` (states per variable; None: every variable binary) and
reports table sizes as products of cards. Ties always break the same way: by the
heuristic's secondary score (the neighbour count, or the entries of the table the step
builds), then by variable name, so an order depends on the scopes and cards only.

:func:`treewidth_lower_bound` is the minor-min-width bound (Gogate & Dechter, "A complete
anytime algorithm for treewidth", UAI 2004), the MMD+ bound with the min-d contraction
rule of Bodlaender, Koster & Wolle ("Contraction and treewidth lower bounds", Journal of
Graph Algorithms and Applications 10(1), 2006): no elimination order of the graph builds
all its tables over fewer variables.

The graph is held as one integer bitset of neighbours per variable, so eliminating a
variable, and re-scoring the variables within distance two of it, is a few integer
operations per neighbour rather than set constructions. Eliminating a variable in the
graph mirrors multiplying the factors that hold it: its neighbours at that moment are
exactly the scope of the table the step builds, so each order reports its largest table and
the entries it builds without replaying the scopes.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from rungbench.errors import InputError

Cards = Mapping[str, int]
"""States per variable (a variable absent from the mapping is binary)."""


@dataclass(frozen=True)
class Order:
    """An elimination order with the size of what it builds."""

    names: tuple[str, ...]
    """Variables in elimination order."""
    heuristic: str
    """The heuristic that chose it (``min_degree``, ``min_fill``, ``weighted_min_fill``,
    ``level_sweep``, or ``given`` for :func:`evaluate`)."""
    width: int
    """Variables of the widest table built (input scopes included)."""
    largest: int
    """Entries of the largest table built (input scopes included): the product of its
    variables' cards."""
    largest_scope: tuple[str, ...]
    """The variables of that table, sorted."""
    cost: int
    """Entries of all the products formed: per eliminated variable, the product of the cards
    of it and its neighbours."""
    lower_bound: int | None
    """No order of these scopes eliminating every variable but the kept ones builds its
    tables over fewer than this many variables (:func:`order_lower_bound`); None when not
    computed (``bound=False``)."""


@dataclass
class _Graph:
    """Neighbour bitsets over variables indexed in name order (ties break by name)."""

    names: list[str]
    """Variable of each bit."""
    neighbours: list[int]
    """Bitset of the neighbours of each variable (iterated with :func:`_bits`)."""
    cards: list[int]
    """States of each variable."""
    uniform: int | None
    """The common number of states when every variable has the same (then a table over k
    variables has uniform**k entries, with no pass over its variables)."""
    widest: int
    """Variables of the widest input scope."""
    biggest: tuple[int, int]
    """(entries, bitset) of the input scope with the most entries."""


def _cards_of(names: Sequence[str], cards: Cards | None) -> list[int]:
    if cards is None:
        return [2] * len(names)
    out = []
    for a in names:
        c = cards.get(a, 2)
        if isinstance(c, bool) or not isinstance(c, int) or c < 1:
            raise InputError(f"cards of {a!r} must be a positive integer, got {c!r}",
                             field=f"cards.{a}")
        out.append(c)
    return out


def _graph(scopes: Iterable[Sequence[str]], cards: Cards | None = None) -> _Graph:
    scopes = list(scopes)
    names = sorted({a for sc in scopes for a in sc})
    index = {a: i for i, a in enumerate(names)}
    card = _cards_of(names, cards)
    uniform = card[0] if card and all(c == card[0] for c in card) else None
    nb = [0] * len(names)
    widest, biggest = 0, (1, 0)
    for sc in scopes:
        mask = 0
        for a in sc:
            mask |= 1 << index[a]
        for a in sc:
            nb[index[a]] |= mask
        widest = max(widest, mask.bit_count())
        size = _entries_of(mask, card, uniform)
        if size > biggest[0]:
            biggest = (size, mask)
    for i in range(len(names)):
        nb[i] &= ~(1 << i)
    return _Graph(names, nb, card, uniform, widest, biggest)


def _entries_of(mask: int, card: Sequence[int], uniform: int | None) -> int:
    """Entries of a table over the variables of ``mask``: the product of their cards."""
    if uniform == 2:
        return 1 << mask.bit_count()
    if uniform is not None:
        return int(uniform ** mask.bit_count())
    return math.prod(card[i] for i in _bits(mask))


def _bits(mask: int) -> list[int]:
    """Indices of the set bits of ``mask``, ascending (peeled from the top: one fewer
    big-integer operation per bit than isolating the lowest)."""
    out = []
    while mask:
        top = mask.bit_length() - 1
        out.append(top)
        mask ^= 1 << top
    out.reverse()
    return out


def _eliminate(g: _Graph, v: int) -> list[int]:
    """Connect the neighbours of ``v`` pairwise and remove ``v``; return its neighbours."""
    nb = g.neighbours
    mine = nb[v]
    around = _bits(mine)
    drop = 1 << v
    for a in around:
        nb[a] = (nb[a] | mine) & ~(drop | (1 << a))
    nb[v] = 0
    return around


Limit = tuple[int, int]
"""(largest table, total entries) of the best order so far: a search that cannot beat it
stops."""


class _Tally:
    """The width, largest table and cost of an order, step by step."""

    def __init__(self, g: _Graph) -> None:
        self.g = g
        self.width = g.widest
        self.largest, self.scope = g.biggest
        self.cost = 0
        self.names: list[str] = []

    def step(self, v: int, limit: Limit | None = None) -> bool:
        """Count the table eliminating ``v`` builds now (over its current neighbours);
        False when the order can no longer beat ``limit``: a table larger than its largest,
        or as large and more entries in all."""
        g = self.g
        mine = g.neighbours[v]
        size = _entries_of(mine, g.cards, g.uniform)
        if limit is not None and (size > limit[0] or (
                max(size, self.largest) == limit[0]
                and self.cost + size * g.cards[v] > limit[1])):
            return False
        self.cost += size * g.cards[v]
        self.width = max(self.width, mine.bit_count())
        if size > self.largest:
            self.largest, self.scope = size, mine
        self.names.append(g.names[v])
        return True

    def order(self, heuristic: str, bound: int | None) -> Order:
        scope = tuple(self.g.names[i] for i in _bits(self.scope))
        return Order(tuple(self.names), heuristic, self.width, self.largest, scope, self.cost,
                     bound)


class _Triangles:
    """Per variable, the (weighted) edges among its neighbours, kept exact as the graph
    changes; the fill of v is then the weight of all pairs of its neighbours minus that,
    with no pass over v's neighbours' neighbourhoods.

    Unweighted (``weights`` None), an edge counts 1; weighted, edge a-b counts
    weights[a] * weights[b]."""

    def __init__(self, g: _Graph, weights: Sequence[int] | None) -> None:
        self.g = g
        self.unit = weights is None
        """Unweighted: every edge counts 1."""
        self.w: Sequence[int] = () if weights is None else weights
        """Weight of each variable (empty when unweighted)."""
        nb = g.neighbours
        self.count = [self._pairs_within(v) for v in range(len(nb))]

    def _sum(self, mask: int) -> int:
        """Weight of the variables of ``mask`` (their number, unweighted)."""
        if self.unit:
            return mask.bit_count()
        w = self.w
        return sum(w[i] for i in _bits(mask))

    def _pairs_within(self, v: int) -> int:
        nb = self.g.neighbours
        if self.unit:
            return sum((nb[v] & nb[a]).bit_count() for a in _bits(nb[v])) >> 1
        w = self.w
        return sum(w[a] * self._sum(nb[v] & nb[a]) for a in _bits(nb[v])) >> 1

    def fill(self, v: int) -> int:
        """Weight of the edges eliminating ``v`` would add between its neighbours."""
        mine = self.g.neighbours[v]
        if self.unit:
            d = mine.bit_count()
            return d * (d - 1) // 2 - self.count[v]
        w = self.w
        weights = [w[i] for i in _bits(mine)]
        total = sum(weights)
        return (total * total - sum(x * x for x in weights)) // 2 - self.count[v]

    def eliminate(self, v: int) -> set[int]:
        """Remove ``v`` and connect its neighbours; return the variables whose count or
        degree changed."""
        if self.unit:
            return self._eliminate_unweighted(v)
        nb, count = self.g.neighbours, self.count
        w = self.w
        mine = nb[v]
        around = _bits(mine)
        changed = set(around)
        keep = ~(1 << v)
        wv = w[v]
        for a in around:  # the edges v-u among a's neighbours go with v
            count[a] -= wv * self._sum(nb[a] & mine)
            nb[a] &= keep
        for x in around:  # each fill edge x-y joins their common neighbours' neighbourhoods
            for y in _bits(mine & ~nb[x] & ~((2 << x) - 1)):
                common = nb[x] & nb[y]
                edge = w[x] * w[y]
                for c in _bits(common):
                    count[c] += edge
                    changed.add(c)
                shared = self._sum(common)
                count[x] += shared * w[y]
                count[y] += shared * w[x]
                nb[x] |= 1 << y
                nb[y] |= 1 << x
        nb[v] = 0
        return changed

    def _eliminate_unweighted(self, v: int) -> set[int]:
        """:meth:`eliminate` counting edges (the hot loop of min-fill on binary worlds,
        kept free of weights)."""
        nb, count = self.g.neighbours, self.count
        mine = nb[v]
        around = _bits(mine)
        changed = set(around)
        keep = ~(1 << v)
        for a in around:
            count[a] -= (nb[a] & mine).bit_count()
            nb[a] &= keep
        for x in around:
            for y in _bits(mine & ~nb[x] & ~((2 << x) - 1)):
                common = nb[x] & nb[y]
                for c in _bits(common):
                    count[c] += 1
                    changed.add(c)
                shared = common.bit_count()
                count[x] += shared
                count[y] += shared
                nb[x] |= 1 << y
                nb[y] |= 1 << x
        nb[v] = 0
        return changed


def _todo(g: _Graph, keep: Iterable[str]) -> set[int]:
    kept = set(keep)
    return {i for i, a in enumerate(g.names) if a not in kept}


def _bound(g: _Graph, keep: Iterable[str], bound: bool) -> int | None:
    """:func:`order_lower_bound` of the graph (before any elimination), or None."""
    if not bound:
        return None
    names = set(g.names)
    kept = sum(1 for a in set(keep) if a in names)
    return _order_bound(_mmd(list(g.neighbours)), g.widest, kept)


def min_degree(scopes: Iterable[Sequence[str]], keep: Iterable[str],
               cards: Cards | None = None, *, bound: bool = True) -> Order:
    """Greedy min-degree order of every variable not in ``keep``, ties by name (a heap with
    lazy deletion: only the eliminated variable's neighbours change degree). ``cards``
    sizes the tables; the choice counts neighbours, whatever their states."""
    return _checked_search("min_degree", scopes, keep, cards, bound)


def min_fill(scopes: Iterable[Sequence[str]], keep: Iterable[str],
             cards: Cards | None = None, *, bound: bool = True) -> Order:
    """Greedy min-fill order (ties: fewest neighbours, then name). ``cards`` sizes the
    tables; the choice counts fill edges, whatever their variables' states."""
    return _checked_search("min_fill", scopes, keep, cards, bound)


def weighted_min_fill(scopes: Iterable[Sequence[str]], keep: Iterable[str],
                      cards: Cards | None = None, *, bound: bool = True) -> Order:
    """Greedy weighted min-fill order: least fill weight, a fill edge a-b weighing
    cards[a] * cards[b] (Koller & Friedman 2009, 9.4.3.2); ties: fewest entries in the
    product the step forms (the variable and its neighbours), then name. With every
    variable of one card it is :func:`min_fill`'s order."""
    return _checked_search("weighted_min_fill", scopes, keep, cards, bound)


def level_sweep(scopes: Iterable[Sequence[str]], keep: Iterable[str],
                cards: Cards | None = None, *, bound: bool = True) -> Order:
    """Eliminate breadth-first level after level from a pseudo-peripheral variable of each
    connected component (components in order of their lowest name); within a level,
    weighted min-fill (ties: fewest entries in the step's product, then name)."""
    return _checked_search("level_sweep", scopes, keep, cards, bound)


def best_order(scopes: Iterable[Sequence[str]], keep: Iterable[str],
               cards: Cards | None = None, *, heuristics: Sequence[str] = (),
               bound: bool = True, incumbent: Order | None = None) -> Order:
    """The order of ``heuristics`` (names of :data:`HEURISTICS`, tried in turn) building the
    fewest entries in its largest table, then in all (then the first tried), or
    ``incumbent`` when none beats it. A heuristic is abandoned as soon as one of its tables
    is larger than the best order's largest so far (it cannot win).
    ``weighted_min_fill`` is skipped when every variable has one card: it is
    ``min_fill``'s order then."""
    scopes = list(scopes)
    keep = list(keep)
    best = incumbent
    lower = None
    for name in heuristics:
        g = _graph(scopes, cards)
        if name == "weighted_min_fill" and g.uniform is not None and "min_fill" in heuristics:
            continue
        if bound and lower is None:
            lower = _bound(g, keep, True)
        limit = None if best is None else (best.largest, best.cost)
        found = _search(name, g, keep, lower, limit)
        if found is not None and (best is None
                                  or (found.largest, found.cost) < (best.largest, best.cost)):
            best = found
    if best is None:
        raise InputError("no heuristic given", field="heuristics")
    if bound and best.lower_bound is None:
        g = _graph(scopes, cards)
        best = replace(best, lower_bound=_bound(g, keep, True))
    return best


def _checked_search(name: str, scopes: Iterable[Sequence[str]], keep: Iterable[str],
                    cards: Cards | None, bound: bool) -> Order:
    g = _graph(scopes, cards)
    keep = list(keep)
    found = _search(name, g, keep, _bound(g, keep, bound), None)
    assert found is not None  # no limit: never abandoned
    return found


def _search(name: str, g: _Graph, keep: Sequence[str], lower: int | None,
            limit: Limit | None) -> Order | None:
    """Run heuristic ``name`` on ``g`` (consumed); None when abandoned past ``limit``."""
    todo, tally = _todo(g, keep), _Tally(g)
    nb = g.neighbours
    if name == "min_degree":
        done = _min_degree(g, todo, tally, limit)
    elif name == "min_fill":
        tri = _Triangles(g, None)
        done = _greedy(todo, tri, lambda v: (tri.fill(v), nb[v].bit_count()), tally, limit)
    elif name == "weighted_min_fill":
        tri, entries = _weighted(g)
        done = _greedy(todo, tri, lambda v: (tri.fill(v), entries(v)), tally, limit)
    elif name == "level_sweep":
        level = _levels(nb)
        tri, entries = _weighted(g)
        done = _greedy(todo, tri, lambda v: (level[v], tri.fill(v), entries(v)), tally,
                       limit)
    else:
        raise InputError(f"unknown order heuristic {name!r}; choose one of "
                         f"{sorted(HEURISTICS)}", field="heuristics")
    return tally.order(name, lower) if done else None


def _min_degree(g: _Graph, todo: set[int], tally: _Tally, limit: Limit | None) -> bool:
    nb = g.neighbours
    heap = [(nb[v].bit_count(), v) for v in todo]
    heapq.heapify(heap)
    while todo:
        degree, best = heapq.heappop(heap)
        if best not in todo or nb[best].bit_count() != degree:
            continue  # a stale entry
        if not tally.step(best, limit):
            return False
        for a in _eliminate(g, best):
            if a in todo:
                heapq.heappush(heap, (nb[a].bit_count(), a))
        todo.discard(best)
    return True


Score = Callable[[int], tuple[int, ...]]
"""The greedy score of eliminating a variable next (smallest first; ties by index)."""


def _greedy(todo: set[int], tri: _Triangles, score: Score, tally: _Tally,
            limit: Limit | None) -> bool:
    """Eliminate every variable of ``todo``, smallest ``score`` first (a heap with lazy
    deletion, each score kept exact: only the variables an elimination changes are
    re-scored); False when it can no longer beat ``limit`` (abandoned)."""
    now = {v: score(v) for v in todo}
    heap = [(sc, v) for v, sc in now.items()]
    heapq.heapify(heap)
    while todo:
        sc, best = heapq.heappop(heap)
        if best not in todo or now[best] != sc:
            continue  # a stale entry
        if not tally.step(best, limit):
            return False
        changed = tri.eliminate(best)
        todo.discard(best)
        for v in changed & todo:
            new = score(v)
            if new != now[v]:
                now[v] = new
                heapq.heappush(heap, (new, v))
    return True


def _weighted(g: _Graph) -> tuple[_Triangles, Callable[[int], int]]:
    """Weighted fill counts and the entries of the product eliminating v forms (v and its
    neighbours). With one common card, every fill weight is that card squared times the
    fill and the entries grow with the neighbours: the unweighted counts order the same."""
    nb, card, uniform = g.neighbours, g.cards, g.uniform
    tri = _Triangles(g, None if uniform is not None else card)
    return tri, lambda v: card[v] * _entries_of(nb[v], card, uniform)


def _bfs(nb: Sequence[int], start: int) -> list[int]:
    """The breadth-first levels (bitsets) of ``start``'s component."""
    levels, seen, frontier = [], 1 << start, 1 << start
    while frontier:
        levels.append(frontier)
        reach = 0
        for v in _bits(frontier):
            reach |= nb[v]
        frontier = reach & ~seen
        seen |= frontier
    return levels


def _peripheral(nb: Sequence[int], start: int) -> list[int]:
    """The levels from a pseudo-peripheral variable of ``start``'s component (George & Liu
    1979): move to the fewest-neighbours variable of the last level (ties: lowest index)
    while that lengthens the level structure."""
    levels = _bfs(nb, start)
    while True:
        far = min(_bits(levels[-1]), key=lambda v: (nb[v].bit_count(), v))
        again = _bfs(nb, far)
        if len(again) <= len(levels):
            return levels
        levels = again


def _levels(nb: Sequence[int]) -> list[int]:
    """A sweep rank per variable: (component, level) flattened, components in order of
    their lowest index, each from a pseudo-peripheral variable of fewest neighbours."""
    rank = [0] * len(nb)
    done, base = 0, 0
    for v in range(len(nb)):
        if done >> v & 1:
            continue
        members = _bfs(nb, v)
        component = 0
        for layer in members:
            component |= layer
        start = min(_bits(component), key=lambda u: (nb[u].bit_count(), u))
        levels = _peripheral(nb, start)
        for depth, layer in enumerate(levels):
            for u in _bits(layer):
                rank[u] = base + depth
        base += len(levels)
        done |= component
    return rank


def evaluate(scopes: Iterable[Sequence[str]], keep: Iterable[str], names: Sequence[str],
             cards: Cards | None = None, *, bound: bool = True) -> Order:
    """The tables of a given elimination order ``names`` (every variable of the scopes not
    in ``keep``, each once): its width, largest table and cost, heuristic ``given``."""
    g = _graph(scopes, cards)
    index = {a: i for i, a in enumerate(g.names)}
    todo = _todo(g, keep)
    if sorted(index.get(a, -1) for a in names) != sorted(todo):
        raise InputError("the order must list every variable not kept, each once",
                         field="names")
    lower = _bound(g, keep, bound)
    tally = _Tally(g)
    for a in names:
        tally.step(index[a])
        _eliminate(g, index[a])
    return tally.order("given", lower)


def treewidth_lower_bound(scopes: Iterable[Sequence[str]]) -> int:
    """Minor-min-width (MMD+, min-d rule) of the interaction graph of ``scopes``: a lower
    bound on its treewidth (module docstring).

    Repeatedly take a variable of fewest neighbours (ties: name), record its degree, and
    contract it into its neighbour of fewest neighbours (ties: name); a minor's treewidth
    never exceeds the graph's, and a graph's treewidth is at least its minimum degree, so
    the largest degree recorded is a lower bound. A k-clique gives k-1, a tree 1. The
    bound counts variables, so it does not depend on their states.
    """
    return _mmd(list(_graph(scopes).neighbours))


def _mmd(nb: list[int]) -> int:
    """:func:`treewidth_lower_bound` on neighbour bitsets (consumed)."""
    alive = set(range(len(nb)))
    heap = [(nb[v].bit_count(), v) for v in alive]
    heapq.heapify(heap)
    best = 0
    while heap:
        degree, v = heapq.heappop(heap)
        if v not in alive or nb[v].bit_count() != degree:
            continue  # a stale entry
        best = max(best, degree)
        alive.discard(v)
        mine = nb[v]
        nb[v] = 0
        if not mine:
            continue
        around = _bits(mine)
        u = min(around, key=lambda a: (nb[a].bit_count(), a))
        drop = 1 << v
        for a in around:
            nb[a] &= ~drop
        nb[u] |= mine & ~(1 << u)
        for a in _bits(mine & ~(1 << u)):
            nb[a] |= 1 << u
        for a in around:
            heapq.heappush(heap, (nb[a].bit_count(), a))
    return best


def _order_bound(mmd: int, widest: int, kept: int) -> int:
    """The lower bound on an order's width (variables of its widest table): the widest
    input scope, or the treewidth bound ``mmd`` when it reaches the number of kept
    variables (a complete order finishing with the kept ones builds its tables over at most
    kept - 1 variables after the others are gone, so the others' tables reach ``mmd``)."""
    return max(widest, mmd if mmd >= kept else 0)


def order_lower_bound(scopes: Iterable[Sequence[str]], keep: Iterable[str]) -> int:
    """No elimination of every variable of ``scopes`` but ``keep`` builds its tables over
    fewer variables (:func:`_order_bound` of :func:`treewidth_lower_bound`)."""
    g = _graph(scopes)
    kept = sum(1 for a in set(keep) if a in set(g.names))
    return _order_bound(_mmd(list(g.neighbours)), g.widest, kept)


HEURISTICS: dict[str, Callable[..., Order]] = {
    "min_degree": min_degree, "min_fill": min_fill, "weighted_min_fill": weighted_min_fill,
    "level_sweep": level_sweep,
}
"""The order heuristics by name."""
