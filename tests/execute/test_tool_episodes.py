"""Multi-turn tool use inside a runner cell: tool_call records, budgets, retries, resume."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rungbench.agents.outcomes import CallFailure, Outcome
from rungbench.agents.protocol import Message, Request, Response, ToolCall, Usage
from rungbench.errors import IntegrityError
from rungbench.execute.events import chained_lines, read_events
from rungbench.execute.runner import create_run, execute_run, verify_run
from rungbench.execute.schedule import Schedule
from rungbench.execute.tools import Budget

ANSWER = {"type": "function", "function": {"name": "answer", "parameters": {
    "type": "object", "properties": {"value": {"type": "number"}}, "required": ["value"]}}}
ADD = {"type": "function", "function": {"name": "add", "parameters": {
    "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}}


def _request(i: int, budget: Budget | None = None) -> Request:
    meta: dict[str, Any] = {"x": i}
    if budget is not None:
        meta["budget"] = budget.to_json()
    return Request(f"c{i}", (Message("system", "add with the tool"),
                             Message("user", f"what is {i} + 1 + 1?")),
                   tools=(ANSWER, ADD), tool_choice="required", metadata=meta)


class Adder:
    """An environment with one tool, ``add``; counts instances and closes."""

    made = 0
    closed = 0
    lock = threading.Lock()

    def __init__(self, request: Request) -> None:
        with Adder.lock:
            Adder.made += 1

    def offers(self, name: str) -> bool:
        return name == "add"

    def call(self, name: str, arguments: str) -> dict[str, Any]:
        args = json.loads(arguments)
        return {"sum": args["a"] + args["b"]}

    def close(self) -> None:
        with Adder.lock:
            Adder.closed += 1


class Stepper:
    """Adds 1 twice through the tool (one call per turn), then answers with the last sum."""

    name = "stepper"

    def __init__(self, fail_turn: int | None = None, loop: bool = False) -> None:
        self.fail_turn = fail_turn
        self.loop = loop
        self.turns: Counter[str] = Counter()

    def respond(self, request: Request) -> Response:
        self.turns[request.case_id] += 1
        results = [json.loads(m.content)["sum"] for m in request.messages if m.role == "tool"]
        if self.fail_turn is not None and len(results) == self.fail_turn \
                and self.turns[request.case_id] <= self.fail_turn + 1:
            raise CallFailure(Outcome.PROVIDER_ERROR, "injected mid-episode failure")
        start = int(request.messages[1].content.split()[2])
        current = results[-1] if results else start
        usage = Usage(100, 10, 0.001)
        if len(results) < 2 or self.loop:
            return Response(None, (ToolCall("add", json.dumps({"a": current, "b": 1})),),
                            usage=usage)
        return Response(None, (ToolCall("answer", json.dumps({"value": current})),), usage=usage)


def _only_answer(request: Request, tool: str, arguments: Any) -> str | None:
    return None if tool == "answer" else f"ended on {tool}"


def _run(tmp_path: Path, agent: Stepper, budget: Budget | None = None,
         n: int = 3) -> tuple[Path, Any]:
    schedule = Schedule.of("t/1", "episodes", [_request(i, budget) for i in range(n)])
    run_dir = create_run(tmp_path, schedule, {"name": agent.name})
    summary = execute_run(run_dir, agent, validator=_only_answer, toolbox=Adder,
                          sleep=lambda s: None)
    return run_dir, summary


def test_episode_logs_each_tool_call_and_answers(tmp_path: Path) -> None:
    """Two tool turns then an answer: two tool_call records, tokens summed over three turns."""
    run_dir, summary = _run(tmp_path, Stepper())
    assert summary.outcomes == {"answered": 3}
    events = read_events(run_dir / "events.jsonl")
    calls = [e for e in events if e["kind"] == "tool_call" and e["cell"] == "c1"]
    assert [e["turn"] for e in calls] == [0, 1]
    assert all(e["tool"] == "add" and e["result_digest"].startswith("sha256:") for e in calls)
    final = next(e for e in events if e["kind"] == "final" and e["cell"] == "c1")
    assert final["arguments"] == {"value": 3}
    event = next(e for e in events if e["kind"] == "tool_event" and e["cell"] == "c1")
    assert (event["turns"], event["tool_calls"], event["stop"]) == (3, 2, "answered")
    assert event["tokens_in"] == 300 and event["tokens_out"] == 30
    assert summary.tokens_in == 900
    assert verify_run(run_dir, _only_answer).ok


def test_tool_budget_ends_episode_as_illegal(tmp_path: Path) -> None:
    """An agent that never stops calling tools is stopped at its tool budget: illegal final."""
    run_dir, summary = _run(tmp_path, Stepper(loop=True), Budget(max_tool_calls=3,
                                                                 max_tokens=10**6))
    assert summary.outcomes == {"illegal": 3}
    events = read_events(run_dir / "events.jsonl")
    assert sum(e["kind"] == "tool_call" and e["cell"] == "c0" for e in events) == 3
    event = next(e for e in events if e["kind"] == "tool_event" and e["cell"] == "c0")
    assert event["stop"] == "tool_budget" and event["turns"] == 4


def test_token_budget_stops_before_executing(tmp_path: Path) -> None:
    """Once the token budget is reached, the reply's tool calls are not executed."""
    run_dir, summary = _run(tmp_path, Stepper(loop=True), Budget(max_tool_calls=50,
                                                                 max_tokens=220))
    events = read_events(run_dir / "events.jsonl")
    event = next(e for e in events if e["kind"] == "tool_event" and e["cell"] == "c0")
    assert event["stop"] == "token_budget" and event["tool_calls"] == 1
    assert summary.outcomes == {"illegal": 3}


def test_failure_mid_episode_retries_fresh_environment(tmp_path: Path) -> None:
    """A provider failure on turn 2 fails the attempt; the retry starts a fresh episode."""
    made, closed = Adder.made, Adder.closed
    agent = Stepper(fail_turn=1)
    run_dir, summary = _run(tmp_path, agent, n=1)
    assert summary.outcomes == {"answered": 1}
    events = read_events(run_dir / "events.jsonl")
    outcomes = [e["outcome"] for e in events if e["kind"] == "tool_event"]
    assert outcomes == ["provider_error", "answered"]
    assert [e["attempt"] for e in events if e["kind"] == "tool_call"] == [1, 2, 2]
    assert Adder.made - made == 2 and Adder.closed - closed == 2


def test_tool_call_after_final_or_without_attempt_is_refused(tmp_path: Path) -> None:
    """A tool_call record appended after a cell's final breaks the log's order check."""
    run_dir, _ = _run(tmp_path, Stepper(), n=1)
    path = run_dir / "events.jsonl"
    events = read_events(path)
    extra = {k: v for k, v in next(e for e in events if e["kind"] == "tool_call").items()
             if k not in ("chain",)}
    line, _ = chained_lines([extra], events[-1]["chain"])
    with open(path, "ab") as fh:
        fh.write(line)
    with pytest.raises(IntegrityError, match="after its final"):
        verify_run(run_dir, _only_answer)


def test_bad_budget_in_metadata_is_input_error() -> None:
    """A budget that is not two integers names the metadata field."""
    from rungbench.errors import InputError

    req = Request("c", (Message("user", "x"),), metadata={"budget": {"max_tool_calls": "x"}})
    with pytest.raises(InputError, match="budget"):
        Budget.of(req)


def test_resume_after_crash_mid_episode(tmp_path: Path) -> None:
    """An attempt left open with a tool_call (a crash mid-episode) is closed and re-run."""
    from rungbench.execute.events import EventLog

    schedule = Schedule.of("t/1", "episodes", [_request(0)])
    run_dir = create_run(tmp_path, schedule, {"name": "stepper"})
    log = EventLog(run_dir / "events.jsonl")
    base = {"cell": "c0", "request_digest": schedule.cells[0].request_digest, "attempt": 1}
    log.append({"kind": "attempt", **base})
    log.append({"kind": "tool_call", **base, "turn": 0, "index": 0, "tool": "add"})
    summary = execute_run(run_dir, Stepper(), validator=_only_answer, toolbox=Adder)
    assert summary.outcomes == {"answered": 1}
    events = read_events(run_dir / "events.jsonl")
    assert [e["outcome"] for e in events if e["kind"] == "tool_event"] == [
        "interrupted", "answered"]
    assert verify_run(run_dir, _only_answer).ok


def test_tool_call_for_unopened_attempt_is_integrity_error(tmp_path: Path) -> None:
    """A tool_call naming an attempt that is not open contradicts the log."""
    from rungbench.execute.events import EventLog

    schedule = Schedule.of("t/1", "episodes", [_request(0)])
    run_dir = create_run(tmp_path, schedule, {"name": "stepper"})
    EventLog(run_dir / "events.jsonl").append(
        {"kind": "tool_call", "cell": "c0", "request_digest": schedule.cells[0].request_digest,
         "attempt": 1})
    with pytest.raises(IntegrityError, match="tool_call for attempt 1"):
        verify_run(run_dir)
