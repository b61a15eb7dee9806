"""Outcome classes and the pure classifier."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from rungbench.agents.outcomes import (
    MODEL_FAILURES,
    RELIABILITY_OUTCOMES,
    CallFailure,
    Outcome,
    classify,
    schema_problem,
)
from rungbench.agents.protocol import Message, Request, Response, ToolCall

TOOL = {
    "type": "function",
    "function": {
        "name": "submit_move",
        "parameters": {
            "type": "object",
            "properties": {"move": {"type": "string"}},
            "required": ["move"],
            "additionalProperties": False,
        },
    },
}
REQUEST = Request("c1", (Message("user", "move"),), tools=(TOOL,), tool_choice="required")


def _call(arguments: str, name: str = "submit_move") -> Response:
    return Response(text=None, tool_calls=(ToolCall(name, arguments),))


def _no_e2e4(request: Request, tool: str, arguments: Mapping[str, Any]) -> str | None:
    return "e2e4 is forbidden here" if arguments.get("move") == "e2e4" else None


def test_outcome_families_partition_the_classes() -> None:
    """Every class is exactly one of answered, a model failure or a reliability outcome."""
    assert MODEL_FAILURES.isdisjoint(RELIABILITY_OUTCOMES)
    assert set(Outcome) == {Outcome.ANSWERED} | MODEL_FAILURES | RELIABILITY_OUTCOMES


def test_call_failure_rejects_a_model_outcome() -> None:
    """A transport failure can only carry a reliability outcome."""
    with pytest.raises(ValueError, match="reliability"):
        CallFailure(Outcome.ILLEGAL, "x")


def test_valid_call_is_answered_with_parsed_arguments() -> None:
    """One call of the offered tool with fitting arguments is answered."""
    got = classify(REQUEST, _call(json.dumps({"move": "d2d4"})), _no_e2e4)
    assert got.outcome is Outcome.ANSWERED
    assert got.arguments == {"move": "d2d4"}


def test_validator_rejection_is_illegal() -> None:
    """A schema-valid call the domain validator rejects is illegal, with its reason."""
    got = classify(REQUEST, _call('{"move": "e2e4"}'), _no_e2e4)
    assert (got.outcome, got.detail) == (Outcome.ILLEGAL, "e2e4 is forbidden here")


@pytest.mark.parametrize(
    ("response", "fragment"),
    [
        (Response(text="I play e4"), "no tool call"),
        (_call('{"move": "e2e4"'), "not JSON"),
        (_call('{"move": 4}'), "expected string"),
        (_call("{}"), "missing required field 'move'"),
        (_call('{"move": "e2e4", "why": "x"}'), "unexpected field 'why'"),
        (_call('{"move": "e2e4"}', name="resign"), "unknown tool"),
        (
            Response(text=None, tool_calls=(ToolCall("submit_move", '{"move":"a"}'),) * 2),
            "2 tool calls",
        ),
    ],
)
def test_malformed_calls_are_named(response: Response, fragment: str) -> None:
    """Each way a tool call can miss the frozen schema is malformed, with the cause."""
    got = classify(REQUEST, response, _no_e2e4)
    assert got.outcome is Outcome.MALFORMED
    assert fragment in got.detail


def test_refusal_wins_over_a_tool_call() -> None:
    """An explicit refusal field or a content-filter stop is a refusal."""
    assert classify(REQUEST, Response(text="no", refusal="no")).outcome is Outcome.REFUSAL
    filtered = Response(text=None, raw={"finish_reason": "content_filter"})
    assert classify(REQUEST, filtered).outcome is Outcome.REFUSAL


def test_conversational_request_needs_text() -> None:
    """Without tools, a non-empty text is answered and an empty one malformed."""
    chat = Request("c2", (Message("user", "hi"),))
    assert classify(chat, Response(text="make_move e2e4")).outcome is Outcome.ANSWERED
    assert classify(chat, Response(text="  ")).outcome is Outcome.MALFORMED


def test_schema_subset_rejects_booleans_as_numbers_and_bad_items() -> None:
    """Booleans are not numbers; array items and enums are checked."""
    assert schema_problem(True, {"type": "number"}, "x") is not None
    assert schema_problem(0.5, {"type": ["number", "null"]}, "x") is None
    assert schema_problem([1, "a"], {"type": "array", "items": {"type": "number"}}, "x") == (
        "x[1]: expected number, got str"
    )
    assert schema_problem("maybe", {"type": "string", "enum": ["yes", "no"]}, "x") is not None
