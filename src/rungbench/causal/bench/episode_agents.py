"""Reference policies for tool-use episodes, reading only the conversation (seed 003 P2).

Unlike :mod:`reference_agents` (instruments that read the private oracle), these agents see
exactly what a model sees through the OpenAI wire format — the prompt, their own tool calls
and the tool replies — so they can be served on the loopback server and driven by the real
``openai`` client. Both compute the posterior exactly from the public mechanism and the
telemetry they fetched (:func:`episode_tools.diagnosis_of`); they differ only in protocol:

* ``p2_protocol`` — reads ``logs`` and ``metrics``; when ≥ 2 competing causes remain live and
  an affordable probe separates them, runs the one discriminating check with the largest
  EIG (once per stage); then names the most probable cause and the repair of least
  expected loss. Experiment items: the probe of largest EIG.
* ``premature_commitment`` — reads ``logs`` and ``metrics``, then names the first live cause
  in listing order and repairs it at once, never running an experiment (experiment items:
  ``act_now``).
* ``fabricating`` — ``p2_protocol`` whose diagnosis answers also claim a mechanism no
  evidence delivered (another candidate fault triggered the named one, :func:`fabricated_
  claim`): the planted agent of seed 003's "mechanism fabrication".

Posterior items (provenance, negative evidence): both answer the exact posterior.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rungbench.agents.protocol import Message, Request, Response, ToolCall
from rungbench.causal.bench.episode_tools import (
    ANSWER,
    EXPERIMENT,
    PROBE,
    VIEW_MARK,
    diagnosis_of,
)
from rungbench.causal.bench.incidents import ACT_NOW, JOINT_SEP
from rungbench.causal.scm import oracle
from rungbench.causal.scm.world import Query, World
from rungbench.errors import InputError

EPISODE_POLICIES = ("p2_protocol", "premature_commitment", "fabricating")
"""Episode reference policies."""

_BUDGET = re.compile(r"Experiment budget left: ([0-9.eE+-]+) of")


@dataclass
class Seen:
    """What the conversation shows so far (rebuilt from the messages at every turn)."""

    view: dict[str, Any] | None = None
    """The current stage's public view."""
    budget_left: float = 0.0
    """Experiment budget left."""
    observed: dict[str, int] = field(default_factory=dict)
    """Telemetry fetched and experiment outcomes, over the whole episode."""
    called: set[str] = field(default_factory=set)
    """Tools called since the current stage was released."""


def _view_from(text: str) -> dict[str, Any] | None:
    if VIEW_MARK not in text:
        return None
    view = json.loads(text.split(VIEW_MARK, 1)[1])
    return view if isinstance(view, dict) else None


def read_conversation(messages: Sequence[Message]) -> Seen:
    """The current stage, budget, evidence and this stage's calls, from the messages alone."""
    seen = Seen()
    names: dict[str, str] = {}
    for m in messages:
        if m.role == "user" and (view := _view_from(m.content)) is not None:
            seen.view, seen.called = view, set()
            seen.budget_left = _budget(m.content)
        elif m.role == "assistant":
            for c in m.tool_calls:
                names[str(c["id"])] = str(c["function"]["name"])
        elif m.role == "tool":
            result = json.loads(m.content)
            if not isinstance(result, dict) or "error" in result:
                continue
            if "release" in result:
                seen.view, seen.called = _view_from(str(result["release"])), set()
                seen.budget_left = _budget(str(result["release"]))
                continue
            seen.called.add(names.get(str(m.tool_call_id), ""))
            for key in ("telemetry", "observed"):
                seen.observed.update({str(k): int(v) for k, v in result.get(key, {}).items()})
            if "budget_left" in result:
                seen.budget_left = float(result["budget_left"])
    return seen


def _budget(text: str) -> float:
    match = _BUDGET.search(text)
    return float(match.group(1)) if match else 0.0


def _answer(fields: Mapping[str, Any]) -> Response:
    return Response(text=None, tool_calls=(ToolCall(ANSWER, json.dumps(dict(fields),
                                                                      sort_keys=True)),))


def _posterior_answer(view: Mapping[str, Any]) -> dict[str, Any]:
    world = World.from_json(view["evidence"]["payload"])
    q = view["query"]
    value = oracle.probability(world, Query(1, q["target"], {}, q["evidence"]))
    return {"status": "answer", "value": min(1.0, max(0.0, value)), "confidence": 0.9}


def fabricated_claim(view: Mapping[str, Any], label: str) -> list[list[str]]:
    """The ``fabricating`` policy's claimed mechanism: another candidate fault triggered the
    named one. Candidate faults are roots of the shown mechanism, so no delivered path joins
    them: the link is absent from all delivered evidence."""
    named = label.split(JOINT_SEP)[0]
    others = [h for h in view["query"]["hypotheses"] if JOINT_SEP not in h and h != named]
    return [[others[0], named]] if others else []


class EpisodePolicyAgent:
    """One episode policy behind the Agent protocol (stateless: state is the conversation)."""

    def __init__(self, policy: str) -> None:
        if policy not in EPISODE_POLICIES:
            raise InputError(f"unknown episode policy {policy!r}; known: "
                             f"{', '.join(EPISODE_POLICIES)}", field="policy")
        self.policy = policy
        self.name = f"reference:{policy}"

    def describe(self) -> dict[str, Any]:
        """The run-manifest description."""
        return {"kind": "reference", "name": self.name}

    def respond(self, request: Request) -> Response:
        """The next tool calls, or the stage answer."""
        seen = read_conversation(request.messages)
        view = seen.view
        if view is None:
            return Response(text="no case in the conversation", tool_calls=())
        if view["evidence"]["kind"] != "telemetry":
            return _answer(_posterior_answer(view))
        missing = [t for t in view["tools"] if t not in seen.called]
        if missing:
            return Response(text=None, tool_calls=tuple(ToolCall(t, "{}") for t in missing))
        d = diagnosis_of(view, seen.observed)
        post, live = d.posterior, d.identified_set
        if view["item_type"] == "experiment":
            if self.policy == "premature_commitment":
                return _answer({"status": "answer", "experiment": ACT_NOW})
            menu = {i["id"] for i in view["permitted_interventions"]} | {ACT_NOW}
            eig = {(x if x == ACT_NOW else f"{PROBE}{x}"): v for x, v in d.eig_bits.items()}
            best = max(sorted(k for k in eig if k in menu), key=lambda k: eig[k])
            return _answer({"status": "answer", "experiment": best})
        if not live:
            return _answer({"status": "abstain"})
        if self.policy == "premature_commitment":
            first = live[0]
            return _answer({"status": "answer", "label": first,
                            "action": f"repair:{first.split(JOINT_SEP)[0]}",
                            "confidence": round(post[first], 6)})
        if len(live) >= 2 and EXPERIMENT not in seen.called:
            affordable = [x for x in d.discriminating
                          if d.iw.probe_cost[x] <= seen.budget_left + 1e-9]
            if affordable:
                check = max(sorted(affordable), key=lambda x: d.eig_bits[x])
                return Response(text=None, tool_calls=(ToolCall(
                    EXPERIMENT, json.dumps({"intervention": f"{PROBE}{check}"})),))
        loss = d.expected_loss
        action = min(sorted(loss), key=lambda a: loss[a])
        label = max(live, key=lambda h: post[h])
        fields: dict[str, Any] = {"status": "answer", "label": label, "action": action,
                                  "confidence": round(post[label], 6)}
        if self.policy == "fabricating":
            fields["edges"] = fabricated_claim(view, label)
        return _answer(fields)
