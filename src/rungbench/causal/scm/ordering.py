"""Greedy elimination orders on the interaction (moral) graph of a set of factor scopes.

Two treewidth heuristics (Koller & Friedman 2009, section 9.4.3.2): min-degree (min-weight
for binary variables) and min-fill. The graph is held as one integer bitset of neighbours
per variable, so eliminating a variable, and re-scoring the variables within distance two
of it, is a few integer operations per neighbour rather than set constructions: the cold
compile of a dense 60-node query spent most of its time in the set-based min-fill.

Eliminating a variable in the graph mirrors multiplying the factors that hold it: its
neighbours at that moment are exactly the scope of the table the step builds, so each
order reports its largest table and the entries it builds without replaying the scopes.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Order:
    """An elimination order with the size of what it builds."""

    names: tuple[str, ...]
    """Variables in elimination order."""
    width: int
    """Variables of the largest table built (input scopes included)."""
    cost: int
    """Entries of all the products formed (2**(neighbours + 1) per eliminated variable)."""


@dataclass
class _Graph:
    """Neighbour bitsets over variables indexed in name order (ties break by name)."""

    names: list[str]
    """Variable of each bit."""
    neighbours: list[int]
    """Bitset of the neighbours of each variable (iterated with :func:`_bits`)."""
    widest: int
    """Variables of the largest input scope."""


def _graph(scopes: Iterable[Sequence[str]]) -> _Graph:
    scopes = list(scopes)
    names = sorted({a for sc in scopes for a in sc})
    index = {a: i for i, a in enumerate(names)}
    nb = [0] * len(names)
    for sc in scopes:
        mask = 0
        for a in sc:
            mask |= 1 << index[a]
        for a in sc:
            nb[index[a]] |= mask
    for i in range(len(names)):
        nb[i] &= ~(1 << i)
    return _Graph(names, nb, max((len(set(sc)) for sc in scopes), default=0))


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


class _Triangles:
    """Per variable, the edges among its neighbours, kept exact as the graph changes; the
    fill of v is then C(deg v, 2) minus that count, with no pass over v's neighbours."""

    def __init__(self, g: _Graph) -> None:
        self.g = g
        nb = g.neighbours
        self.count = [sum((nb[v] & nb[a]).bit_count() for a in _bits(nb[v])) >> 1
                      for v in range(len(nb))]

    def fill(self, v: int) -> int:
        """Edges eliminating ``v`` would add between its neighbours."""
        d = self.g.neighbours[v].bit_count()
        return d * (d - 1) // 2 - self.count[v]

    def eliminate(self, v: int) -> set[int]:
        """Remove ``v`` and connect its neighbours; return the variables whose count or
        degree changed."""
        nb, count = self.g.neighbours, self.count
        mine = nb[v]
        around = _bits(mine)
        changed = set(around)
        keep = ~(1 << v)
        for a in around:  # the edges v-u among a's neighbours go with v
            count[a] -= (nb[a] & mine).bit_count()
            nb[a] &= keep
        for x in around:  # each fill edge x-y joins their common neighbours' neighbourhoods
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


def min_degree(scopes: Iterable[Sequence[str]], keep: Iterable[str]) -> Order:
    """Greedy min-degree order of every variable not in ``keep``, ties by name (a heap with
    lazy deletion: only the eliminated variable's neighbours change degree)."""
    g = _graph(scopes)
    nb, todo = g.neighbours, _todo(g, keep)
    heap = [(nb[v].bit_count(), v) for v in todo]
    heapq.heapify(heap)
    order, width, cost = [], g.widest, 0
    while todo:
        degree, best = heapq.heappop(heap)
        if best not in todo or nb[best].bit_count() != degree:
            continue  # a stale entry
        width, cost = max(width, degree), cost + 2 ** (degree + 1)
        for a in _eliminate(g, best):
            if a in todo:
                heapq.heappush(heap, (nb[a].bit_count(), a))
        todo.discard(best)
        order.append(g.names[best])
    return Order(tuple(order), width, cost)


def min_fill(scopes: Iterable[Sequence[str]], keep: Iterable[str]) -> Order:
    """Greedy min-fill order (ties: fewest neighbours, then name); a heap with lazy
    deletion, each score kept exact through the edge count among the variable's
    neighbours, updated only where an elimination changes it."""
    g = _graph(scopes)
    nb, todo = g.neighbours, _todo(g, keep)
    tri = _Triangles(g)
    score = {v: (tri.fill(v), nb[v].bit_count()) for v in todo}
    heap = [(sc, v) for v, sc in score.items()]
    heapq.heapify(heap)
    order, width, cost = [], g.widest, 0
    while todo:
        sc, best = heapq.heappop(heap)
        if best not in todo or score[best] != sc:
            continue  # a stale entry
        degree = nb[best].bit_count()
        width, cost = max(width, degree), cost + 2 ** (degree + 1)
        changed = tri.eliminate(best)
        todo.discard(best)
        order.append(g.names[best])
        for v in changed & todo:
            new = (tri.fill(v), nb[v].bit_count())
            if new != score[v]:
                score[v] = new
                heapq.heappush(heap, (new, v))
    return Order(tuple(order), width, cost)
