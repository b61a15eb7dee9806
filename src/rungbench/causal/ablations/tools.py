"""The tools an arm offers: ``causal`` and ``counterfactual`` over a graph store, ``calc`` and
``identify``.

Schemas are OpenAI function-calling tools, identical wherever an arm offers them. The
environment (:class:`CausalToolbox`) is built fresh for every attempt of every cell from the
frozen cell's ``metadata["tool_env"]`` — the edges the arm's graph holds, the latent nodes the
case declares, the query path — into a scratch SQLite graph store in a private temporary
directory, and deleted when the attempt ends (state reset between worlds; seed 003 "Benchmark
memories go to the scratch namespace and are deleted after the run").

* ``causal(query)`` — the instrument's ``causal()`` contract (docs/CONTRACTS.md §11) over that
  store, through the arm's query path (:func:`~rungbench.causal.instrument.query.naive` or
  :func:`~rungbench.causal.instrument.query.fixed`).
* ``counterfactual(treatment, outcome)`` — the counterfactual module (arm A4 turns it off):
  do-surgery on the stored graph that severs the treatment's *incoming* edges (seed 003
  proposal P4, Pearl's do, not the nullification of outgoing edges), then: no directed path
  left from treatment to outcome → the outcome keeps its factual value (``identifiable``,
  ``no_directed_path``); otherwise ``not_identifiable``, because a store of edges holds no
  structural equations or exogenous-noise model and a counterfactual value needs both (P4:
  "return not_identifiable for numeric counterfactuals rather than a number").
* ``calc(expression)`` — exact arithmetic on numbers with ``+ - * / **`` and parentheses.
* ``identify(treatment, outcome)`` — back-door, then front-door search over the arm's graph
  (latent nodes never adjusted for); says ``not_identifiable`` when neither criterion holds.

The graph tools read only the store's causal-claim rows; in an untyped store (the legacy
table) every row is one, association rows included.
"""

from __future__ import annotations

import ast
import itertools
import json
import operator
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import networkx as nx

from rungbench.agents.protocol import Request
from rungbench.causal.ablations.facts import CAUSAL, Row, causal_edges, store_rows
from rungbench.causal.instrument.graph_store import write_store
from rungbench.causal.instrument.query import ToolRequest, fixed, naive
from rungbench.errors import InputError

CAUSAL_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "causal",
        "description": ("Query the causal graph store. Forms: 'does X cause Y?', "
                        "'what does X cause?', 'what causes Y?'."),
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "One of the three forms."}},
            "required": ["query"],
            "additionalProperties": False,
        },
    },
}
CALC_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "calc",
        "description": "Exact arithmetic: numbers, + - * / ** and parentheses.",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string", "description": "e.g. (0.2*0.3)+0.1"}},
            "required": ["expression"],
            "additionalProperties": False,
        },
    },
}
IDENTIFY_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "identify",
        "description": ("Decide from the stored graph whether P(outcome | do(treatment)) is "
                        "identifiable by the back-door or front-door criterion."),
        "parameters": {
            "type": "object",
            "properties": {"treatment": {"type": "string"}, "outcome": {"type": "string"}},
            "required": ["treatment", "outcome"],
            "additionalProperties": False,
        },
    },
}
COUNTERFACTUAL_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "counterfactual",
        "description": ("Counterfactual module over the stored graph: had treatment been set "
                        "otherwise in this episode, could outcome have differed, and can its "
                        "value be computed from the store?"),
        "parameters": {
            "type": "object",
            "properties": {"treatment": {"type": "string"}, "outcome": {"type": "string"}},
            "required": ["treatment", "outcome"],
            "additionalProperties": False,
        },
    },
}
SCHEMAS: dict[str, dict[str, Any]] = {"causal": CAUSAL_TOOL,
                                      "counterfactual": COUNTERFACTUAL_TOOL,
                                      "calc": CALC_TOOL, "identify": IDENTIFY_TOOL}
"""Tool name -> schema."""
NO_MECHANISM = ("the graph store holds edges only, no structural equations or exogenous-noise "
                "model; a counterfactual value needs both")
"""Why the counterfactual module declines a value (seed 003 proposal P4)."""

MAX_EXPRESSION = 400
"""Longest ``calc`` expression accepted (characters)."""


def tool_schemas(names: Sequence[str]) -> tuple[dict[str, Any], ...]:
    """The schemas of ``names`` in the canonical order causal, counterfactual, calc,
    identify."""
    return tuple(SCHEMAS[n] for n in SCHEMAS if n in names)


_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.Pow: operator.pow,
}


def calc(expression: str) -> dict[str, Any]:
    """Evaluate an arithmetic expression exactly as floats; ``{"error"}`` for anything else."""
    if len(expression) > MAX_EXPRESSION:
        return {"error": f"expression longer than {MAX_EXPRESSION} characters"}
    try:
        tree = ast.parse(expression, mode="eval")
        value = _eval(tree.body)
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"value": value}


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) \
            and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _eval(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise ValueError("exponent larger than 64")
        return float(_BINARY[type(node.op)](left, right))
    raise ValueError(f"not arithmetic: {type(node).__name__}")


def identify(edges: Sequence[Sequence[str]], latent: Sequence[str], treatment: str,
             outcome: str) -> dict[str, Any]:
    """Back-door (smallest observed set), else front-door, else not identifiable."""
    g = nx.DiGraph()
    g.add_edges_from((a, b) for a, b in edges)
    for name in (treatment, outcome):
        if name not in g:
            return {"error": f"unknown node {name!r}"}
    hidden = set(latent)
    observed = [n for n in sorted(g.nodes) if n not in hidden and n not in (treatment, outcome)]
    if not nx.has_path(g, treatment, outcome):
        return {"status": "identifiable", "criterion": "no_directed_path", "set": []}
    cut = g.copy()
    cut.remove_edges_from(list(g.out_edges(treatment)))
    descendants = nx.descendants(g, treatment)
    candidates = [n for n in observed if n not in descendants]
    for size in range(len(candidates) + 1):
        for z in itertools.combinations(candidates, size):
            if nx.is_d_separator(cut, {treatment}, {outcome}, set(z)):
                return {"status": "identifiable", "criterion": "back_door", "set": list(z)}
    mediators = [n for n in observed if n in descendants]
    for size in range(1, len(mediators) + 1):
        for m in itertools.combinations(mediators, size):
            if _front_door(g, treatment, outcome, set(m)):
                return {"status": "identifiable", "criterion": "front_door", "set": list(m)}
    return {"status": "not_identifiable", "criterion": None, "set": []}


def counterfactual(edges: Sequence[Sequence[str]], treatment: str, outcome: str,
                   nodes: Sequence[str] = ()) -> dict[str, Any]:
    """Do-surgery on ``treatment`` (incoming edges severed), then whether ``outcome`` can
    differ and whether its value is computable from a store of edges. ``nodes`` adds the
    store's nodes no causal edge touches."""
    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    g.add_edges_from((a, b) for a, b in edges)
    for name in (treatment, outcome):
        if name not in g:
            return {"error": f"unknown node {name!r}"}
    severed = sorted([a, treatment] for a, _ in g.in_edges(treatment))
    cut = g.copy()
    cut.remove_edges_from(list(g.in_edges(treatment)))
    if treatment == outcome or nx.has_path(cut, treatment, outcome):
        return {"status": "not_identifiable", "severed": severed, "outcome_downstream": True,
                "reason": NO_MECHANISM}
    return {"status": "identifiable", "criterion": "no_directed_path", "severed": severed,
            "outcome_downstream": False,
            "value": "the outcome keeps its factual value in this episode"}


def _front_door(g: nx.DiGraph, t: str, y: str, m: set[str]) -> bool:
    blocked = g.copy()
    blocked.remove_nodes_from(m)
    if nx.has_path(blocked, t, y):
        return False
    cut_t = g.copy()
    cut_t.remove_edges_from(list(g.out_edges(t)))
    if not nx.is_d_separator(cut_t, {t}, m, set()):
        return False
    cut_m = g.copy()
    cut_m.remove_edges_from([e for n in m for e in g.out_edges(n)])
    return bool(nx.is_d_separator(cut_m, m, {y}, {t}))


class CausalToolbox:
    """The tools of one attempt of one cell, over a scratch graph store deleted at close."""

    def __init__(self, request: Request) -> None:
        env = request.metadata.get("tool_env")
        if not isinstance(env, dict):
            raise InputError(f"cell {request.case_id!r} carries no tool_env",
                             field="metadata.tool_env")
        self.tools = tuple(str(t) for t in env.get("tools", ()))
        self.rows = tuple(_row(r) for r in env.get("edges", ()))
        self.edges = causal_edges(self.rows)
        self.latent = tuple(str(n) for n in env.get("latent", ()))
        self.query = naive if env.get("query") == "naive" else fixed
        self._dir: Path | None = None
        self._store: str | None = None
        if "causal" in self.tools:
            self._dir = Path(tempfile.mkdtemp(prefix="rungbench-ablation-"))
            self._store = str(self._dir / "graph.sqlite")
            write_store(self._store, store_rows(self.rows)).close()

    def offers(self, name: str) -> bool:
        """Whether ``name`` is one of this arm's tools (never ``submit_answer``)."""
        return name in self.tools

    def call(self, name: str, arguments: str) -> dict[str, Any]:
        """Execute one tool call; a bad argument string is answered with ``{"error"}``."""
        try:
            args = json.loads(arguments)
        except (json.JSONDecodeError, RecursionError):
            return {"error": "arguments are not JSON"}
        if not isinstance(args, dict):
            return {"error": "arguments are not a JSON object"}
        if name == "causal" and self._store is not None:
            query = args.get("query")
            if not isinstance(query, str):
                return {"error": "query must be a string"}
            return self.query(ToolRequest(self._store, query)).to_json()
        if name == "calc":
            expression = args.get("expression")
            return calc(expression) if isinstance(expression, str) else {
                "error": "expression must be a string"}
        if name in ("identify", "counterfactual"):
            t, y = args.get("treatment"), args.get("outcome")
            if not isinstance(t, str) or not isinstance(y, str):
                return {"error": "treatment and outcome must be strings"}
            if name == "counterfactual":
                nodes = sorted({n for a, b, _ in self.rows for n in (a, b)})
                return counterfactual(self.edges, t, y, nodes)
            return identify(self.edges, self.latent, t, y)
        return {"error": f"tool {name!r} is not offered"}

    def close(self) -> None:
        """Delete the scratch store."""
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def _row(row: Sequence[Any]) -> Row:
    """A tool environment's row: ``[cause, effect, kind]``, or ``[cause, effect]`` (a causal
    claim) as frozen before rows were typed."""
    if len(row) == 2:
        return (str(row[0]), str(row[1]), CAUSAL)
    return (str(row[0]), str(row[1]), str(row[2]))


def causal_toolbox(request: Request) -> CausalToolbox:
    """The :data:`~rungbench.execute.tools.ToolboxFactory` of ablation runs."""
    return CausalToolbox(request)
