"""Reading a run's log: per-cell state, finals re-derived from stored responses, verify.

:func:`read_log` is the one verified read of ``events.jsonl`` (chain, order, one final per
cell, every final re-classified from the response it names); :func:`verify_run` reports what
is unfinished. The runner (:mod:`rungbench.execute.runner`) resumes from the same state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rungbench.agents.outcomes import Outcome, Validator, classify
from rungbench.agents.protocol import Response, ToolCall, Usage
from rungbench.errors import IntegrityError
from rungbench.evidence.store import ObjectStore
from rungbench.execute.events import (
    read_events,
    torn_bytes,
)
from rungbench.execute.run_dir import EVENTS, load_run, run_manifest
from rungbench.execute.schedule import Schedule
from rungbench.execute.tools import TOOL_CALL


@dataclass
class CellState:
    """What the event log says about one cell."""

    request_digest: str
    """Digest of the frozen request."""
    attempts: int = 0
    """Attempts started so far (all sessions)."""
    open_attempts: list[int] = field(default_factory=list)
    """Attempts started without a tool_event (in flight when a run died)."""
    last_event: dict[str, Any] | None = None
    """The latest tool_event (its outcome decides what a resume does)."""
    finals: list[dict[str, Any]] = field(default_factory=list)
    """Final records (at most one; exactly one in a finished run)."""


FINAL_FIELDS = ("outcome", "response", "tool", "arguments")
"""Fields a final record copies from the tool_event that decided it."""


def reduce_events(events: list[dict[str, Any]], schedule: Schedule,
                  cap: int | None = None) -> dict[str, CellState]:
    """Fold the event log into per-cell state; raise when the log contradicts itself.

    An event naming an unknown cell or a request digest other than the frozen one, an
    attempt out of sequence, a tool_event for no open attempt, and a final that does not
    copy its deciding tool_event (or records a reliability outcome before the run-wide
    attempt ``cap`` of the run's retry policy) are each an :class:`IntegrityError` naming
    the log line.
    """
    states = {c.cell_id: CellState(c.request_digest) for c in schedule}
    for number, event in enumerate(events, start=1):
        if event["kind"] in ("run", "session"):
            continue
        where = f"{EVENTS}:{number}"
        state = states.get(str(event.get("cell")))
        if state is None:
            raise IntegrityError(f"{where}: event names unknown cell {event.get('cell')!r}")
        if event.get("request_digest") != state.request_digest:
            raise IntegrityError(
                f"{where}: event for cell {event['cell']!r} has request digest "
                f"{event.get('request_digest')}, the frozen cell has {state.request_digest}"
            )
        problem = _fold(state, event, cap)
        if problem is not None:
            raise IntegrityError(f"{where}: cell {event['cell']!r}: {problem}")
    return states


def _fold(state: CellState, event: dict[str, Any], cap: int | None = None) -> str | None:
    """Apply ``event`` to ``state``; return why it is inconsistent, or None."""
    try:
        kind = event["kind"]
        if kind == "attempt":
            if int(event["attempt"]) != state.attempts + 1:
                return f"attempt {event['attempt']} follows attempt {state.attempts}"
            state.attempts = int(event["attempt"])
            state.open_attempts.append(state.attempts)
        elif kind == "tool_event":
            if int(event["attempt"]) not in state.open_attempts:
                return f"tool_event for attempt {event['attempt']}, which is not open"
            state.open_attempts.remove(int(event["attempt"]))
            Outcome(event["outcome"])  # an unknown class is corrupt input
            state.last_event = event
        elif kind == TOOL_CALL:  # one executed tool call inside an open (episode) attempt
            if int(event["attempt"]) not in state.open_attempts:
                return f"tool_call for attempt {event['attempt']}, which is not open"
        elif kind == "final":
            return _fold_final(state, event, cap)
        elif kind != "unresolved":
            return f"unknown event kind {kind!r}"
    except (KeyError, TypeError, ValueError) as exc:
        return f"malformed {event.get('kind')} record ({type(exc).__name__}: {exc})"
    return None


def _fold_final(state: CellState, event: dict[str, Any], cap: int | None) -> str | None:
    source = state.last_event
    if source is None or state.open_attempts:
        return "final outcome without a deciding tool_event"
    if Outcome(event["outcome"]).is_reliability and (cap is None or state.attempts != cap):
        return (f"final outcome {event['outcome']!r} is a reliability outcome after "
                f"{state.attempts} attempts (the run's cap: {cap})")
    changed = [f for f in FINAL_FIELDS if event.get(f) != source.get(f)]
    if event.get("attempts") != source.get("attempt"):
        changed.append("attempts")
    if changed:
        return f"final differs from its tool_event in {', '.join(changed)}"
    state.finals.append(event)
    return None


def response_json(response: Response) -> dict[str, Any]:
    """Return a response as the JSON object stored in the run's object store."""
    return {
        "text": response.text,
        "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in response.tool_calls],
        "refusal": response.refusal,
        "usage": {
            "tokens_in": response.usage.tokens_in,
            "tokens_out": response.usage.tokens_out,
            "cost_usd": response.usage.cost_usd,
        },
        "raw": response.raw,
    }


def response_from_json(value: Any, *, where: str) -> Response:
    """Rebuild a stored response (:func:`response_json` output); raise naming ``where``."""
    try:
        usage = value["usage"]
        return Response(
            text=value["text"],
            tool_calls=tuple(ToolCall(str(c["name"]), str(c["arguments"]))
                             for c in value["tool_calls"]),
            usage=Usage(int(usage["tokens_in"]), int(usage["tokens_out"]),
                        float(usage["cost_usd"])),
            refusal=value["refusal"],
            raw=dict(value["raw"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise IntegrityError(f"{where}: not a stored response ({exc!r})") from exc


def check_finals(
    run_dir: Path, schedule: Schedule, states: Mapping[str, CellState],
    validator: Validator | None,
) -> None:
    """Re-derive every final outcome from the stored response it names; raise on a mismatch.

    Without ``validator`` an ``illegal`` final must classify as ``answered`` with the same
    tool call (legality is the one judgement left unchecked). A terminal provider failure
    (a reliability final, admitted by :func:`reduce_events` only at the run's retry cap) has
    no response and must name none.
    """
    store = ObjectStore(run_dir)
    for cell in schedule:
        for final in states[cell.cell_id].finals:
            if Outcome(final["outcome"]).is_reliability:
                if final.get("response") is not None:
                    raise IntegrityError(f"{run_dir / EVENTS}: terminal provider failure of "
                                         f"cell {cell.cell_id!r} names a response")
                continue
            name = str(final.get("response"))
            if not name.startswith("sha256:"):
                raise IntegrityError(f"{run_dir / EVENTS}: final of cell {cell.cell_id!r} "
                                     "names no stored response")
            response = response_from_json(store.get_json(name), where=str(store.path_for(name)))
            got = classify(cell.request, response, validator)
            expected = Outcome(final["outcome"])
            if validator is None and expected is Outcome.ILLEGAL:
                expected = Outcome.ANSWERED
            arguments = dict(got.arguments) if got.arguments is not None else None
            if (got.outcome, got.tool, arguments) != (expected, final.get("tool"),
                                                      final.get("arguments")):
                raise IntegrityError(
                    f"{run_dir / EVENTS}: final of cell {cell.cell_id!r} says "
                    f"{final['outcome']!r}, but its stored response {name} classifies as "
                    f"{got.outcome.value!r}"
                )


def read_log(
    run_dir: Path, schedule: Schedule, validator: Validator | None = None
) -> tuple[list[dict[str, Any]], dict[str, CellState]]:
    """The one verified read of a run's log: chain, order, consistency and stored answers.

    Returns the events and the per-cell state; raises :class:`IntegrityError` naming the
    file for any inconsistency (see :func:`~rungbench.execute.events.read_events`,
    :func:`reduce_events` and :func:`check_finals`).
    """
    events = read_events(run_dir / EVENTS)
    retries = run_manifest(run_dir)["policy"].get("max_retries")
    try:
        states = reduce_events(events, schedule, None if retries is None else int(retries) + 1)
    except IntegrityError as exc:
        raise IntegrityError(f"{run_dir}/{exc}") from None
    check_finals(run_dir, schedule, states, validator)
    return events, states




@dataclass(frozen=True)
class RunCheck:
    """The result of checking a run's (verified) log against its frozen schedule."""

    cells: int
    """Cells in the schedule."""
    final: int
    """Cells with their one final outcome."""
    problems: tuple[str, ...]
    """Why the run is not finished: cells without a final outcome, a torn last line."""
    terminal: int = 0
    """Cells whose final outcome is a reliability outcome: the run-wide retry cap was
    reached (terminal provider failures, missing observations downstream)."""

    @property
    def ok(self) -> bool:
        """Whether every cell has exactly one final outcome and the log ends cleanly."""
        return not self.problems and self.final == self.cells


def verify_run(run_dir: Path, validator: Validator | None = None) -> RunCheck:
    """Verify a run and report what is unfinished.

    An inconsistent log or store (edited, duplicated or reordered events, a changed
    manifest, schedule or stored response) raises :class:`IntegrityError` naming the
    file (:func:`read_log`); a cell without a final outcome, or a torn last line, is a
    problem in the returned :class:`RunCheck`.
    """
    _, schedule = load_run(run_dir)
    _, states = read_log(run_dir, schedule, validator)
    problems: list[str] = []
    torn = torn_bytes(run_dir / EVENTS)
    if torn:
        problems.append(f"{run_dir / EVENTS}: torn last line ({torn} bytes after the last "
                        "newline)")
    for cell_id, state in states.items():
        if not state.finals:
            last = state.last_event
            why = (f"last {last['outcome']} after {state.attempts} attempts" if last is not None
                   else "never sent")
            problems.append(f"cell {cell_id!r}: no final outcome ({why})")
    single = sum(1 for s in states.values() if s.finals)
    terminal = sum(1 for s in states.values()
                   if s.finals and Outcome(s.finals[0]["outcome"]).is_reliability)
    return RunCheck(len(schedule), single, tuple(problems), terminal)
