"""The causal facts an arm delivers: a world's edges, as sentences or as graph-store rows.

A world's edges are read from the public cases of that world under the same skin (the
mechanism and graph evidence of its other items), so every arm of a comparison delivers the
same facts over the same names; the text-equivalent arm renders exactly the rows the graph
arm stores. A *production* copy keeps each edge with probability ``keep``, decided by a hash
of (world, edge) — deterministic, identical across arms and samples, independent of the
agent — standing in for a memory that holds part of the mechanism. It also holds, with
probability ``associations`` per pair, an *association row* for each confounded pair (two
variables with a common cause and no edge between them): the correlation-as-causation rows
an extractor writes from prose (seed 003, failure "Correlation-as-causation"). An untyped
store (the legacy ``causal_edges(cause, effect)`` table) cannot tell them apart and holds
every row as a causal claim; a typed store (proposal P5) keeps them as ``correlation`` rows,
which the query paths and tools do not follow.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from rungbench.causal.bench.records import PublicCase
from rungbench.causal.instrument.graph_store import Edge

Edges = tuple[tuple[str, str], ...]
"""Directed edges ``(cause, effect)``, sorted."""
Row = tuple[str, str, str]
"""One stored row ``(cause, effect, relation_kind)``."""
Rows = tuple[Row, ...]
"""The rows an arm's text or graph holds, sorted."""
CAUSAL = "causal_claim"
ASSOCIATION = "correlation"


def payload_edges(payload: Mapping[str, Any]) -> set[tuple[str, str]]:
    """Edges in an evidence payload: ``variables`` (mechanism) or ``graph`` lists of parents."""
    out: set[tuple[str, str]] = set()
    for key in ("variables", "graph"):
        listed = payload.get(key)
        if isinstance(listed, list):
            for v in listed:
                for parent in v.get("parents", []):
                    out.add((str(parent), str(v["name"])))
    return out


def world_edges(cases: Iterable[PublicCase]) -> dict[tuple[str, str], Edges]:
    """``(world_id, skin) -> edges`` of every world-skin that shows its graph in some case."""
    found: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for case in cases:
        edges = payload_edges(case.evidence.payload)
        if edges:
            found.setdefault((case.world_id, case.skin), set()).update(edges)
    return {k: tuple(sorted(v)) for k, v in found.items()}


def kept(world_id: str, edge: tuple[str, str], keep: float, what: str = "production") -> bool:
    """Whether a production copy of ``world_id`` keeps ``edge`` (hash of world and edge;
    ``what`` separates the draw of association rows from that of edges)."""
    tag = "rungbench.ablation.production/1" if what == "production" else \
        f"rungbench.ablation.{what}/1"
    h = hashlib.sha256(f"{tag}|{world_id}|{edge[0]}|{edge[1]}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64 < keep


def confounded_pairs(edges: Edges) -> Edges:
    """Pairs ``(u, v)``, ``u < v``, with a common parent and no edge either way, sorted."""
    parents: dict[str, set[str]] = {}
    for a, b in edges:
        parents.setdefault(b, set()).add(a)
    linked = set(edges) | {(b, a) for a, b in edges}
    children = sorted(parents)
    return tuple((u, v) for i, u in enumerate(children) for v in children[i + 1:]
                 if parents[u] & parents[v] and (u, v) not in linked)


def arm_rows(edges: Edges, world_id: str, content: str | None, keep: float,
             associations: float, typed: bool) -> Rows:
    """The rows an arm's text or graph holds: every edge (``oracle``), or a production copy
    (kept edges plus association rows); untyped rows are all causal claims."""
    if content is None:
        return ()
    if content == "oracle":
        return tuple((a, b, CAUSAL) for a, b in edges)
    rows = [(a, b, CAUSAL) for a, b in edges if kept(world_id, (a, b), keep)]
    rows += [(a, b, ASSOCIATION if typed else CAUSAL) for a, b in confounded_pairs(edges)
             if kept(world_id, (a, b), associations, "association")]
    return tuple(sorted(rows))


def causal_edges(rows: Rows) -> Edges:
    """The rows that are causal claims, as edges."""
    return tuple((a, b) for a, b, kind in rows if kind == CAUSAL)


def fact_sentences(rows: Rows) -> str:
    """The text-equivalent of a graph: one sentence per stored row, in sorted order."""
    if not rows:
        return "Known causal facts: none recorded."
    return "Known causal facts:\n" + "\n".join(
        f"- {a} causes {b}." if kind == CAUSAL else f"- {a} is associated with {b}."
        for a, b, kind in rows)


def store_rows(rows: Rows) -> list[Edge]:
    """The graph-store rows holding ``rows`` (asserted, unconditional)."""
    return [Edge(edge_id=f"e{i:03d}", cause=a, effect=b, relation_kind=kind)
            for i, (a, b, kind) in enumerate(rows)]
