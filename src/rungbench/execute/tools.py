"""Multi-turn tool use inside one cell: an episode of model turns and tool calls, bounded.

A cell whose run is given a :data:`ToolboxFactory` is an *episode*: the frozen request is
sent; while the reply calls only tools the cell's :class:`ToolEnvironment` offers, each call
is executed, logged as a ``tool_call`` record, and answered in a ``tool`` message, and the
grown conversation is sent again. The episode ends at the first reply that calls anything
else (the answer tool, or no tool), or when the cell's :class:`Budget` (tool calls, tokens)
would be exceeded; the reply that ends it is the cell's response, classified as any
single-turn response is.

Domain-free: which tools exist, and what state they read, is the factory's business. The
factory is called once per attempt, so every attempt starts from a fresh environment (state
reset between worlds and between retries); the environment is closed when the attempt ends.
Budgets come from the frozen cell (``Request.metadata["budget"]``), so they are part of the
schedule's digest.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from rungbench.agents.protocol import Agent, Message, Request, Response, ToolCall, Usage
from rungbench.errors import InputError
from rungbench.evidence.canonical import bytes_digest, digest

TOOL_CALL = "tool_call"
"""Event kind of one executed tool call (written inside an open attempt)."""


class ToolEnvironment(Protocol):
    """The tools one attempt of one cell may call, over state private to that attempt."""

    def offers(self, name: str) -> bool:
        """Whether ``name`` is a tool this environment executes (not the answer tool)."""
        ...

    def call(self, name: str, arguments: str) -> dict[str, Any]:
        """Execute tool ``name`` on the raw argument string; return a JSON-ready result.

        A bad argument string is the model's mistake, answered with ``{"error": ...}``,
        never an exception.
        """
        ...

    def close(self) -> None:
        """Release the attempt's state (scratch stores, temporary files)."""
        ...


ToolboxFactory = Callable[[Request], ToolEnvironment]
"""Builds a fresh environment for one attempt of the cell holding ``request``."""


@dataclass(frozen=True)
class Budget:
    """What one episode may spend before it must answer."""

    max_tool_calls: int = 8
    """Tool calls executed at most (the reply that would exceed it ends the episode)."""
    max_tokens: int = 32_000
    """Prompt plus completion tokens summed over turns; a reply reaching it that still asks
    for tools ends the episode (its calls are not executed)."""

    @classmethod
    def of(cls, request: Request) -> Budget:
        """The budget a frozen request carries in ``metadata["budget"]`` (defaults if none)."""
        raw = request.metadata.get("budget")
        if raw is None:
            return cls()
        try:
            budget = cls(int(raw["max_tool_calls"]), int(raw["max_tokens"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"cell {request.case_id!r}: bad budget {raw!r} ({exc})",
                             field="metadata.budget") from None
        if budget.max_tool_calls < 0 or budget.max_tokens < 1:
            raise InputError(f"cell {request.case_id!r}: budget {raw!r} out of range",
                             field="metadata.budget")
        return budget

    def to_json(self) -> dict[str, int]:
        """Return the budget as stored in request metadata."""
        return {"max_tool_calls": self.max_tool_calls, "max_tokens": self.max_tokens}


@dataclass(frozen=True)
class Episode:
    """What one attempt's episode produced."""

    response: Response
    """The reply that ended the episode (the cell's response), with usage summed over turns."""
    turns: int
    """Model turns sent."""
    tool_calls: int
    """Tool calls executed."""
    stop: str
    """``answered`` (a reply called no environment tool), ``tool_budget`` or ``token_budget``."""


Recorder = Callable[[dict[str, Any]], None]
"""Receives each ``tool_call`` record body (the runner adds cell, digest and attempt)."""
Keeper = Callable[[dict[str, Any]], str]
"""Stores a JSON object; returns its digest (the run's object store)."""


def wire_call(call_id: str, call: ToolCall) -> dict[str, Any]:
    """A tool call in the OpenAI wire format, as an assistant message carries it."""
    return {"id": call_id, "type": "function",
            "function": {"name": call.name, "arguments": call.arguments}}


def run_episode(
    agent: Agent, request: Request, env: ToolEnvironment, budget: Budget, *,
    record: Recorder, keep: Keeper,
) -> Episode:
    """Send ``request`` and serve the agent's tool calls until it answers or the budget ends.

    Every executed call is passed to ``record`` (tool, argument and result digests, the
    tokens, latency and cost of the turn that issued it, the result's stored digest) before
    the next turn is sent. A :class:`~rungbench.agents.outcomes.CallFailure` of any turn
    propagates: the attempt failed as a whole and a retry starts a fresh episode.
    """
    messages = list(request.messages)
    tokens_in = tokens_out = calls = 0
    cost = 0.0
    turn = 0
    current = request
    while True:
        started = time.perf_counter()
        reply = agent.respond(current)
        turn_latency = time.perf_counter() - started
        tokens_in += reply.usage.tokens_in
        tokens_out += reply.usage.tokens_out
        cost += reply.usage.cost_usd
        total = Usage(tokens_in, tokens_out, cost)
        wanted = reply.tool_calls
        if not wanted or not all(env.offers(c.name) for c in wanted):
            return Episode(_with_usage(reply, total), turn + 1, calls, "answered")
        if calls + len(wanted) > budget.max_tool_calls:
            return Episode(_with_usage(reply, total), turn + 1, calls, "tool_budget")
        if tokens_in + tokens_out >= budget.max_tokens:
            return Episode(_with_usage(reply, total), turn + 1, calls, "token_budget")
        turn_record = keep(_reply_json(reply))
        ids = [f"call_{turn}_{i}" for i in range(len(wanted))]
        messages.append(Message("assistant", reply.text or "",
                                tool_calls=tuple(wire_call(i, c) for i, c in zip(ids, wanted,
                                                                                 strict=True))))
        for index, (call_id, call) in enumerate(zip(ids, wanted, strict=True)):
            started = time.perf_counter()
            result = env.call(call.name, call.arguments)
            latency = time.perf_counter() - started
            text = json.dumps(result, sort_keys=True)
            first = index == 0  # a turn's tokens, latency and cost go on its first call
            record({
                "turn": turn, "index": index, "call_id": call_id, "tool": call.name,
                "arguments_digest": bytes_digest(call.arguments.encode("utf-8")),
                "arguments": keep({"tool": call.name, "arguments": call.arguments}),
                "result_digest": digest(result),
                "result": keep(result),
                "turn_response": turn_record,
                "tokens_in": reply.usage.tokens_in if first else 0,
                "tokens_out": reply.usage.tokens_out if first else 0,
                "cost_usd": reply.usage.cost_usd if first else 0.0,
                "model_latency_s": round(turn_latency, 6) if first else 0.0,
                "latency_s": round(latency, 6),
            })
            messages.append(Message("tool", text, tool_call_id=call_id))
            calls += 1
        turn += 1
        current = Request(request.case_id, tuple(messages), request.tools, request.tool_choice,
                          request.metadata)


def _with_usage(reply: Response, usage: Usage) -> Response:
    return Response(text=reply.text, tool_calls=reply.tool_calls, usage=usage,
                    refusal=reply.refusal, raw=reply.raw)


def _reply_json(reply: Response) -> dict[str, Any]:
    return {
        "text": reply.text,
        "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in reply.tool_calls],
        "refusal": reply.refusal,
        "usage": {"tokens_in": reply.usage.tokens_in, "tokens_out": reply.usage.tokens_out,
                  "cost_usd": reply.usage.cost_usd},
        "raw": reply.raw,
    }
