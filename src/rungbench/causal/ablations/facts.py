"""The causal facts an arm delivers: a world's edges, as sentences or as graph-store rows.

A world's edges are read from the public cases of that world under the same skin (the
mechanism and graph evidence of its other items), so every arm of a comparison delivers the
same facts over the same names; the text-equivalent arm renders exactly the rows the graph
arm stores. A *production* copy keeps each edge with probability ``keep``, decided by a hash
of (world, edge) — deterministic, identical across arms and samples, independent of the
agent — standing in for a memory that holds part of the mechanism.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from rungbench.causal.bench.records import PublicCase
from rungbench.causal.instrument.graph_store import Edge

Edges = tuple[tuple[str, str], ...]
"""Directed edges ``(cause, effect)``, sorted."""


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


def kept(world_id: str, edge: tuple[str, str], keep: float) -> bool:
    """Whether a production copy of ``world_id`` keeps ``edge`` (hash of world and edge)."""
    h = hashlib.sha256(f"rungbench.ablation.production/1|{world_id}|{edge[0]}|{edge[1]}"
                       .encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64 < keep


def arm_edges(edges: Edges, world_id: str, content: str | None, keep: float) -> Edges:
    """The edges an arm's text or graph holds: all (``oracle``) or a production copy."""
    if content is None:
        return ()
    if content == "oracle":
        return edges
    return tuple(e for e in edges if kept(world_id, e, keep))


def fact_sentences(edges: Edges) -> str:
    """The text-equivalent of a graph: one sentence per stored edge, in sorted order."""
    if not edges:
        return "Known causal facts: none recorded."
    return "Known causal facts:\n" + "\n".join(f"- {a} causes {b}." for a, b in edges)


def store_rows(edges: Edges) -> list[Edge]:
    """The graph-store rows holding ``edges`` (causal claims, asserted, unconditional)."""
    return [Edge(edge_id=f"e{i:03d}", cause=a, effect=b) for i, (a, b) in enumerate(edges)]
