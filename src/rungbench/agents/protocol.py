"""The ``Agent`` protocol: a frozen request in, a response out.

Domain-free: a request is the exact message list and tool schemas a model would
see. Chess and causal code render their cases into requests; the runner digests
the canonical request bytes before sending, so a retry is provably the same cell.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable
from urllib.parse import urlsplit

from rungbench.errors import InputError
from rungbench.evidence.canonical import canonical_bytes, digest

T = TypeVar("T")

REQUEST_OWNED_KEYS = frozenset(
    {"messages", "tools", "tool_choice", "model", "functions", "function_call"}
)
"""Body fields the frozen request (and the run's model) own; an extra parameter may not set
them, or the payload sent would not be the one in the schedule (``functions`` and
``function_call`` are the legacy spellings of ``tools`` and ``tool_choice``)."""


def owned_key_problem(key: str) -> str | None:
    """Why extra body parameter ``key`` is refused (it belongs to the frozen request), or None."""
    if key.strip().lower() in REQUEST_OWNED_KEYS:
        return (f"key {key!r} is owned by the frozen request (one of "
                f"{', '.join(sorted(REQUEST_OWNED_KEYS))}); it cannot be overridden")
    return None


def base_url_problem(url: str) -> str | None:
    """Why ``url`` is not an endpoint base URL (only http:// and https:// with a host), or None."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError for a port that is not a number
    except ValueError as exc:
        return f"{url!r} is not a URL ({exc})"
    if parts.scheme not in ("http", "https"):
        return f"{url!r} must start with http:// or https://"
    if not parts.hostname:
        return f"{url!r} names no host"
    return None


@dataclass(frozen=True)
class Message:
    """One chat message."""

    role: str
    """``system``, ``user``, ``assistant`` or ``tool``."""
    content: str
    """The message text, exactly as sent."""
    tool_calls: tuple[dict[str, Any], ...] = ()
    """An assistant turn's tool calls in the OpenAI wire format (``id``, ``type``,
    ``function.name``, ``function.arguments``); empty for every other message."""
    tool_call_id: str | None = None
    """A ``tool`` message's answer to the call with this id; None for every other message."""

    def to_json(self) -> dict[str, Any]:
        """Return the message as a JSON-ready mapping (tool fields only when set, so a
        single-turn request's bytes and digest are unchanged)."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [dict(c) for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Message:
        """Rebuild a message from :meth:`to_json` (or wire) output; None content is ``""``."""
        call_id = value.get("tool_call_id")
        return cls(
            role=str(value["role"]),
            content=str(value.get("content") or ""),
            tool_calls=tuple(dict(c) for c in value.get("tool_calls") or ()),
            tool_call_id=None if call_id is None else str(call_id),
        )


@dataclass(frozen=True)
class Request:
    """A frozen request: everything the agent sees for one cell."""

    case_id: str
    """Identifier of the cell or case this request belongs to."""
    messages: tuple[Message, ...]
    """The conversation, starting from a fresh context."""
    tools: tuple[dict[str, Any], ...] = ()
    """Tool schemas in the OpenAI function-calling format; identical across arms."""
    tool_choice: str | None = None
    """``required``, ``auto`` or None (provider default)."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Domain payload a reference agent may read (e.g. the FEN); never sent to a provider."""

    def to_json(self) -> dict[str, Any]:
        """Return the request as sent (metadata excluded) as a JSON-ready mapping."""
        out: dict[str, Any] = {
            "case_id": self.case_id,
            "messages": [m.to_json() for m in self.messages],
            "tools": list(self.tools),
        }
        if self.tool_choice is not None:
            out["tool_choice"] = self.tool_choice
        return out

    def canonical(self) -> bytes:
        """Return the canonical bytes of the request as sent."""
        return canonical_bytes(self.to_json())

    def digest(self) -> str:
        """Return ``sha256:<hex>`` of :meth:`canonical`."""
        return digest(self.to_json())

    def payload(self) -> dict[str, Any]:
        """Return the part a provider receives: messages, tools and tool choice (no case id)."""
        out = self.to_json()
        del out["case_id"]
        return out

    def payload_digest(self) -> str:
        """Return ``sha256:<hex>`` of the canonical :meth:`payload`."""
        return digest(self.payload())

    @classmethod
    def from_json(cls, value: dict[str, Any], *, metadata: dict[str, Any] | None = None) -> Request:
        """Rebuild a request from :meth:`to_json` output; ``metadata`` is reattached."""
        try:
            missing = [i for i, m in enumerate(value["messages"]) if "content" not in m]
            if missing:
                raise KeyError(f"messages[{missing[0]}].content")
            messages = tuple(Message.from_json(m) for m in value["messages"])
            return cls(
                case_id=str(value["case_id"]),
                messages=messages,
                tools=tuple(value.get("tools", ())),
                tool_choice=value.get("tool_choice"),
                metadata=dict(metadata or {}),
            )
        except (KeyError, TypeError) as exc:
            raise InputError(
                f"not a request record: missing or bad {exc}", field="request"
            ) from exc


@dataclass(frozen=True)
class ToolCall:
    """One tool call the agent made."""

    name: str
    """Tool (function) name."""
    arguments: str
    """Raw argument string exactly as returned (may be malformed JSON)."""


@dataclass(frozen=True)
class Usage:
    """Token accounting for one call."""

    tokens_in: int = 0
    """Prompt tokens."""
    tokens_out: int = 0
    """Completion tokens."""
    cost_usd: float = 0.0
    """Cost of the call in US dollars, when known."""


@dataclass(frozen=True)
class Response:
    """What an agent returned for one request."""

    text: str | None
    """Free-text content of the reply, if any."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Tool calls in the reply, in order."""
    usage: Usage = field(default_factory=Usage)
    """Tokens and cost."""
    refusal: str | None = None
    """The provider's explicit refusal text, if it refused."""
    raw: dict[str, Any] = field(default_factory=dict)
    """Provider-specific raw fields worth keeping (finish reason, model id)."""


@runtime_checkable
class Agent(Protocol):
    """Anything that answers frozen requests: a reference agent or a model provider."""

    name: str

    def respond(self, request: Request) -> Response:
        """Answer one request from a fresh context."""
        ...


@runtime_checkable
class LoopAgent(Protocol):
    """An agent that also answers as a coroutine on an event loop it owns.

    The runner drives every cell of a run as a coroutine on that loop
    (:mod:`rungbench.execute.cell_loop`) instead of on threads that each block in
    :meth:`Agent.respond`: one thread, no handoff per call.
    """

    name: str

    def respond(self, request: Request) -> Response:
        """Answer one request from a fresh context (blocking)."""
        ...

    async def respond_async(self, request: Request) -> Response:
        """Answer one request from a fresh context (on the agent's loop only)."""
        ...

    def drive(self, main: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run ``main()`` on the agent's loop, blocking until it returns; return its result."""
        ...


def describe_agent(agent: Agent) -> dict[str, Any]:
    """Return an agent's identity for a run manifest: its ``describe()`` or its name."""
    describe = getattr(agent, "describe", None)
    if callable(describe):
        value = describe()
        if isinstance(value, dict):
            return value
    return {"name": agent.name}


def close_agent(agent: object) -> None:
    """Close ``agent`` when it holds a process or connection (has ``close()``); else nothing.

    Closing is optional in the :class:`Agent` protocol: reference agents hold nothing.
    """
    closer = getattr(agent, "close", None)
    if callable(closer):
        closer()
