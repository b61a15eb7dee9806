"""The resumable cell runner.

A run lives in ``<out>/runs/<run_id>/``::

    manifest.json      run identity: schedule digest, agent description, retry policy
    objects/sha256/…   the schedule record, every request's bytes, every response
    events.jsonl       session, attempt, tool_event and final records (crash-safe)
    .lock              flock held while a process executes the run (one at a time)

Rules (seed 000; DESIGN.md "Provider outcomes"):

* Each request is sent from a fresh context; its digest is recomputed and checked
  against the frozen schedule before every send, and written in an ``attempt``
  record *before* the request leaves.
* Reliability outcomes (provider, network, timeout, interrupted) are retried in
  the identical frozen cell up to ``RetryPolicy.max_attempts`` over the whole
  run; model outcomes (answered, malformed, refusal, illegal) are final at once.
* Every cell ends with exactly one ``final`` record. A resumed run never re-sends
  a cell that has one; an attempt left in flight by a crash is closed as
  ``interrupted`` and counts against the limit.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rungbench.agents.outcomes import CallFailure, Outcome, Validator, classify
from rungbench.agents.protocol import Agent, Response
from rungbench.errors import InputError, IntegrityError, Reason, Refusal
from rungbench.evidence.canonical import canonical_bytes, digest, loads_canonical
from rungbench.evidence.store import ObjectStore, write_atomic
from rungbench.execute.events import EventLog, read_events, utc_now
from rungbench.execute.policy import RetryPolicy
from rungbench.execute.schedule import Cell, Schedule, load_schedule

RUN_VERSION = "rungbench.run/1"
MANIFEST = "manifest.json"
EVENTS = "events.jsonl"

ProgressHook = Callable[[int, int], None]
"""Called with ``(cells final, cells total)`` at the start and after every final outcome."""


def describe_agent(agent: Agent) -> dict[str, Any]:
    """Return an agent's identity for the manifest: its ``describe()`` or its name."""
    describe = getattr(agent, "describe", None)
    if callable(describe):
        value = describe()
        if isinstance(value, dict):
            return value
    return {"name": agent.name}


def create_run(
    out_dir: Path,
    schedule: Schedule,
    agent_description: dict[str, Any],
    *,
    policy: RetryPolicy | None = None,
    run_id: str | None = None,
) -> Path:
    """Create a run directory: store the schedule and write the manifest; return the directory."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    rid = run_id or f"{stamp}-{schedule.digest()[7:15]}-{os.urandom(2).hex()}"
    run_dir = out_dir / "runs" / rid
    try:
        run_dir.mkdir(parents=True)
    except FileExistsError as exc:
        raise InputError(f"run directory already exists: {run_dir}", path=str(run_dir)) from exc
    schedule_digest = schedule.save(ObjectStore(run_dir))
    manifest = {
        "version": RUN_VERSION,
        "run_id": rid,
        "created": utc_now(),
        "schedule": schedule_digest,
        "task": schedule.task,
        "cells": len(schedule),
        "agent": agent_description,
        # seed 000 claim gate 5: the tool schema must be identical across every arm
        "tool_schemas": sorted({digest(list(c.request.tools)) for c in schedule}),
        "policy": (policy or RetryPolicy()).to_json(),
    }
    write_atomic(run_dir / MANIFEST, canonical_bytes(manifest) + b"\n")
    return run_dir


def load_run(run_dir: Path) -> tuple[dict[str, Any], Schedule]:
    """Return a run's manifest and its verified frozen schedule."""
    path = run_dir / MANIFEST
    if not path.exists():
        raise InputError(f"not a run directory (no {MANIFEST})", path=str(run_dir))
    manifest = loads_canonical(path.read_bytes().rstrip(b"\n"), path=str(path))
    if not isinstance(manifest, dict) or manifest.get("version") != RUN_VERSION:
        raise InputError(f"not a {RUN_VERSION} manifest", path=str(path), field="version")
    return manifest, load_schedule(ObjectStore(run_dir), str(manifest["schedule"]))


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
    """Final records (exactly one in a consistent, finished run)."""


def reduce_events(events: list[dict[str, Any]], schedule: Schedule) -> dict[str, CellState]:
    """Fold the event log into per-cell state; raise when a digest differs from the schedule."""
    states = {c.cell_id: CellState(c.request_digest) for c in schedule}
    for number, event in enumerate(events, start=1):
        if event["kind"] == "session":
            continue
        state = states.get(str(event.get("cell")))
        if state is None:
            raise IntegrityError(f"event {number} names unknown cell {event.get('cell')!r}")
        if event.get("request_digest") != state.request_digest:
            raise IntegrityError(
                f"event {number} for cell {event['cell']!r} has request digest "
                f"{event.get('request_digest')}, the frozen cell has {state.request_digest}"
            )
        _fold(state, event)
    return states


def _fold(state: CellState, event: dict[str, Any]) -> None:
    kind = event["kind"]
    if kind == "attempt":
        state.attempts = max(state.attempts, int(event["attempt"]))
        state.open_attempts.append(int(event["attempt"]))
    elif kind == "tool_event":
        if int(event["attempt"]) in state.open_attempts:
            state.open_attempts.remove(int(event["attempt"]))
        Outcome(event["outcome"])  # an unknown class is corrupt input: ValueError names it
        state.last_event = event
    elif kind == "final":
        state.finals.append(event)


@dataclass(frozen=True)
class RunSummary:
    """What a session of a run did, and where the whole run stands."""

    run_id: str
    """Run identifier."""
    run_dir: str
    """Run directory."""
    schedule: str
    """Digest of the frozen schedule."""
    session: int
    """1 for a fresh run, 2+ for resumes."""
    cells: int
    """Cells in the schedule."""
    skipped: int
    """Cells already final when this session started (never sent again)."""
    sent: int
    """Calls made in this session."""
    finalized: int
    """Cells that reached their final outcome in this session."""
    outcomes: dict[str, int]
    """Final outcomes over the whole run, by class."""
    tokens_in: int
    """Prompt tokens of this session's calls."""
    tokens_out: int
    """Completion tokens of this session's calls."""
    cost_usd: float
    """Cost of this session's calls."""
    elapsed_s: float
    """Wall time of this session."""

    @property
    def cells_per_s(self) -> float:
        """Cells finalized per second in this session."""
        return self.finalized / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        """Return the summary as a JSON-ready mapping."""
        return {
            **asdict(self),
            "outcomes": dict(sorted(self.outcomes.items())),
            "cost_usd": round(self.cost_usd, 6),
            "elapsed_s": round(self.elapsed_s, 3),
            "cells_per_s": round(self.cells_per_s, 3),
        }


class _Session:
    """One execution of a run: the log, the store, the counters (thread-safe)."""

    def __init__(
        self,
        run_dir: Path,
        agent: Agent,
        policy: RetryPolicy,
        validator: Validator | None,
        sleep: Callable[[float], None],
    ) -> None:
        self.log = EventLog(run_dir / EVENTS)
        self.store = ObjectStore(run_dir)
        self.agent = agent
        self.policy = policy
        self.validator = validator
        self.sleep = sleep
        self.lock = threading.Lock()
        self.sent = 0
        self.finalized = 0
        self.tokens = [0, 0]
        self.cost = 0.0
        self.progress: Callable[[], None] = lambda: None
        self.frozen: dict[str, str] = {}
        """Cell id -> request digest as loaded from the frozen schedule at session start."""

    def run_cell(self, cell: Cell, prior_attempts: int) -> None:
        """Send ``cell`` until a final outcome or the attempt limit; log every step."""
        attempt, retry_after = prior_attempts, None
        while True:
            attempt += 1
            if attempt > prior_attempts + 1:
                self.sleep(self.policy.wait_before(attempt, retry_after))
            failed = self._attempt(cell, attempt)
            if failed is None or attempt >= self.policy.max_attempts:
                return
            retry_after = failed[0].retry_after

    def _attempt(self, cell: Cell, attempt: int) -> tuple[CallFailure, dict[str, Any]] | None:
        frozen = self.frozen[cell.cell_id]
        if cell.request.digest() != frozen:
            raise IntegrityError(f"cell {cell.cell_id!r}: request changed since it was frozen")
        base = {"cell": cell.cell_id, "request_digest": frozen, "attempt": attempt}
        self.log.append({"kind": "attempt", **base})
        with self.lock:
            self.sent += 1
        start = time.perf_counter()
        try:
            response = self.agent.respond(cell.request)
        except CallFailure as failure:
            event = {
                "kind": "tool_event",
                **base,
                **_empty_usage(),
                "latency_s": round(time.perf_counter() - start, 6),
                "outcome": failure.outcome.value,
                "detail": failure.detail,
                "status": failure.status,
                "retry_after": failure.retry_after,
                "response": None,
            }
            if attempt >= self.policy.max_attempts:
                self.final(cell, event, attempt, preceded_by=event)
            else:
                self.log.append(event)
            return failure, event
        latency = time.perf_counter() - start
        stored = self.store.put_json(response_json(response))
        verdict = classify(cell.request, response, self.validator)
        usage = response.usage
        event = {
            "kind": "tool_event",
            **base,
            "tokens_in": usage.tokens_in,
            "tokens_out": usage.tokens_out,
            "cost_usd": usage.cost_usd,
            "latency_s": round(latency, 6),
            "outcome": verdict.outcome.value,
            "detail": verdict.detail,
            "status": None,
            "retry_after": None,
            "response": stored,
            "tool": verdict.tool,
            "arguments": dict(verdict.arguments) if verdict.arguments is not None else None,
        }
        with self.lock:
            self.tokens[0] += usage.tokens_in
            self.tokens[1] += usage.tokens_out
            self.cost += usage.cost_usd
        self.final(cell, event, attempt, preceded_by=event)
        return None

    def final(
        self,
        cell: Cell,
        source: dict[str, Any],
        attempts: int,
        *,
        preceded_by: dict[str, Any] | None = None,
        note: str | None = None,
    ) -> None:
        """Write the one final record of ``cell``, taken from its deciding tool_event.

        When ``preceded_by`` is given, that tool_event and the final are written in one
        durable append.
        """
        record = {
            "kind": "final",
            "cell": cell.cell_id,
            "request_digest": cell.request_digest,
            "outcome": source["outcome"],
            "attempts": attempts,
            "response": source.get("response"),
            "tool": source.get("tool"),
            "arguments": source.get("arguments"),
            "detail": source.get("detail", ""),
        }
        if note is not None:
            record["note"] = note
        self.log.append_many([preceded_by, record] if preceded_by is not None else [record])
        with self.lock:
            self.finalized += 1
        self.progress()


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


def execute_run(
    run_dir: Path,
    agent: Agent,
    *,
    validator: Validator | None = None,
    concurrency: int = 1,
    progress: ProgressHook | None = None,
    max_cells: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> RunSummary:
    """Run (or resume) every cell of ``run_dir`` that has no final outcome yet.

    ``max_cells`` sends at most that many pending cells in this session (the rest wait
    for a resume). Refuses (reason ``different``) when ``agent`` is not the agent the
    manifest names, and (reason ``run_busy``) while another process executes the run.
    """
    if concurrency < 1:
        raise InputError(f"concurrency must be >= 1, got {concurrency!r}", field="concurrency")
    started = time.perf_counter()
    manifest, schedule = load_run(run_dir)
    with _exclusive(run_dir):
        return _execute(
            run_dir, manifest, schedule, agent, validator, concurrency, progress, max_cells,
            sleep, started,
        )


LOCK = ".lock"


@contextlib.contextmanager
def _exclusive(run_dir: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the run while it executes.

    Two processes resuming one run at once would both send its pending cells; the
    second is refused instead. The kernel drops the lock when its holder dies
    (SIGKILL included), so a crashed run never blocks its own resume.
    """
    with open(run_dir / LOCK, "a+b") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Refusal(
                [Reason("run_busy", "another process is executing this run", subject=str(run_dir))],
                gate="run",
            ) from None
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _execute(
    run_dir: Path,
    manifest: dict[str, Any],
    schedule: Schedule,
    agent: Agent,
    validator: Validator | None,
    concurrency: int,
    progress: ProgressHook | None,
    max_cells: int | None,
    sleep: Callable[[float], None],
    started: float,
) -> RunSummary:
    _check_agent(manifest, agent)
    session = _Session(run_dir, agent, RetryPolicy.from_json(manifest["policy"]), validator, sleep)
    torn = session.log.repair()
    events = session.log.read()
    states = reduce_events(events, schedule)
    session.frozen = {cell_id: state.request_digest for cell_id, state in states.items()}
    number = 1 + sum(1 for e in events if e["kind"] == "session")
    session.log.append(
        {
            "kind": "session",
            "session": number,
            "concurrency": concurrency,
            "agent": agent.name,
            "torn_bytes": torn,
        }
    )
    skipped = sum(1 for s in states.values() if s.finals)
    done = [skipped]

    def tick() -> None:
        with session.lock:
            done[0] += 1
            value = done[0]
        if progress is not None:
            progress(value, len(schedule))

    session.progress = tick
    if progress is not None:
        progress(skipped, len(schedule))
    todo = _close_open_attempts(session, schedule, states)
    if max_cells is not None:
        todo = todo[:max_cells]
    _run_pool(session, todo, concurrency)
    outcomes = Counter(
        str(e["outcome"]) for e in read_events(run_dir / EVENTS) if e["kind"] == "final"
    )
    return RunSummary(
        run_id=str(manifest["run_id"]),
        run_dir=str(run_dir),
        schedule=str(manifest["schedule"]),
        session=number,
        cells=len(schedule),
        skipped=skipped,
        sent=session.sent,
        finalized=session.finalized,
        outcomes=dict(outcomes),
        tokens_in=session.tokens[0],
        tokens_out=session.tokens[1],
        cost_usd=session.cost,
        elapsed_s=time.perf_counter() - started,
    )


def _check_agent(manifest: dict[str, Any], agent: Agent) -> None:
    described = describe_agent(agent)
    if manifest["agent"] != described:
        raise Refusal(
            [
                Reason(
                    "different",
                    f"run {manifest['run_id']} was made with agent "
                    f"{manifest['agent'].get('name')!r}; "
                    f"resuming with {described.get('name')!r} would mix agents in one run",
                    subject="agent",
                    data={"manifest": manifest["agent"], "given": described},
                )
            ],
            gate="resume",
        )


def _close_open_attempts(
    session: _Session, schedule: Schedule, states: dict[str, CellState]
) -> list[tuple[Cell, int]]:
    """Close what a crash left open; return the cells still to send.

    An attempt without a tool_event is logged ``interrupted``. A cell whose latest
    tool_event is a model outcome but whose final record was lost gets its final from
    that event (it is never sent again); a cell that used up its attempts gets its
    last reliability outcome as final.
    """
    todo: list[tuple[Cell, int]] = []
    for cell in schedule:
        state = states[cell.cell_id]
        if state.finals:
            continue
        last = state.last_event
        if (
            not state.open_attempts
            and last is not None
            and not Outcome(last["outcome"]).is_reliability
        ):
            session.final(cell, last, int(last["attempt"]), note="final restored from tool_event")
            continue
        for attempt in state.open_attempts:
            state.last_event = session.log.append(
                {
                    "kind": "tool_event",
                    "cell": cell.cell_id,
                    "request_digest": cell.request_digest,
                    "attempt": attempt,
                    **_empty_usage(),
                    "latency_s": None,
                    "outcome": Outcome.INTERRUPTED.value,
                    "detail": "the run stopped while this call was in flight",
                    "status": None,
                    "retry_after": None,
                    "response": None,
                }
            )
        if state.attempts >= session.policy.max_attempts and state.last_event is not None:
            session.final(
                cell,
                state.last_event,
                state.attempts,
                note="retry limit reached before this session",
            )
            continue
        todo.append((cell, state.attempts))
    return todo


def _run_pool(session: _Session, todo: list[tuple[Cell, int]], concurrency: int) -> None:
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="rungbench-cell")
    futures: list[Future[None]] = [pool.submit(session.run_cell, c, n) for c, n in todo]
    try:
        finished, _ = wait(futures, return_when=FIRST_EXCEPTION)
        for future in finished:
            error = future.exception()
            if error is not None:
                raise error
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _empty_usage() -> dict[str, Any]:
    return {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0}


@dataclass(frozen=True)
class RunCheck:
    """The result of checking a run's log against its frozen schedule."""

    cells: int
    """Cells in the schedule."""
    final: int
    """Cells with exactly one final record."""
    problems: tuple[str, ...]
    """Every violation found (missing or duplicate finals, events after a final)."""

    @property
    def ok(self) -> bool:
        """Whether every cell has exactly one final outcome and nothing follows it."""
        return not self.problems and self.final == self.cells


def verify_run(run_dir: Path) -> RunCheck:
    """Check that every cell has exactly one final outcome and no call after it."""
    _, schedule = load_run(run_dir)
    events = read_events(run_dir / EVENTS)
    states = reduce_events(events, schedule)
    problems: list[str] = []
    closed: set[str] = set()
    for event in events:
        cell = event.get("cell")
        if event["kind"] in ("attempt", "tool_event") and cell in closed:
            problems.append(f"cell {cell!r}: {event['kind']} after its final outcome")
        if event["kind"] == "final":
            closed.add(str(cell))
    for cell_id, state in states.items():
        if len(state.finals) != 1:
            problems.append(f"cell {cell_id!r}: {len(state.finals)} final outcomes")
    single = sum(1 for s in states.values() if len(s.finals) == 1)
    return RunCheck(len(schedule), single, tuple(problems))
