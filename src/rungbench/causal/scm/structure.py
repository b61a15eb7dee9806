"""Markov equivalence: skeletons, v-structures and the CPDAG (seed 003 "Endpoints and formulas").

Two DAGs are Markov equivalent iff they share skeleton and v-structures
(Verma & Pearl 1990). The CPDAG keeps the v-structure arrows and every arrow
compelled by Meek's orientation rules R1–R3 (Meek 1995); R4 is never needed
when starting from the v-structures of a DAG without background knowledge.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

Edge = tuple[str, str]
"""A directed edge (a, b) meaning a -> b."""


@dataclass(frozen=True)
class MixedGraph:
    """A partially directed graph: directed arrows plus undirected links."""

    directed: frozenset[Edge]
    """Arrows a -> b."""
    undirected: frozenset[frozenset[str]]
    """Undirected links {a, b}."""

    def skeleton(self) -> frozenset[frozenset[str]]:
        """Return the adjacencies ignoring direction."""
        return frozenset(frozenset(e) for e in self.directed) | self.undirected

    def v_structures(self) -> frozenset[tuple[str, str, str]]:
        """Return unshielded colliders (a, c, b) with a < b among the directed arrows."""
        return v_structures_of(self.directed, self.skeleton())

    def to_json(self) -> dict[str, list[list[str]]]:
        """Return ``{"directed": [...], "undirected": [...]}`` in sorted order."""
        return {
            "directed": [list(e) for e in sorted(self.directed)],
            "undirected": sorted(sorted(e) for e in self.undirected),
        }


def skeleton_of(edges: Iterable[Edge]) -> frozenset[frozenset[str]]:
    """Return the skeleton (unordered adjacencies) of directed edges."""
    return frozenset(frozenset(e) for e in edges if e[0] != e[1])


def v_structures_of(
    arrows: Iterable[Edge], skeleton: frozenset[frozenset[str]]
) -> frozenset[tuple[str, str, str]]:
    """Return every (a, c, b), a < b, with a -> c <- b and a, b non-adjacent in ``skeleton``."""
    arrow_set = set(arrows)
    one_way = {(a, b) for a, b in arrow_set if (b, a) not in arrow_set}
    parents: dict[str, list[str]] = {}
    for a, b in sorted(one_way):
        parents.setdefault(b, []).append(a)
    out = set()
    for child, pas in parents.items():
        for i, a in enumerate(pas):
            for b in pas[i + 1 :]:
                if frozenset((a, b)) not in skeleton:
                    lo, hi = sorted((a, b))
                    out.add((lo, child, hi))
    return frozenset(out)


def _meek_step(directed: set[Edge], undirected: set[frozenset[str]]) -> bool:
    """Apply one Meek rule (R1, R2 or R3) once; return whether an edge was oriented."""
    adjacent = {frozenset(e) for e in directed} | undirected
    for link in sorted(undirected, key=sorted):
        x, y = sorted(link)
        for a, b in ((x, y), (y, x)):
            if _compelled(a, b, directed, undirected, adjacent):
                undirected.discard(link)
                directed.add((a, b))
                return True
    return False


def _compelled(
    a: str,
    b: str,
    directed: set[Edge],
    undirected: set[frozenset[str]],
    adjacent: set[frozenset[str]],
) -> bool:
    """Return whether a - b must be oriented a -> b by Meek R1, R2 or R3."""
    # R1: c -> a - b with c, b non-adjacent.
    if any(t == a and frozenset((c, b)) not in adjacent for c, t in directed if c != b):
        return True
    # R2: a -> c -> b.
    if any((a, c) in directed and (c, b) in directed for c in _nodes(directed)):
        return True
    # R3: a - c -> b and a - d -> b with c, d non-adjacent.
    mids = [
        c for c in _nodes(directed)
        if frozenset((a, c)) in undirected and (c, b) in directed
    ]
    return any(
        frozenset((c, d)) not in adjacent for i, c in enumerate(mids) for d in mids[i + 1 :]
    )


def _nodes(directed: set[Edge]) -> set[str]:
    return {v for e in directed for v in e}


def cpdag_of(edges: Iterable[Edge]) -> MixedGraph:
    """Return the CPDAG (essential graph) of the DAG with ``edges``."""
    edge_list = sorted(set(edges))
    skeleton = skeleton_of(edge_list)
    vs = v_structures_of(edge_list, skeleton)
    directed: set[Edge] = set()
    for a, c, b in vs:
        directed.add((a, c))
        directed.add((b, c))
    undirected = {link for link in skeleton if not any(frozenset(e) == link for e in directed)}
    while _meek_step(directed, undirected):
        pass
    return MixedGraph(frozenset(directed), frozenset(undirected))


def same_mec(edges: Iterable[Edge], cpdag: MixedGraph) -> bool:
    """Return whether the answered graph is a DAG with the CPDAG's skeleton and v-structures.

    A graph with a directed cycle (including a pair listed both ways) is in no
    Markov equivalence class of DAGs, whatever its skeleton.
    """
    edge_list = list(edges)
    if not is_acyclic(edge_list):
        return False
    skeleton = skeleton_of(edge_list)
    return skeleton == cpdag.skeleton() and v_structures_of(edge_list, skeleton) == (
        cpdag.v_structures()
    )


def mixed_graph(directed: Iterable[Edge], undirected: Iterable[Edge]) -> MixedGraph:
    """Build a :class:`MixedGraph` from edge lists as stored in records."""
    return MixedGraph(
        frozenset((a, b) for a, b in directed),
        frozenset(frozenset((a, b)) for a, b in undirected),
    )


def mec_size(edges: Iterable[Edge]) -> int:
    """Return the number of DAGs in the Markov equivalence class of ``edges`` (brute force).

    Enumerates orientations of the CPDAG's undirected links; fine for the small
    graphs of the benchmark (at most ~12 undirected links).
    """
    cp = cpdag_of(edges)
    links = sorted(sorted(link) for link in cp.undirected)
    count = 0
    for mask in range(1 << len(links)):
        oriented = set(cp.directed)
        for i, (a, b) in enumerate(links):
            oriented.add((a, b) if mask >> i & 1 else (b, a))
        if is_acyclic(oriented) and same_mec(oriented, cp):
            count += 1
    return count


def is_acyclic(edges: Iterable[Edge]) -> bool:
    """Return whether the directed graph has no cycle (Kahn's algorithm)."""
    edge_set = set(edges)
    nodes = _nodes(edge_set)
    indeg = {v: 0 for v in nodes}
    for _, b in edge_set:
        indeg[b] += 1
    queue = [v for v, d in indeg.items() if d == 0]
    seen = 0
    while queue:
        v = queue.pop()
        seen += 1
        for a, b in edge_set:
            if a == v:
                indeg[b] -= 1
                if indeg[b] == 0:
                    queue.append(b)
    return seen == len(nodes)
