"""Failure labels of ablation cells: routing bypass and oracle leakage (seed 003 "Failure
taxonomy"), on top of the mechanical labels the bench scorer's rows get.

**Routing bypass** — "Detector flagged opportunity; no tool call; graph held the answer". A
failed cell (:data:`~rungbench.causal.bench.taxonomy.FAILED_OUTCOMES`) gets it when all three
hold:

(a) the opportunity detector flags the case's question: the arm's routing gate's frozen
    detector when it has one (the verdict frozen in the cell), else the registered default
    detector :data:`DEFAULT_DETECTOR`; the row says which (``opportunity.source``);
(b) the deciding attempt made no call of a graph tool
    (:data:`~rungbench.causal.ablations.arms.GRAPH_TOOLS`);
(c) the arm's graph held the answer: the cell offered ``causal()``, and it, through the
    arm's own query path, asked the case's queries (:func:`case_queries`) over the rows the
    arm held (``tool_env.edges``),
    returns a non-empty set of edges, and that set equals what the repaired query
    (:func:`~rungbench.causal.instrument.query.fixed`) returns over the world's true edges
    (what the oracle arm holds). A store that answers with a different edge set — a missing
    edge, an association row read as a claim, a naive query's invented orientation — did not
    hold the answer; an arm without a graph holds nothing.

**Oracle leakage** — "Validation world identifiers found in Piper's memory or reasoning". Any
cell, whatever its verdict, whose writing (every turn's response and every tool call's
arguments, of every attempt: rationale, answer fields, tool arguments) names a world id of the
bench the arm ran on — the agent is never shown one (``cells.case_text`` strips it) — or a
variable name unique to a validation cohort passed in (:class:`Needles`; pass names only for a
run on another split, as a validation case legitimately names its own variables). The scan is
:mod:`rungbench.causal.ablations.contamination`'s.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rungbench.causal.ablations.arms import GATES, GRAPH_TOOLS
from rungbench.causal.ablations.contamination import Needles, name_hits, world_id_hits
from rungbench.causal.ablations.facts import CAUSAL, Rows, store_rows
from rungbench.causal.bench.records import PublicCase
from rungbench.causal.bench.taxonomy import (
    FAILED_OUTCOMES,
    with_oracle_leakage,
    with_routing_bypass,
)
from rungbench.causal.instrument.detector import Detector
from rungbench.causal.instrument.graph_store import write_store
from rungbench.causal.instrument.query import ToolRequest, fixed, naive

DEFAULT_DETECTOR = GATES[0]
"""The registered default opportunity detector, used for arms without a routing gate."""

Edge = tuple[str, str]


def case_queries(case: PublicCase) -> tuple[str, ...]:
    """The ``causal()`` queries that answer the case's question.

    A question with a structured query asks whether each treatment (its ``do`` variables, or
    for a rung-1 question its ``evidence`` variables) causes each target: ``does T cause Y?``.
    A question without one (discovery: the graph over the observed variables) asks ``what
    does X cause?`` for every variable the evidence's joint table lists.
    """
    query = case.query
    if query is None:
        joint = case.evidence.payload.get("joint")
        names = joint.get("names", []) if isinstance(joint, dict) else []
        return tuple(f"what does {n} cause?" for n in names)
    treatments = sorted(query.get("do") or query.get("evidence") or {})
    targets = sorted(query.get("target") or {})
    return tuple(f"does {t} cause {y}?" for t in treatments for y in targets if t != y)


def answer_edges(result: Mapping[str, Any]) -> frozenset[Edge]:
    """The (cause, effect) edges on the paths of one ``causal()`` result (contract JSON)."""
    return frozenset((str(e["cause"]), str(e["effect"]))
                     for path in result.get("paths", []) for e in path.get("edges", []))


@functools.lru_cache(maxsize=4096)
def graph_answer(rows: Rows, queries: tuple[str, ...], query_path: str) -> frozenset[Edge]:
    """The edges ``causal()`` returns for ``queries`` over a scratch store of ``rows``,
    through the ``naive`` or ``fixed`` query path (empty for an empty store)."""
    if not rows or not queries:
        return frozenset()
    tool = naive if query_path == "naive" else fixed
    folder = Path(tempfile.mkdtemp(prefix="rungbench-labels-"))
    try:
        store = str(folder / "graph.sqlite")
        write_store(store, store_rows(rows)).close()
        found: frozenset[Edge] = frozenset()
        for q in queries:
            found |= answer_edges(tool(ToolRequest(store, q)).to_json())
        return found
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def graph_held_answer(held: Rows, true_edges: Iterable[Edge], queries: tuple[str, ...],
                      query_path: str) -> bool:
    """Condition (c): the held rows answer ``queries`` non-empty and as the true graph does."""
    got = graph_answer(held, queries, query_path)
    truth = graph_answer(tuple(sorted((a, b, CAUSAL) for a, b in true_edges)), queries,
                         "fixed")
    return bool(got) and got == truth


def gate_opportunity(routing: Mapping[str, Any]) -> dict[str, Any]:
    """Condition (a) as a row records it for a gated arm: the gate's frozen verdict."""
    return {"source": "arm_gate", "detector": str(routing["detector"]),
            "flagged": bool(routing["opportunity"])}


def default_opportunity(detector: Detector, question: str) -> dict[str, Any]:
    """Condition (a) as a row records it for an arm without a gate: the registered default
    detector's verdict on the question."""
    return {"source": f"default:{DEFAULT_DETECTOR}", "detector": detector.version,
            "flagged": bool(detector.detect(question).opportunity)}


def graph_tool_calls(tools_called: Sequence[str]) -> int:
    """Condition (b)'s count: calls of a graph tool among the deciding attempt's calls."""
    return sum(1 for t in tools_called if t in GRAPH_TOOLS)


def leaked_needles(writings: Iterable[tuple[str, str]], needles: Needles) -> list[str]:
    """World ids and validation-unique names found in a cell's writing, sorted."""
    found: set[str] = set()
    for where, text in writings:
        found |= {h.needle for h in (*world_id_hits(where, text, needles),
                                     *name_hits(where, text, needles))}
    return sorted(found)


def is_routing_bypass(row: Mapping[str, Any]) -> bool:
    """A failed cell, flagged by the detector, with no graph-tool call, whose graph held the
    answer (the module docstring's (a), (b) and (c))."""
    return (row["outcome"] in FAILED_OUTCOMES and bool(row["opportunity"]["flagged"])
            and row["graph_tool_calls"] == 0 and bool(row["graph_held_answer"]))


def cell_labels(row: Mapping[str, Any], mechanical: Sequence[str]) -> list[str]:
    """A cell's labels: the scorer's ``mechanical`` labels of its verdict, with routing
    bypass and oracle leakage added where the row shows them."""
    labels = list(mechanical)
    if is_routing_bypass(row):
        labels = with_routing_bypass(labels)
    if row["leaks"]:
        labels = with_oracle_leakage(labels)
    return labels

