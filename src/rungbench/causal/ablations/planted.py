"""Planted reference agents: deterministic agents that follow the tool protocol.

They read only what a model reads — the messages of the request, tool results included —
never request metadata, so they run behind the loopback server through the real ``openai``
client exactly as a model would. Each answers a discovery item ("which causal graph …",
answer format ``status|edges|confidence``) from the causal facts it actually obtained and
abstains on every other item (identically in every arm, so deltas come from the facts):

* :class:`FactReader` (``planted:reader``) — uses facts from either source: edges returned by
  ``causal()`` (it asks ``what does X cause?`` for every observed variable when the tool is
  offered) or sentences ``- X causes Y.`` in the context. Information, not format, helps it:
  A10 − A9 ≈ 0 and A9 − A3 > 0.
* ``planted:graph_only`` — the same agent reading only ``causal()`` results, so the graph
  *format* helps it: A10 − A9 > 0.
* ``planted:bare`` — never uses facts (every arm alike).
* ``planted:counterfactual`` — the reader that also consults the counterfactual module on
  point-valued rung-3 items (``… if X=v had been set, how likely is Y=w?``, ``Had X=v been
  forced, what is P(Y=w)?``; never the bounds items) and answers ``not_identifiable`` when
  the module says the outcome's value is not computable; without it, it abstains there. Its
  planted effect: A2 − A4 on accuracy is exactly the share of cells that are
  non-identifiable rung-3 items whose outcome lies downstream of the treatment in A2's graph
  (and it pays for it in false non-identifications on the identifiable ones).
* :class:`RoutingBypasser` (``planted:bypass``) — never calls a tool, whatever it is offered,
  and declares every value question ``not_identifiable`` (confidence 0.5; it abstains on
  discovery items): wrong on every identifiable value item. Where the detector flags the
  question and the arm's graph holds the answer its failure is a routing bypass
  (:mod:`rungbench.causal.ablations.labels`); elsewhere it is ``unexplained``.
* :class:`WorldIdEcho` — the same abstention on every item, its rationale naming a world id
  it was handed: it stands in for an agent that read the harness's private records, so it
  has no registered name (no agent can echo an id nobody leaked to it). Every cell it writes
  carries ``oracle_leakage``.
* :class:`InvalidAnswerer` (``planted:invalid``) — every answer fails the answer check (a
  confidence of 2), so every cell is ``invalid``: no comparison may give a verdict from it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rungbench.agents.protocol import Message, Request, Response, ToolCall
from rungbench.errors import InputError

DISCOVERY_FORMAT = "Answer format: status|edges|confidence"
GRAPH_EVIDENCE = "Evidence (graph_joint):"
VALUE_FORMAT = "Answer format: status|value|confidence"
VALUE_ANSWER = "Answer format: status|value|"
"""The start of every value question's answer format (with or without bounds)."""
_ASSIGNED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=[01]")
_FACT = re.compile(r"^- (\S+) causes (\S+)\.$", re.MULTILINE)
_NAME = r"([A-Za-z_][A-Za-z0-9_]*)"
_RUNG3_POINT = (re.compile(rf"if {_NAME}=[01] had been set, how likely is {_NAME}=[01]\?"),
                re.compile(rf"Had {_NAME}=[01] been forced, what is P\({_NAME}=[01]\)\?"))
"""The bench's two wordings of a point-valued rung-3 question (treatment, outcome)."""
_EVIDENCE = re.compile(r"Evidence \([a-z_]+\):\n")


def _user(request: Request) -> str:
    for m in request.messages:
        if m.role == "user":
            return m.content
    return ""


def evidence_names(text: str) -> list[str]:
    """Observed variable names listed in the evidence's joint table (empty if none)."""
    found = _EVIDENCE.search(text)
    if found is None:
        return []
    body = text[found.end():].split("\n\n", 1)[0]
    try:
        payload = json.loads(body)
    except json.JSONDecodeError:
        return []
    joint = payload.get("joint") if isinstance(payload, dict) else None
    names = joint.get("names") if isinstance(joint, dict) else None
    return [str(n) for n in names] if isinstance(names, list) else []


def rung3_point(question: str) -> tuple[str, str] | None:
    """(treatment, outcome) of a point-valued rung-3 question, None for any other."""
    for pattern in _RUNG3_POINT:
        found = pattern.search(question)
        if found is not None:
            return found.group(1), found.group(2)
    return None


def text_facts(text: str) -> set[tuple[str, str]]:
    """Edges stated as ``- X causes Y.`` sentences."""
    return set(_FACT.findall(text))


def tool_facts(messages: tuple[Message, ...]) -> set[tuple[str, str]]:
    """Edges named by ``causal()`` results in tool messages."""
    out: set[tuple[str, str]] = set()
    for m in messages:
        if m.role != "tool":
            continue
        try:
            result = json.loads(m.content)
        except json.JSONDecodeError:
            continue
        for path in result.get("paths", []) if isinstance(result, dict) else []:
            for edge in path.get("edges", []):
                out.add((str(edge["cause"]), str(edge["effect"])))
    return out


def offered(request: Request) -> set[str]:
    """Names of the tools a request offers."""
    return {str(t.get("function", {}).get("name")) for t in request.tools}


class FactReader:
    """Answers discovery items from the facts it obtained (see the module docstring)."""

    def __init__(self, name: str = "planted:reader", *, text: bool = True,
                 graph: bool = True, counterfactual: bool = False) -> None:
        self.name = name
        self.text = text
        self.graph = graph
        self.counterfactual = counterfactual

    def describe(self) -> dict[str, Any]:
        """Identity for a run manifest."""
        return {"kind": "planted", "name": self.name, "text": self.text, "graph": self.graph,
                "counterfactual": self.counterfactual}

    def respond(self, request: Request) -> Response:
        """One turn: query ``causal()`` once per variable, then answer or abstain."""
        user = _user(request)
        rung3 = rung3_point(user.split("\n\n", 1)[0])
        if rung3 is not None and self.counterfactual and "counterfactual" in offered(request):
            return self._counterfactual(request, *rung3)
        if GRAPH_EVIDENCE in user and VALUE_FORMAT in user and self.graph \
                and "identify" in offered(request):
            return self._identification(request, user)
        if DISCOVERY_FORMAT not in user:
            return _submit({"status": "abstain", "claim_text": "not a structure question"})
        names = evidence_names(user)
        asked = any(m.role == "tool" for m in request.messages)
        if self.graph and "causal" in offered(request) and not asked and names:
            return Response(text=None, tool_calls=tuple(
                ToolCall("causal", json.dumps({"query": f"what does {n} cause?"}))
                for n in names))
        facts: set[tuple[str, str]] = set()
        if self.text:
            facts |= text_facts(user)
        if self.graph:
            facts |= tool_facts(request.messages)
        listed = set(names)
        edges = sorted(e for e in facts if e[0] in listed and e[1] in listed)
        if not edges:
            return _submit({"status": "abstain", "claim_text": "no causal facts obtained"})
        return _submit({"status": "answer", "edges": [list(e) for e in edges],
                        "confidence": 0.9, "claim_text": "edges from the causal facts"})


    def _counterfactual(self, request: Request, treatment: str, outcome: str) -> Response:
        """Rung-3 question: ask the counterfactual module; decline when it says the value is
        not computable, abstain otherwise."""
        results = [json.loads(m.content) for m in request.messages if m.role == "tool"]
        if not results:
            return Response(text=None, tool_calls=(ToolCall("counterfactual", json.dumps(
                {"treatment": treatment, "outcome": outcome})),))
        if results[-1].get("status") == "not_identifiable":
            return _submit({"status": "not_identifiable", "confidence": 0.8,
                            "claim_text": "counterfactual module: no mechanisms stored"})
        return _submit({"status": "abstain", "claim_text": "counterfactual value not computed"})

    def _identification(self, request: Request, user: str) -> Response:
        """Graph-and-joint question: ask ``identify``; decline when it says not identifiable."""
        named = _ASSIGNED.findall(user.split("\n\n", 1)[0])
        results = [json.loads(m.content) for m in request.messages if m.role == "tool"]
        if not results and len(named) >= 2:
            return Response(text=None, tool_calls=(ToolCall("identify", json.dumps(
                {"treatment": named[0], "outcome": named[1]})),))
        if results and results[-1].get("status") == "not_identifiable":
            return _submit({"status": "not_identifiable", "confidence": 0.8,
                            "claim_text": "identify: no back-door or front-door set"})
        return _submit({"status": "abstain", "claim_text": "identifiable; not computed"})


def _submit(fields: dict[str, Any]) -> Response:
    return Response(text=None, tool_calls=(ToolCall("submit_answer", json.dumps(fields)),))


class RoutingBypasser:
    """Answers without ever calling a tool (see the module docstring)."""

    name = "planted:bypass"

    def describe(self) -> dict[str, Any]:
        """Identity for a run manifest."""
        return {"kind": "planted", "name": self.name}

    def respond(self, request: Request) -> Response:
        """One turn: declare a value question not identifiable, abstain on any other."""
        if VALUE_ANSWER not in _user(request):
            return _submit({"status": "abstain", "claim_text": "not a value question"})
        return _submit({"status": "not_identifiable", "confidence": 0.5,
                        "claim_text": "answered from the text alone, no tool consulted"})


class WorldIdEcho:
    """Abstains on every item with a rationale naming a world id (see the module docstring)."""

    name = "planted:world_id_echo"

    def __init__(self, world_id: str) -> None:
        self.world_id = world_id

    def describe(self) -> dict[str, Any]:
        """Identity for a run manifest (the echoed id is not recorded here)."""
        return {"kind": "planted", "name": self.name}

    def respond(self, request: Request) -> Response:
        """One turn: abstain, naming the world id in the rationale."""
        return _submit({"status": "abstain",
                        "claim_text": f"this looks like world {self.world_id} again"})


class InvalidAnswerer:
    """Submits an answer the runner's answer check rejects, in every arm."""

    name = "planted:invalid"

    def describe(self) -> dict[str, Any]:
        """Identity for a run manifest."""
        return {"kind": "planted", "name": self.name}

    def respond(self, request: Request) -> Response:
        """One turn: an answer with a confidence outside [0, 1]."""
        return _submit({"status": "abstain", "confidence": 2.0,
                        "claim_text": "a confidence no answer check accepts"})


PLANTED = ("reader", "graph_only", "bare", "counterfactual", "bypass", "invalid")
"""Names of the planted agents (``planted:<name>``)."""


def planted_agent(name: str) -> FactReader | RoutingBypasser | InvalidAnswerer:
    """Return planted agent ``name`` (with or without the ``planted:`` prefix)."""
    short = name.removeprefix("planted:")
    if short == "reader":
        return FactReader("planted:reader")
    if short == "graph_only":
        return FactReader("planted:graph_only", text=False)
    if short == "bare":
        return FactReader("planted:bare", text=False, graph=False)
    if short == "counterfactual":
        return FactReader("planted:counterfactual", counterfactual=True)
    if short == "bypass":
        return RoutingBypasser()
    if short == "invalid":
        return InvalidAnswerer()
    raise InputError(f"unknown planted agent {name!r}; known: "
                     + ", ".join(f"planted:{p}" for p in PLANTED), field="agent")
