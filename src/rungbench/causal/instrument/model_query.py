"""``causal()`` answered by a model: the control matrix run on an agent of one's own (seed 003,
"Matched controls").

Each call shows the model the condition's graph store as text (every stored edge with its
direction, polarity, condition and relation kind, and the alias table) and the harness's
exact query, and offers one required tool, ``answer_query``, whose arguments are the
response contract of :mod:`~rungbench.causal.instrument.http_contract` (status, paths of
edges, error). The tool call's arguments go through the one harness parser like any tool's
return, so a model that answers in prose, or with arguments off the contract, is counted
``unparseable`` and a provider failure ``crash`` — never a miss. What the model is shown
differs between rows only by the store's contents: query text, harness and parser are
byte-identical, as the control matrix requires.
"""

from __future__ import annotations

import json
from typing import Any

from rungbench.agents.outcomes import CallFailure
from rungbench.agents.protocol import Agent, Message, Request
from rungbench.causal.instrument.graph_store import GraphStore
from rungbench.causal.instrument.query import ERROR_CODES, STATUSES, ToolRequest
from rungbench.evidence.canonical import digest

ANSWER = "answer_query"
"""The one tool the model is offered."""
EDGE_SCHEMA = {
    "type": "object",
    "properties": {"cause": {"type": "string"}, "effect": {"type": "string"},
                   "polarity": {"type": "string", "enum": ["+", "-"]},
                   "condition": {"type": ["string", "null"]},
                   "relation_kind": {"type": "string"}},
    "required": ["cause", "effect", "polarity", "condition", "relation_kind"],
}
ANSWER_TOOL = {
    "type": "function",
    "function": {
        "name": ANSWER,
        "description": "Answer the causal query from the graph shown, and from nothing else.",
        "parameters": {
            "type": "object",
            "properties": {
                "status": {"type": "string", "enum": list(STATUSES)},
                "paths": {"type": "array", "items": {
                    "type": "object", "properties": {"edges": {"type": "array",
                                                               "items": EDGE_SCHEMA}},
                    "required": ["edges"]}},
                "error": {"type": ["object", "null"], "properties": {
                    "code": {"type": "string", "enum": list(ERROR_CODES)},
                    "message": {"type": "string"}}},
                "notes": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["status", "paths", "error"],
        },
    },
}
"""The answer tool: the JSON response contract as its parameters."""
SYSTEM = (
    "You are the causal() query of a knowledge graph. Answer only from the graph shown. "
    "Queries are 'does X cause Y?' (the paths from X to Y), 'what does X cause?' (every "
    "effect of X with its path) or 'what causes Y?' (every cause of Y with its path). "
    "Return each path as the stored edges from the cause toward the effect, with their "
    "polarity, condition and relation kind; never invent an edge. status is 'found' with at "
    "least one path, 'none' when the nodes exist and nothing connects them, 'error' with an "
    "error code (empty_query, malformed_query, missing_node) otherwise.")
"""The instruction every call opens with."""


def graph_text(store: GraphStore) -> str:
    """The store as the model reads it: one line per edge, then the aliases."""
    lines = ["Edges (cause -> effect | polarity | condition | relation kind):"]
    lines += [f"{e.cause} -> {e.effect} | {e.polarity} | {e.condition or 'always'} | "
              f"{e.relation_kind}" for e in store.edges()]
    aliases = store.aliases()
    if aliases:
        lines.append("Aliases (name = canonical node):")
        lines += [f"{alias} = {node}" for alias, node in sorted(aliases.items())]
    return "\n".join(lines)


def query_request(store_text: str, query: str) -> Request:
    """The frozen request of one call (its case id is a digest of what it shows)."""
    user = f"{store_text}\n\nQuery: {query}"
    return Request(case_id=f"causal-query-{digest([store_text, query])[7:23]}",
                   messages=(Message("system", SYSTEM), Message("user", user)),
                   tools=(ANSWER_TOOL,), tool_choice="required")


class ModelQuery:
    """A :class:`~rungbench.causal.instrument.query.CausalTool` that asks ``agent``."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.name = f"model:{agent.name}"

    def __call__(self, request: ToolRequest) -> Any:
        """Ask the model; return its ``answer_query`` arguments (or its prose, which the
        harness parser then counts unparseable). A provider failure raises."""
        store = GraphStore.open(request.store)
        try:
            text = graph_text(store)
        finally:
            store.close()
        try:
            response = self.agent.respond(query_request(text, request.query))
        except CallFailure as failure:  # the harness counts it as a crash, with its reason
            raise RuntimeError(f"{failure.outcome.value}: {failure.detail}") from None
        for call in response.tool_calls:
            if call.name == ANSWER:
                try:
                    return json.loads(call.arguments)
                except json.JSONDecodeError:
                    return call.arguments
        return response.text or ""
