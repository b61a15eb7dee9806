"""Outcome classes of one agent call, and the pure classifier that assigns them.

Seed 000 ("Hold the action interface still too") and docs/ARCHITECTURE.md ("A run")
fix two families:

* model outcomes — ``answered``, ``malformed`` (a tool call that does not fit the
  frozen schema), ``refusal``, ``illegal`` (fits the schema, rejected by the
  domain validator). Malformed, refused and illegal answers are final at once:
  re-asking the model after seeing its answer would be outcome-dependent
  resampling (seed 001, "There is no outcome-dependent stopping or substitution").
* reliability outcomes — ``provider_error`` (HTTP 4xx/5xx or an unusable body),
  ``network_error``, ``timeout``, and ``interrupted`` (the run itself died while
  the call was in flight). These are missing observations, retried only in the
  identical frozen cell under the registered retry limit.

Transport failures are raised as :class:`CallFailure`; answers are classified by
:func:`classify`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from rungbench.agents.protocol import Request, Response
from rungbench.errors import RungbenchError


class Outcome(StrEnum):
    """The registered outcome classes of one call."""

    ANSWERED = "answered"
    MALFORMED = "malformed"
    REFUSAL = "refusal"
    ILLEGAL = "illegal"
    PROVIDER_ERROR = "provider_error"
    NETWORK_ERROR = "network_error"
    TIMEOUT = "timeout"
    INTERRUPTED = "interrupted"

    @property
    def is_reliability(self) -> bool:
        """Whether this is a reliability outcome (retryable in the same frozen cell)."""
        return self in RELIABILITY_OUTCOMES

    @property
    def is_model_failure(self) -> bool:
        """Whether this is a model failure (final; maximal regret downstream)."""
        return self in MODEL_FAILURES


RELIABILITY_OUTCOMES = frozenset(
    {Outcome.PROVIDER_ERROR, Outcome.NETWORK_ERROR, Outcome.TIMEOUT, Outcome.INTERRUPTED}
)
MODEL_FAILURES = frozenset({Outcome.MALFORMED, Outcome.REFUSAL, Outcome.ILLEGAL})


class CallFailure(RungbenchError):
    """Raised by an agent when a call produced no usable answer (a reliability outcome)."""

    def __init__(
        self,
        outcome: Outcome,
        detail: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        systematic: bool = False,
    ) -> None:
        if not outcome.is_reliability:
            raise ValueError(f"CallFailure needs a reliability outcome, not {outcome.value!r}")
        self.outcome = outcome
        self.detail = detail
        self.status = status
        self.retry_after = retry_after
        self.systematic = systematic
        """The endpoint cannot answer any request as configured (nothing listening, an
        unknown host, HTTP 401, 403 or 404, an unknown model): retrying the same cell is
        pointless, and the runner stops a run after a registered number of such cells in a
        row (:class:`rungbench.execute.policy.RetryPolicy`)."""
        super().__init__(f"{outcome.value}: {detail}")


Validator = Callable[[Request, str, Mapping[str, Any]], str | None]
"""Domain check of a schema-valid tool call: ``(request, tool name, arguments) -> reason``.

Returns None when the answer is admissible, or a short reason when it is illegal
(e.g. a UCI string that is not a legal move in the request's position).
"""


@dataclass(frozen=True)
class Classification:
    """The class of one answered call and what it carried."""

    outcome: Outcome
    """The registered outcome class."""
    detail: str = ""
    """Why, for every outcome other than ``answered``."""
    tool: str | None = None
    """Name of the tool that was called, when one was."""
    arguments: Mapping[str, Any] | None = None
    """The parsed arguments, when they parsed and fit the schema."""

    def to_json(self) -> dict[str, Any]:
        """Return the classification as a JSON-ready mapping."""
        return {
            "outcome": self.outcome.value,
            "detail": self.detail,
            "tool": self.tool,
            "arguments": dict(self.arguments) if self.arguments is not None else None,
        }


def classify(
    request: Request, response: Response, validator: Validator | None = None
) -> Classification:
    """Classify ``response`` to ``request`` (pure; no I/O).

    Order: an explicit refusal wins; then, when the request offers tools, exactly one
    call to one of them with arguments that parse and fit its schema is required;
    then the domain ``validator`` decides legality.
    """
    if response.refusal or response.raw.get("finish_reason") == "content_filter":
        return Classification(Outcome.REFUSAL, (response.refusal or "content_filter")[:500])
    if not request.tools:
        if response.text is None or not response.text.strip():
            return Classification(Outcome.MALFORMED, "empty reply")
        return Classification(Outcome.ANSWERED)
    return _classify_tool_call(request, response, validator)


def _classify_tool_call(
    request: Request, response: Response, validator: Validator | None
) -> Classification:
    if not response.tool_calls:
        return Classification(Outcome.MALFORMED, "no tool call")
    if len(response.tool_calls) > 1:
        return Classification(Outcome.MALFORMED, f"{len(response.tool_calls)} tool calls, need 1")
    call = response.tool_calls[0]
    schemas = tool_parameters(request.tools)
    if call.name not in schemas:
        return Classification(Outcome.MALFORMED, f"unknown tool {call.name[:80]!r}", tool=call.name)
    try:
        arguments = json.loads(call.arguments)
    except (json.JSONDecodeError, RecursionError):
        return Classification(
            Outcome.MALFORMED, f"arguments are not JSON: {call.arguments[:120]!r}", tool=call.name
        )
    problem = schema_problem(arguments, schemas[call.name], "arguments")
    if problem is not None:
        return Classification(Outcome.MALFORMED, problem, tool=call.name)
    reason = validator(request, call.name, arguments) if validator is not None else None
    if reason is not None:
        return Classification(Outcome.ILLEGAL, reason, tool=call.name, arguments=arguments)
    return Classification(Outcome.ANSWERED, tool=call.name, arguments=arguments)


def tool_parameters(tools: tuple[dict[str, Any], ...]) -> dict[str, dict[str, Any]]:
    """Return ``{function name: parameters schema}`` of OpenAI-format tool schemas."""
    out: dict[str, dict[str, Any]] = {}
    for tool in tools:
        function = tool.get("function", {})
        out[str(function.get("name"))] = dict(function.get("parameters", {"type": "object"}))
    return out


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def schema_problem(value: Any, schema: Mapping[str, Any], where: str) -> str | None:
    """Return why ``value`` does not fit ``schema`` (the JSON Schema subset tools use), or None.

    Checks ``type`` (one or a list), ``enum``, ``required``, ``properties``,
    ``additionalProperties: false`` and ``items``; booleans are not numbers.
    """
    problem = _type_problem(value, schema.get("type"), where)
    if problem is not None:
        return problem
    if "enum" in schema and value not in schema["enum"]:
        return f"{where}: {value!r} is not one of the allowed values"
    if isinstance(value, dict):
        return _object_problem(value, schema, where)
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            problem = schema_problem(item, schema["items"], f"{where}[{i}]")
            if problem is not None:
                return problem
    return None


def _type_problem(value: Any, declared: Any, where: str) -> str | None:
    if declared is None:
        return None
    names = declared if isinstance(declared, list) else [declared]
    for name in names:
        kinds = _JSON_TYPES.get(str(name), ())
        if isinstance(value, bool) and name in ("integer", "number"):
            continue
        if isinstance(value, kinds):
            return None
    return f"{where}: expected {'/'.join(map(str, names))}, got {type(value).__name__}"


def _object_problem(value: dict[str, Any], schema: Mapping[str, Any], where: str) -> str | None:
    properties: Mapping[str, Any] = schema.get("properties", {})
    for key in schema.get("required", []):
        if key not in value:
            return f"{where}: missing required field {key!r}"
    if schema.get("additionalProperties") is False:
        extra = sorted(set(value) - set(properties))
        if extra:
            return f"{where}: unexpected field {extra[0][:80]!r}"
    for key, sub in properties.items():
        if key in value and isinstance(sub, Mapping):
            problem = schema_problem(value[key], sub, f"{where}.{key}")
            if problem is not None:
                return problem
    return None
