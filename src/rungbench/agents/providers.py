"""From a spec to the agent that answers: the one place a provider is built, and the one
place an agent is served on loopback (docs/ARCHITECTURE.md, "Agents").

* :func:`open_provider` turns an ``openai`` :class:`~rungbench.agents.spec.AgentSpec` into
  the :class:`~rungbench.agents.openai_provider.OpenAIProvider` that sends its requests
  (the key read from the variable the spec names, or none for a keyless endpoint);
* :func:`serve_on_loopback` serves any :class:`~rungbench.agents.protocol.Agent` (a
  planted mechanism, a reference agent) on a loopback OpenAI-compatible server and yields
  the provider pointed at it, so its answers cross the real HTTP path and SDK.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rungbench.agents.spec import AgentSpec, Pricing, label_for
from rungbench.errors import InputError

if TYPE_CHECKING:
    from rungbench.agents.loopback import Fault
    from rungbench.agents.openai_provider import OpenAIProvider
    from rungbench.agents.protocol import Agent, Request

LOOPBACK_KEY_ENV = "RUNGBENCH_LOOPBACK_KEY"
"""The name under which a loopback provider reads its server's key (from a private
mapping, never the environment)."""


def open_provider(spec: AgentSpec, *, environ: Mapping[str, str] | None = None,
                  served: Mapping[str, Any] | None = None) -> OpenAIProvider:
    """The provider of an ``openai`` spec; ``environ`` (default the process environment)
    holds the key variable; ``served`` describes the agent a loopback server at the spec's
    URL serves (the provider's identity then, not the URL)."""
    from rungbench.agents.openai_provider import OpenAIProvider

    if spec.kind != "openai":
        raise InputError(f"agent {spec.label!r} is {spec.kind}:{spec.model}, not an endpoint; "
                         "it is served on loopback by its domain", field="model")
    assert spec.base_url is not None  # checked by AgentSpec
    return OpenAIProvider(spec.model, base_url=spec.base_url, api_key_env=spec.api_key_env,
                          timeout_s=spec.timeout_s, params=dict(spec.params),
                          pricing=spec.pricing, environ=environ,
                          client_processes=spec.client_processes, label=spec.label,
                          served=served)


FaultFn = Callable[["Request"], "Fault | None"]
"""Picks, for a registered request, the fault the server injects on each of its arrivals."""


def loopback_key() -> str:
    """A fresh random key for a loopback server (it checks the bearer, as an endpoint would)."""
    return "sk-loopback-" + os.urandom(12).hex()


def loopback_spec(base_url: str, key: str, label: str, *, model: str | None = None,
                  timeout_s: float = 120.0, params: Mapping[str, Any] | None = None,
                  pricing: Pricing | None = None) -> tuple[AgentSpec, dict[str, str]]:
    """The spec of a loopback server at ``base_url`` checking ``key``, and the private
    mapping holding that key (for :func:`open_provider`'s ``environ``)."""
    spec = AgentSpec(label, "openai", model or label, base_url=base_url,
                     api_key_env=LOOPBACK_KEY_ENV, timeout_s=timeout_s,
                     params=dict(params or {}), pricing=pricing or Pricing())
    return spec, {LOOPBACK_KEY_ENV: key}


@contextmanager
def serve_on_loopback(agent: Agent, *, label: str | None = None,
                      requests: Iterable[Request] = (), model: str | None = None,
                      pricing: Pricing | None = None, fault_for: FaultFn | None = None,
                      timeout_s: float = 120.0, params: Mapping[str, Any] | None = None,
                      **server: Any) -> Iterator[OpenAIProvider]:
    """Serve ``agent`` on 127.0.0.1 and yield the real OpenAI-client provider pointed at it.

    ``requests`` are registered with the server so the agent sees their metadata (never
    sent over the wire). The provider is labelled ``label`` (default the agent's name made
    a label) and sends ``model`` (default the label) as the endpoint model id; its identity
    is the served agent's description, not the server's port. ``fault_for`` picks a fault
    per registered request; other ``server`` options (``delay_s``, ``retry_after_s``,
    ``faults`` by payload, ...) go to :class:`~rungbench.agents.loopback.LoopbackServer`.
    The server's key is random and held only in a private mapping.
    """
    from rungbench.agents.loopback import LoopbackServer
    from rungbench.agents.protocol import describe_agent

    chosen = label if label is not None else label_for(agent.name)
    requests = list(requests)
    if fault_for is not None:
        by_payload = {r.payload_digest(): fault_for(r) for r in requests}
        server["fault_plan"] = lambda payload, _index: by_payload.get(payload)
    key = loopback_key()
    with LoopbackServer(agent, api_key=key, requests=requests, model=model or chosen,
                        **server) as served:
        spec, environ = loopback_spec(served.base_url, key, chosen, model=model,
                                      timeout_s=timeout_s, params=params, pricing=pricing)
        provider = open_provider(spec, environ=environ, served=describe_agent(agent))
        try:
            yield provider
        finally:
            provider.close()


@contextmanager
def provider_for(spec: AgentSpec | None, *, environ: Mapping[str, str] | None = None,
                 ) -> Iterator[OpenAIProvider | None]:
    """The provider of an ``openai`` spec, closed on exit (None for no spec)."""
    if spec is None:
        yield None
        return
    provider = open_provider(spec, environ=environ)
    try:
        yield provider
    finally:
        provider.close()
