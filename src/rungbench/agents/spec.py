"""One way to name an agent: :class:`AgentSpec` (docs/ARCHITECTURE.md, "Agents").

A spec says *which* agent answers and *how it is reached*, apart from what results call
it:

* ``kind``: ``openai`` (any OpenAI-compatible endpoint), ``planted:NAME`` (a planted
  mechanism of a domain, served on loopback) or ``reference:NAME`` (a domain's reference
  agent);
* ``label``: what cell tables, analyses and the report call the agent;
* ``model``: what is sent as the request's ``model`` field (the endpoint model id), or the
  planted / reference agent's name;
* the base URL, the *name* of the environment variable holding the key (never the key;
  ``None`` for a keyless endpoint), request parameters, client processes, the timeout and
  the prices per million tokens.

A spec is pure data: importing this module loads neither the SDK nor a domain.
:func:`rungbench.agents.providers.open_provider` turns an ``openai`` spec into the one
provider; domains turn ``planted`` and ``reference`` specs into agents through the task
registry (:mod:`rungbench.execute.tasks`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from rungbench.agents.protocol import base_url_problem, owned_key_problem
from rungbench.errors import InputError
from rungbench.evidence.canonical import digest

SPEC_VERSION = "rungbench.agent-spec/1"
"""Schema name and version of a spec's JSON form."""
KINDS = ("openai", "planted", "reference")
"""What kind of agent a spec names."""
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
"""The key variable of an ``openai`` spec that names none."""
NO_KEY = "no-key"
"""The bearer sent to a keyless endpoint (the SDK always sends one; keyless servers ignore
it). Never a secret, and recorded as ``api_key_env: null``."""
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")
"""A label: safe in a file name and in a run id, no ``:`` (which marks ``kind:name``)."""
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
"""Values a ``reasoning_effort`` parameter may take."""
MAX_CLIENT_PROCESSES = 16
"""The most helper processes a provider may send through."""


@dataclass(frozen=True)
class Pricing:
    """Token prices used to compute ``Usage.cost_usd``."""

    usd_per_mtok_in: float = 0.0
    """US dollars per million prompt tokens."""
    usd_per_mtok_out: float = 0.0
    """US dollars per million completion tokens."""

    def __post_init__(self) -> None:
        for name in ("usd_per_mtok_in", "usd_per_mtok_out"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not (
                    math.isfinite(value) and value >= 0):
                raise InputError(f"price must be a finite number >= 0, got {value!r}",
                                 field=name)

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        """Return the cost in US dollars of one call."""
        return (tokens_in * self.usd_per_mtok_in + tokens_out * self.usd_per_mtok_out) / 1e6

    def to_json(self) -> dict[str, float]:
        """The prices as recorded in a manifest."""
        return {"usd_per_mtok_in": float(self.usd_per_mtok_in),
                "usd_per_mtok_out": float(self.usd_per_mtok_out)}


@dataclass(frozen=True)
class AgentSpec:
    """One agent: what answers, how it is reached, and what results call it."""

    label: str
    """What tables, analyses and the report call the agent (:data:`LABEL`)."""
    kind: str
    """One of :data:`KINDS`."""
    model: str
    """``openai``: the endpoint model id sent with every request; otherwise the planted
    or reference agent's name within its domain (``e020:ideas_limited``, ``random``)."""
    base_url: str | None = None
    """``openai``: the endpoint's base URL (http:// or https://); otherwise None."""
    api_key_env: str | None = None
    """``openai``: the environment variable holding the key (default
    :data:`DEFAULT_API_KEY_ENV`; None when :attr:`keyless`); otherwise None."""
    keyless: bool = False
    """``openai``: the endpoint takes no key, so none is read (:data:`NO_KEY` is sent)."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """Request fields added to every request (temperature, max_tokens, seed,
    reasoning_effort, or any extra body field the frozen request does not own)."""
    timeout_s: float = 120.0
    """Seconds per request."""
    client_processes: int = 0
    """Helper processes sending the calls (0: the calling process); an execution setting."""
    pricing: Pricing = field(default_factory=Pricing)
    """Prices per million tokens, for the cost of each call (a planted or reference agent
    served on loopback records them too, standing in for a priced model)."""
    seed: int = 0
    """Seed of a randomized planted or reference agent."""

    def __post_init__(self) -> None:
        check_label(self.label)
        if self.kind not in KINDS:
            raise InputError(f"agent kind must be one of {', '.join(KINDS)}, got "
                             f"{self.kind!r}", field="kind")
        if not isinstance(self.model, str) or not self.model.strip():
            raise InputError("agent model must be a non-empty string", field="model")
        if self.kind == "openai":
            if self.keyless and self.api_key_env is not None:
                raise InputError("a keyless agent names no key variable", field="api_key_env")
            if not self.keyless and self.api_key_env is None:
                object.__setattr__(self, "api_key_env", DEFAULT_API_KEY_ENV)
            self._check_endpoint()
        elif self.base_url is not None or self.api_key_env is not None or self.client_processes \
                or self.keyless:
            raise InputError(f"a {self.kind} agent is served on loopback: it takes no "
                             "base_url, api_key_env or client_processes", field="base_url")
        object.__setattr__(self, "params", check_params(self.params))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not (
                0 <= self.seed < 2**63):
            raise InputError(f"seed must be an integer >= 0, got {self.seed!r}", field="seed")

    def _check_endpoint(self) -> None:
        if self.base_url is None:
            raise InputError(f"agent {self.label!r}: an openai agent needs a base URL",
                             field="base_url")
        problem = base_url_problem(self.base_url)
        if problem is not None:
            raise InputError(f"base URL {problem}", field="base_url")
        if self.api_key_env is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*",
                                                             self.api_key_env):
            raise InputError(f"api_key_env must name an environment variable, got "
                             f"{self.api_key_env!r}", field="api_key_env")
        if isinstance(self.timeout_s, bool) or not isinstance(self.timeout_s, int | float) \
                or not (math.isfinite(self.timeout_s) and self.timeout_s > 0):
            raise InputError(f"timeout must be a positive number of seconds, got "
                             f"{self.timeout_s!r}", field="timeout_s")
        if isinstance(self.client_processes, bool) or not isinstance(self.client_processes,
                                                                     int) \
                or not 0 <= self.client_processes <= MAX_CLIENT_PROCESSES:
            raise InputError(f"client processes must be an integer in 0.."
                             f"{MAX_CLIENT_PROCESSES}, got {self.client_processes!r}",
                             field="client_processes")

    def to_json(self) -> dict[str, Any]:
        """The spec as recorded in a models file's digest, a binding, a run manifest and the
        report: every field but the key's value (which a spec never holds)."""
        out: dict[str, Any] = {"version": SPEC_VERSION, "label": self.label, "kind": self.kind,
                               "model": self.model, "params": dict(self.params)}
        if self.kind == "openai":
            out.update(base_url=self.base_url, api_key_env=self.api_key_env,
                       timeout_s=float(self.timeout_s), client_processes=self.client_processes,
                       pricing=self.pricing.to_json())
        else:
            out["seed"] = self.seed
            if self.pricing != Pricing():  # a stand-in for a priced model; unset adds nothing
                out["pricing"] = self.pricing.to_json()
        return out

    def digest(self) -> str:
        """``sha256:<hex>`` of :meth:`to_json`."""
        return digest(self.to_json())

    def with_label(self, label: str) -> AgentSpec:
        """The same agent under another label."""
        return replace(self, label=label)

    def __str__(self) -> str:
        where = f" at {self.base_url}" if self.base_url else ""
        return f"{self.label} ({self.kind}:{self.model}{where})"


def check_label(label: object) -> str:
    """Return ``label`` when it is a valid agent label; raise :class:`InputError` naming it."""
    if not isinstance(label, str) or not LABEL.fullmatch(label):
        raise InputError(f"agent label must be 1-64 letters, digits, '.', '_', '+' or '-' "
                         f"(starting with a letter or digit), got {label!r}", field="label")
    return label


def label_for(model: str) -> str:
    """The label a one-off spec takes from its model id: runs of characters a label may not
    hold become ``-`` (``meta-llama/Llama-3`` → ``meta-llama-Llama-3``)."""
    text = re.sub(r"[^A-Za-z0-9._+-]+", "-", model).strip("-._+")[:64]
    return check_label(text or "agent")


def check_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``params`` as a plain dict when every key and known value is allowed.

    A key the frozen request owns (messages, tools, model, ...) is refused; temperature,
    top_p, max_tokens, max_completion_tokens, seed and reasoning_effort are range-checked;
    any other key is an extra body field sent as given.
    """
    if not isinstance(params, Mapping):
        raise InputError(f"params must be a table, got {params!r}", field="params")
    out = dict(params)
    for key, value in out.items():
        problem = owned_key_problem(str(key))
        if problem is not None:
            raise InputError(f"parameter {problem}", field=f"params.{key}")
        why = _param_problem(str(key), value)
        if why is not None:
            raise InputError(f"parameter {key} {why}, got {value!r}", field=f"params.{key}")
    digest(out)  # a value with no canonical JSON form (NaN, a datetime) is refused here
    return out


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(
        value)


def _param_problem(key: str, value: Any) -> str | None:
    if key == "temperature" and not (_number(value) and 0 <= value <= 2):
        return "must be a number in [0, 2]"
    if key == "top_p" and not (_number(value) and 0 <= value <= 1):
        return "must be a number in [0, 1]"
    if key in ("max_tokens", "max_completion_tokens") and not (
            isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        return "must be an integer >= 1"
    if key == "seed" and not (isinstance(value, int) and not isinstance(value, bool)):
        return "must be an integer"
    if key == "reasoning_effort" and value not in REASONING_EFFORTS:
        return f"must be one of {', '.join(REASONING_EFFORTS)}"
    return None


def parse_agent(text: str, *, label: str | None = None, base_url: str | None = None,
                api_key_env: str | None = None, keyless: bool = False,
                params: Mapping[str, Any] | None = None, timeout_s: float = 120.0,
                client_processes: int = 0, pricing: Pricing | None = None,
                seed: int = 0) -> AgentSpec:
    """A one-off spec from ``kind:name`` (``openai:MODEL``, ``planted:NAME``,
    ``reference:NAME``); the endpoint options apply to ``openai`` only, the prices to
    every kind (a planted or reference agent standing in for a priced model). The label is
    ``label``, else taken from the name (:func:`label_for`)."""
    kind, sep, name = text.partition(":")
    if not sep or kind not in KINDS or not name:
        raise InputError(f"an agent is openai:MODEL, planted:NAME or reference:NAME (or a "
                         f"label from a models file), got {text!r}", field="model")
    chosen = label if label is not None else label_for(
        name if kind == "openai" else f"{kind}-{name}")
    if kind == "openai":
        return AgentSpec(chosen, kind, name, base_url=base_url, api_key_env=api_key_env,
                         keyless=keyless, params=dict(params or {}), timeout_s=timeout_s,
                         client_processes=client_processes, pricing=pricing or Pricing())
    return AgentSpec(chosen, kind, name, params=dict(params or {}), seed=seed,
                     pricing=pricing or Pricing())


def is_spec_text(text: str) -> bool:
    """Whether ``text`` reads as ``kind:name`` rather than a label (labels hold no ``:``)."""
    return ":" in text
