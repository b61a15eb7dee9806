"""``rungbench models check``: one tiny request to every endpoint of a models file, before a
study spends anything on it.

Each ``openai`` agent is sent one request that must be answered with a call of a one-field
tool (the same shape every study asks for: a required tool call), through the same
provider a run uses. The result per agent is its label, endpoint model id and URL, and
either the latency, tokens and cost of the answer, or one clear problem: the URL is not
one, nothing listens there, the host is unknown, the key is refused (401/403), the model
or route is unknown (404, or a 400 naming the model), the endpoint cannot call tools, or
the reply is not a chat completion. Planted and reference agents are served on loopback by
their domain: there is nothing to reach.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from rungbench.agents.models_file import ModelsFile
from rungbench.agents.outcomes import CallFailure
from rungbench.agents.protocol import Message, Request
from rungbench.agents.spec import AgentSpec
from rungbench.errors import InputError

PING_TOOL = {
    "type": "function",
    "function": {
        "name": "submit_word",
        "description": "Submit one word.",
        "parameters": {"type": "object", "properties": {"word": {"type": "string"}},
                       "required": ["word"], "additionalProperties": False},
    },
}
"""The one tool of the check request."""
PING = Request(
    case_id="models-check",
    messages=(Message("user", "Call submit_word with the word 'ready'."),),
    tools=(PING_TOOL,),
    tool_choice="required",
)
"""The request every endpoint is sent (fresh context, one required tool call)."""


def problem_of(failure: CallFailure) -> str:
    """What a failed check call says about the endpoint, in one phrase."""
    status = failure.status
    if status in (401, 403):
        return f"key refused (HTTP {status})"
    if status == 404:
        return "unknown model or route (HTTP 404)"
    if failure.systematic and status == 400:
        return "unknown model (HTTP 400)"
    if failure.systematic:
        return "nothing listening there, or an unknown host"
    if status is not None:
        return f"HTTP {status}"
    return failure.outcome.value.replace("_", " ")


def check_spec(spec: AgentSpec, *, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Send :data:`PING` to the endpoint ``spec`` names; return what happened (never
    raises for the endpoint's own failures, or for a key variable that is unset)."""
    from rungbench.agents.providers import open_provider

    row: dict[str, Any] = {"label": spec.label, "kind": spec.kind, "model": spec.model,
                           "base_url": spec.base_url}
    if spec.kind != "openai":
        return {**row, "ok": True, "status": "local",
                "detail": f"{spec.kind} agent, served on loopback by its domain"}
    try:
        provider = open_provider(spec, environ=environ)
    except InputError as exc:
        return {**row, "ok": False, "status": "not_ready", "detail": str(exc)}
    started = time.perf_counter()
    try:
        response = provider.respond(PING)
    except CallFailure as failure:
        return {**row, "ok": False, "status": problem_of(failure),
                "latency_s": round(time.perf_counter() - started, 3),
                "detail": failure.detail.splitlines()[0][:300] if failure.detail else ""}
    finally:
        provider.close()
    latency = round(time.perf_counter() - started, 3)
    usage = response.usage
    out = {**row, "latency_s": latency, "tokens_in": usage.tokens_in,
           "tokens_out": usage.tokens_out, "cost_usd": round(usage.cost_usd, 8)}
    if not any(call.name == "submit_word" for call in response.tool_calls):
        said = (response.text or response.refusal or "").strip().splitlines()
        return {**out, "ok": False, "status": "no tool call",
                "detail": "answered without calling the tool (no tool-call support?)"
                + (f": {said[0][:120]!r}" if said else "")}
    return {**out, "ok": True, "status": "ok", "detail": ""}


def check_models(models: ModelsFile, *, environ: Mapping[str, str] | None = None,
                 ) -> dict[str, Any]:
    """:func:`check_spec` for every agent of ``models``, in file order."""
    rows = [check_spec(spec, environ=environ) for spec in models]
    return {"models_file": models.source, "digest": models.digest(), "agents": rows,
            "ok": all(r["ok"] for r in rows)}
