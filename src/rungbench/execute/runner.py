"""The resumable cell runner.

A run lives in ``<out>/runs/<run_id>/``::

    manifest.json      run identity: schedule digest, agent description, retry policy
    objects/sha256/…   the schedule record, every request's bytes, every response
    events.jsonl       run, session, attempt, tool_call, tool_event, unresolved and final
                       records
                       (hash-chained, crash-safe; see :mod:`rungbench.execute.events`)
    .lock              flock held while a process executes the run (one at a time)

A run directory appears complete or not at all: :func:`create_run` builds it in a
hidden temporary sibling (``runs/.<run_id>.tmp-<pid>``) and renames it into place;
leftovers of a killed creation are removed by the next :func:`create_run` in the same
``runs/`` folder and named by a resume that asks for them.

Rules (seed 000; docs/ARCHITECTURE.md, "A run"; docs/CONTRACTS.md §7):

* Each request is sent from a fresh context; its digest is recomputed and checked
  against the frozen schedule before every send, and written in an ``attempt``
  record that is durable *before* the request leaves.
* The log is group-committed (:mod:`rungbench.execute.journal`): one writer thread,
  one fsync per batch of records; which record must be durable before which side
  effect is argued in :class:`_Session`. The file's bytes are those of
  :class:`~rungbench.execute.events.EventLog` (same records, same chain).
* Reliability outcomes (provider, network, timeout, interrupted) are retried in
  the identical frozen cell up to ``RetryPolicy.max_attempts`` times *per session*;
  a cell still failing then gets an ``unresolved`` record and no final outcome, so
  the run is incomplete and a later ``--resume`` retries it under the same limit.
  Model outcomes (answered, malformed, refusal, illegal) are final at once.
* Every cell ends with at most one ``final`` record, a model outcome or an answer,
  re-derived on every read from the stored response it names. A resumed run never
  re-sends a cell that has one; an attempt left in flight by a crash is closed as
  ``interrupted``.
"""

from __future__ import annotations

import contextlib
import fcntl
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rungbench.agents.outcomes import CallFailure, Outcome, Validator, classify
from rungbench.agents.protocol import Agent, LoopAgent, Request, Response, describe_agent
from rungbench.errors import InputError, IntegrityError, Reason, Refusal
from rungbench.evidence.canonical import canonical_bytes
from rungbench.evidence.store import ObjectStore
from rungbench.execute.cell_loop import run_cells
from rungbench.execute.events import (
    CHAIN,
    EventLog,
)
from rungbench.execute.journal import GroupLog
from rungbench.execute.object_batch import BatchedObjects
from rungbench.execute.policy import RetryPolicy
from rungbench.execute.run_dir import (
    EVENTS,
    MANIFEST,
    RUN_VERSION,
    TEMP_MARK,
    clear_leftovers,
    create_run,
    load_run,
    runs_folder,
)
from rungbench.execute.run_log import (
    FINAL_FIELDS,
    CellState,
    RunCheck,
    check_finals,
    read_log,
    reduce_events,
    response_from_json,
    response_json,
    verify_run,
)
from rungbench.execute.schedule import Cell, Schedule
from rungbench.execute.tools import TOOL_CALL, Budget, ToolboxFactory, run_episode

__all__ = [
    "EVENTS", "FINAL_FIELDS", "MANIFEST", "RUN_VERSION", "TEMP_MARK", "CellState", "RunCheck",
    "RunInterrupted", "RunSummary", "agent_differences", "call_agent", "check_finals",
    "clear_leftovers", "create_run", "describe_agent", "execute_run", "load_run", "read_log",
    "reduce_events", "response_from_json", "response_json", "runs_folder", "unresolved_record",
    "verify_run",
]

INTERRUPT_GRACE_S = 1.0
"""After an interrupt (Ctrl-C), how long the session waits for calls in flight before it
closes its log and gives up on them (a resume closes them as ``interrupted``)."""


class RunInterrupted(KeyboardInterrupt):
    """Raised when an interrupt (Ctrl-C) stopped a run: everything that finished is durable,
    and a resume continues it."""

    def __init__(self, run_id: str, run_dir: Path) -> None:
        self.run_id = run_id
        self.run_dir = run_dir
        super().__init__(f"run {run_id} interrupted ({run_dir})")


ProgressHook = Callable[[int, int], None]
"""Called with ``(cells settled, cells total)`` at the start and whenever a cell settles
(gets its final outcome, or is left unresolved by this session)."""


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
    unresolved: int
    """Cells with no final outcome after this session (reliability failures; resume them)."""
    unresolved_outcomes: dict[str, int]
    """The latest reliability outcome of each unresolved cell, by class."""
    tokens_in: int
    """Prompt tokens of this session's calls."""
    tokens_out: int
    """Completion tokens of this session's calls."""
    cost_usd: float
    """Cost of this session's calls."""
    elapsed_s: float
    """Wall time of this session."""
    stopped: dict[str, Any] | None = None
    """Why the session stopped before its cells were done (``reason``
    ``systematic_failure``: the number of cells in a row, their outcome, HTTP status and
    detail), or None."""

    @property
    def cells_per_s(self) -> float:
        """Cells finalized per second in this session."""
        return self.finalized / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        """Return the summary as a JSON-ready mapping."""
        return {
            **asdict(self),
            "outcomes": dict(sorted(self.outcomes.items())),
            "unresolved_outcomes": dict(sorted(self.unresolved_outcomes.items())),
            "cost_usd": round(self.cost_usd, 6),
            "elapsed_s": round(self.elapsed_s, 3),
            "cells_per_s": round(self.cells_per_s, 3),
        }


class _Session:
    """One execution of a run: the group-committed log, the store, the counters (thread-safe).

    What must be durable before what (the crash-safety argument; :mod:`.journal` makes
    durability a prefix of the file, so "X durable" implies "everything before X durable"):

    * ``attempt`` before its request is sent. A crash after the send then leaves an open
      attempt, which a resume closes as ``interrupted`` (counted, retried), never an
      unrecorded call. A worker therefore waits for its attempt's batch before it takes a
      call slot. An attempt durable but not yet sent when the process dies is closed the
      same way: an attempt record means "may have left", never "did not leave".
    * The stored response before the ``tool_event`` naming it: the worker queues its bytes
      and the log writer writes them, makes them durable and renames them into place before
      it writes that batch (:class:`~rungbench.execute.object_batch.BatchedObjects`, passed
      as ``before``), so no durable event names an object a crash lost. A tool episode's
      objects are put durably by :meth:`ObjectStore.put_json` in the worker.
    * Nothing waits for a ``tool_event``, ``unresolved`` or ``final``: a lost final whose
      tool_event survived is restored from it on resume (never re-sent); a lost tool_event
      leaves the attempt open, so the cell is retried as ``interrupted``, which is right
      because its answer is not on disk. A retry's next ``attempt`` is waited for, which
      makes the previous tool_event durable first. A tool-use episode's ``tool_call``
      records are waited for before the next turn is sent (the same rule as an attempt).
    * The session ends with :meth:`GroupLog.close`, so everything is durable before
      :func:`execute_run` returns (and before a summary counts it).

    One writer thread fsyncs once per batch; with ``concurrency`` calls in flight a batch
    holds the records of every cell that moved during the previous fsync. ``concurrency``
    bounds calls in flight (a semaphore around the call); a further ``concurrency``
    workers prepare the next cells (digest check, attempt made durable) meanwhile, so a
    freed slot is refilled without waiting for an fsync. A crash can thus leave at most
    ``2 * concurrency`` open attempts. Memory held per cell is the frozen request and a
    few strings; events, responses and futures are not kept.
    """

    def __init__(
        self,
        run_dir: Path,
        agent: Agent,
        policy: RetryPolicy,
        validator: Validator | None,
        sleep: Callable[[float], None],
        toolbox: ToolboxFactory | None = None,
        executor: Executor | None = None,
        concurrency: int = 1,
    ) -> None:
        self.toolbox = toolbox
        self.log: GroupLog | None = None
        self.store = ObjectStore(run_dir)
        self.objects = BatchedObjects(self.store)
        """Stored responses, made durable by the log writer before the records naming them."""
        self.agent: Agent = agent if executor is None else _Dispatched(agent, executor)
        self.policy = policy
        self.validator = validator
        self.sleep = sleep
        self.lock = threading.Lock()
        self.calls = threading.BoundedSemaphore(concurrency)
        """One permit per call in flight."""
        self.sent = 0
        self.finalized = 0
        self.tokens = [0, 0]
        self.cost = 0.0
        self.progress: Callable[[], None] = lambda: None
        self.frozen: dict[str, str] = {}
        """Cell id -> request digest as loaded from the frozen schedule at session start."""
        self.outcomes: Counter[str] = Counter()
        """Final outcomes of the whole run (those found at start and those written now)."""
        self.pending: dict[str, str] = {}
        """Cells without a final -> their latest outcome (``not_sent`` if never sent)."""
        self.stopping = threading.Event()
        """Set when the session takes no further cell (systematic failures, an interrupt)."""
        self.streak = 0
        """Cells in a row whose latest attempt failed systematically."""
        self.stopped: dict[str, Any] | None = None
        """Why the session stopped early (None: it did not)."""

    def give_up(self, failure: CallFailure) -> bool:
        """Whether a cell that just failed with ``failure`` gets no further attempt now: a
        systematic failure, when the policy stops on them (the cell is left unresolved)."""
        return failure.systematic and self.policy.stop_after_systematic > 0

    def settle(self, failure: CallFailure | None) -> None:
        """Count a cell's settled attempt: a systematic failure lengthens the streak (which
        stops the session at the policy's count), anything else ends it."""
        with self.lock:
            if failure is None or not failure.systematic:
                self.streak = 0
                return
            self.streak += 1
            limit = self.policy.stop_after_systematic
            if limit and self.streak >= limit and self.stopped is None:
                self.stopped = {"reason": "systematic_failure", "cells": self.streak,
                                "outcome": failure.outcome.value, "status": failure.status,
                                "detail": failure.detail}
                self.stopping.set()

    @property
    def journal(self) -> GroupLog:
        """The open log (set once the session has verified the log and opened it)."""
        if self.log is None:
            raise RuntimeError("the session's log is not open")
        return self.log

    def submit(
        self, records: list[dict[str, Any]], *, before: Callable[[], None] | None = None
    ) -> int:
        """Queue ``records`` for the log; return the ticket that waits for their durability."""
        return self.journal.submit(records, before=before)[1]

    def run_cell(self, cell: Cell, prior_attempts: int) -> None:
        """Send ``cell`` until a final outcome or this session's attempt limit; log every step.

        ``prior_attempts`` (earlier sessions) only continues the numbering: each session
        may send a cell up to ``policy.max_attempts`` times.
        """
        attempt, retry_after = prior_attempts, None
        while True:
            attempt += 1
            if attempt > prior_attempts + 1:
                self.sleep(self.policy.wait_before(attempt - prior_attempts, retry_after))
            last = self.policy.is_last(attempt, prior_attempts)
            failed = self._attempt(cell, attempt, last=last)
            if failed is None or last or self.give_up(failed[0]):
                self.settle(None if failed is None else failed[0])
                return
            retry_after = failed[0].retry_after

    def _attempt(
        self, cell: Cell, attempt: int, *, last: bool
    ) -> tuple[CallFailure, dict[str, Any]] | None:
        base, ticket = self.begin(cell, attempt)
        self.journal.wait(ticket)  # durable, then send
        episode: dict[str, Any] = {}
        failure: CallFailure | None = None
        with self.calls:
            self.count_sent()
            start = time.perf_counter()
            try:
                response = self._respond(cell, base, episode)
            except CallFailure as exc:
                failure = exc
            latency = time.perf_counter() - start
        if failure is not None:
            return self.failed(cell, base, failure, latency, episode, last=last)
        stored = self.objects.put(canonical_bytes(response_json(response)))
        self.answered(cell, base, response, latency, episode, stored)
        return None

    def begin(self, cell: Cell, attempt: int) -> tuple[dict[str, Any], int]:
        """Check ``cell``'s request against its frozen digest and queue its ``attempt``
        record; return the records' common fields and the ticket that waits for the
        attempt's durability (which must come before the request is sent)."""
        frozen = self.frozen[cell.cell_id]
        if cell.request.digest() != frozen:
            raise IntegrityError(f"cell {cell.cell_id!r}: request changed since it was frozen")
        base = {"cell": cell.cell_id, "request_digest": frozen, "attempt": attempt}
        return base, self.submit([{"kind": "attempt", **base}])

    def count_sent(self) -> None:
        """Count one request as sent (call it holding a call slot)."""
        with self.lock:
            self.sent += 1

    def failed(
        self,
        cell: Cell,
        base: dict[str, Any],
        failure: CallFailure,
        latency: float,
        episode: dict[str, Any],
        *,
        last: bool,
    ) -> tuple[CallFailure, dict[str, Any]]:
        """Queue a failed attempt's tool_event (and, on the ``last`` attempt, the cell's
        ``unresolved`` record, or its final when the attempt reaches the run-wide cap);
        return the failure and the event."""
        event = {
            "kind": "tool_event",
            **base,
            **_empty_usage(),
            "latency_s": round(latency, 6),
            "outcome": failure.outcome.value,
            "detail": failure.detail,
            "status": failure.status,
            "retry_after": failure.retry_after,
            "response": None,
            **episode,
        }
        with self.lock:
            self.pending[cell.cell_id] = failure.outcome.value
        if self.policy.is_capped(int(base["attempt"])):
            self.final(cell, event, int(base["attempt"]), preceded_by=event,
                       note=capped_note(self.policy))
        elif last or self.give_up(failure):
            self.submit([event, unresolved_record(cell, event, int(base["attempt"]))])
            self.progress()
        else:
            self.submit([event])
        return failure, event

    def answered(
        self,
        cell: Cell,
        base: dict[str, Any],
        response: Response,
        latency: float,
        episode: dict[str, Any],
        stored: str,
    ) -> None:
        """Classify an answer stored as ``stored`` (by :attr:`objects`); queue its tool_event
        and the final, written only once :attr:`objects` has made the answer durable."""
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
            **episode,
        }
        with self.lock:
            self.tokens[0] += usage.tokens_in
            self.tokens[1] += usage.tokens_out
            self.cost += usage.cost_usd
        self.final(cell, event, int(base["attempt"]), preceded_by=event,
                   before=self.objects.flush)

    def _respond(self, cell: Cell, base: dict[str, Any], episode: dict[str, Any]) -> Response:
        """One attempt's response: a single call, or a tool-use episode when a toolbox is set.

        ``episode`` receives the episode's counters (``turns``, ``tool_calls``, ``stop``),
        which the attempt's tool_event carries; each executed call is logged as a
        ``tool_call`` record of the open attempt, durably, before the next turn is sent.
        """
        if self.toolbox is None:
            return self.agent.respond(cell.request)
        env = self.toolbox(cell.request)
        turns = [0, 0]

        def record(body: dict[str, Any]) -> None:
            turns[1] += 1
            self.journal.append({"kind": TOOL_CALL, **base, **body})

        try:
            result = run_episode(self.agent, cell.request, env, Budget.of(cell.request),
                                 record=record, keep=self.store.put_json)
        except CallFailure:
            episode.update({"turns": None, "tool_calls": turns[1], "stop": "failed"})
            raise
        finally:
            env.close()
        episode.update({"turns": result.turns, "tool_calls": result.tool_calls,
                        "stop": result.stop})
        return result.response

    def final(
        self,
        cell: Cell,
        source: dict[str, Any],
        attempts: int,
        *,
        preceded_by: dict[str, Any] | None = None,
        note: str | None = None,
        before: Callable[[], None] | None = None,
    ) -> None:
        """Queue the one final record of ``cell``, taken from its deciding tool_event.

        When ``preceded_by`` is given, that tool_event and the final are queued together
        (contiguous in the log, in one batch). Nothing waits for them (see the class).
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
        self.submit([preceded_by, record] if preceded_by is not None else [record],
                    before=before)
        with self.lock:
            self.finalized += 1
            self.outcomes[str(source["outcome"])] += 1
            self.pending.pop(cell.cell_id, None)
        self.progress()


def call_agent(agent: Agent, request: Request) -> Response:
    """One provider call: what :func:`execute_run` submits to a given ``executor``.

    A module-level function (not a bound method), so an executor that ships work to
    another process pickles it by name together with the agent and the request.
    """
    return agent.respond(request)


class _Dispatched:
    """An agent whose every call is submitted to ``executor`` and awaited by the caller."""

    def __init__(self, agent: Agent, executor: Executor) -> None:
        self.inner = agent
        self.name = agent.name
        self.executor = executor

    def respond(self, request: Request) -> Response:
        """Submit one call and wait for it (a CallFailure raised there is raised here)."""
        return self.executor.submit(call_agent, self.inner, request).result()


def unresolved_record(cell: Cell, source: dict[str, Any], attempts: int) -> dict[str, Any]:
    """The record a session writes when it gives up on ``cell`` after reliability failures."""
    return {
        "kind": "unresolved",
        "cell": cell.cell_id,
        "request_digest": cell.request_digest,
        "attempts": attempts,
        "outcome": source["outcome"],
        "detail": source.get("detail", ""),
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
    toolbox: ToolboxFactory | None = None,
    executor: Executor | None = None,
) -> RunSummary:
    """Run (or resume) every cell of ``run_dir`` that has no final outcome yet.

    Agent calls go through ``executor`` when one is given (each call is
    ``executor.submit(call_agent, agent, request)``, awaited by the driver); the driver
    keeps every log write, fsync, classification and final record, and never has more
    than ``concurrency`` calls outstanding, so the bound is global whatever the executor's
    own worker count. Without one, calls run on the driver's own ``concurrency`` threads,
    or, for an agent that answers as a coroutine (:class:`LoopAgent`, the OpenAI-compatible
    provider) and no ``toolbox``, as coroutines on the agent's loop
    (:mod:`rungbench.execute.cell_loop`). The log and the store depend on neither.

    With ``toolbox``, every attempt is a tool-use episode (:mod:`rungbench.execute.tools`):
    each executed tool call is a ``tool_call`` record and the attempt's tool_event sums the
    tokens and cost of all its turns.

    ``max_cells`` sends at most that many pending cells in this session (the rest wait
    for a resume). Refuses (reason ``different``) when ``agent`` is not the agent the
    manifest names, and (reason ``run_busy``) while another process executes the run.
    The log is verified (:func:`read_log`) before anything is sent.
    """
    if concurrency < 1:
        raise InputError(f"concurrency must be >= 1, got {concurrency!r}", field="concurrency")
    started = time.perf_counter()
    manifest, schedule = load_run(run_dir)
    with _exclusive(run_dir):
        return _execute(
            run_dir, manifest, schedule, agent, validator, concurrency, progress, max_cells,
            sleep, started, toolbox, executor,
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
    toolbox: ToolboxFactory | None = None,
    executor: Executor | None = None,
) -> RunSummary:
    _check_agent(manifest, agent)
    session = _Session(run_dir, agent, RetryPolicy.from_json(manifest["policy"]), validator, sleep,
                       toolbox, executor, concurrency)
    torn = EventLog(run_dir / EVENTS).repair()
    events, states = read_log(run_dir, schedule, validator)
    session.frozen = {cell_id: state.request_digest for cell_id, state in states.items()}
    number = 1 + sum(1 for e in events if e["kind"] == "session")
    head = str(events[-1][CHAIN])
    del events  # the verified log is folded into ``states``; nothing keeps it
    skipped = 0
    for cell_id, state in states.items():
        if state.finals:
            skipped += 1
            session.outcomes[str(state.finals[0]["outcome"])] += 1
        else:
            last = state.last_event
            session.pending[cell_id] = str(last["outcome"]) if last is not None else "not_sent"
    done = [skipped]

    def tick() -> None:
        with session.lock:
            done[0] += 1
            value = done[0]
        if progress is not None:
            progress(value, len(schedule))

    with GroupLog(run_dir / EVENTS, head) as log:
        session.log = log
        session.submit([{"kind": "session", "session": number, "concurrency": concurrency,
                         "agent": agent.name, "torn_bytes": torn,
                         **_endpoint(describe_agent(agent))}])
        session.progress = tick
        if progress is not None:
            progress(skipped, len(schedule))
        todo = _close_open_attempts(session, schedule, states)
        del states
        if max_cells is not None:
            todo = todo[:max_cells]
        try:
            if executor is None and toolbox is None and isinstance(agent, LoopAgent):
                run_cells(session, agent, todo, concurrency)
            else:
                _run_pool(session, todo, concurrency)
        except KeyboardInterrupt:
            session.stopping.set()
            interrupted = True
        else:
            interrupted = False
    if interrupted:  # the log is closed: what finished is durable
        raise RunInterrupted(str(manifest["run_id"]), run_dir) from None
    unresolved = Counter(session.pending.values())
    return RunSummary(
        run_id=str(manifest["run_id"]),
        run_dir=str(run_dir),
        schedule=str(manifest["schedule"]),
        session=number,
        cells=len(schedule),
        skipped=skipped,
        sent=session.sent,
        finalized=session.finalized,
        outcomes=dict(session.outcomes),
        unresolved=sum(unresolved.values()),
        unresolved_outcomes=dict(unresolved),
        tokens_in=session.tokens[0],
        tokens_out=session.tokens[1],
        cost_usd=session.cost,
        elapsed_s=time.perf_counter() - started,
        stopped=session.stopped,
    )


def _check_agent(manifest: dict[str, Any], agent: Agent) -> None:
    """Refuse to resume a run with another agent. An endpoint's URL may change (a proxy, a
    port) without changing what answers: the manifest keeps the URL the run was created
    with, and each session record the one it sends to."""
    described = describe_agent(agent)
    frozen = manifest["agent"]
    changes = [c for c in agent_differences(frozen, described)
               if not c[0].endswith(".base_url")]
    if changes:
        listed = "; ".join(f"{path}: {old} (run) vs {new} (now)" for path, old, new in changes)
        raise Refusal(
            [
                Reason(
                    "different",
                    f"run {manifest['run_id']} was made with another agent setting "
                    f"({listed}); resuming would mix agents in one run",
                    subject="agent",
                    data={"manifest": frozen, "given": described,
                          "fields": [p for p, _, _ in changes]},
                )
            ],
            gate="resume",
        )


def _endpoint(description: dict[str, Any]) -> dict[str, Any]:
    """``{"base_url": URL}`` of the endpoint a description names (at any depth), or {}."""
    if isinstance(description.get("base_url"), str):
        return {"base_url": description["base_url"]}
    for value in description.values():
        if isinstance(value, dict) and (found := _endpoint(value)):
            return found
    return {}


_ABSENT = object()


def agent_differences(frozen: Any, given: Any, path: str = "agent") -> list[tuple[str, str, str]]:
    """Every leaf where two agent descriptions differ: ``(dotted path, run value, new value)``.

    Values are shown as canonical JSON (``absent`` for a missing key).
    """
    if isinstance(frozen, dict) and isinstance(given, dict):
        out: list[tuple[str, str, str]] = []
        for key in sorted(set(frozen) | set(given)):
            out += agent_differences(frozen.get(key, _ABSENT), given.get(key, _ABSENT),
                                     f"{path}.{key}")
        return out
    if frozen == given:
        return []
    return [(path, _shown(frozen), _shown(given))]


def _shown(value: Any) -> str:
    if value is _ABSENT:
        return "absent"
    try:
        return canonical_bytes(value).decode("utf-8")[:120]
    except InputError:
        return repr(value)[:120]


def _close_open_attempts(
    session: _Session, schedule: Schedule, states: dict[str, CellState]
) -> list[tuple[Cell, int]]:
    """Close what a crash left open; return the cells still to send.

    An attempt without a tool_event is logged ``interrupted``. A cell whose latest
    tool_event is a model outcome but whose final record was lost gets its final from
    that event (it is never sent again). Every other cell without a final is sent again,
    with a fresh per-session attempt budget.
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
            last = {
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
            session.submit([last])
            session.pending[cell.cell_id] = Outcome.INTERRUPTED.value
        if last is not None and session.policy.is_capped(state.attempts):
            session.final(cell, last, state.attempts, note=capped_note(session.policy))
            continue
        todo.append((cell, state.attempts))
    return todo


def capped_note(policy: RetryPolicy) -> str:
    """The note of a final written because a cell reached the run-wide retry cap."""
    return (f"terminal provider failure: {policy.max_retries} retries (the registered cap) "
            "spent across the run's sessions")


def _run_pool(session: _Session, todo: list[tuple[Cell, int]], concurrency: int) -> None:
    """Run ``todo`` on ``2 * concurrency`` worker threads (``concurrency`` calls at once).

    Workers take cells in schedule order from one shared iterator, so no per-cell future
    or task is held. The first error stops the others taking new cells; cells already
    started are finished (as a thread pool finishes its running tasks), then it is raised.
    """
    feed = iter(todo)
    feed_lock = threading.Lock()
    stop = threading.Event()
    errors: list[BaseException] = []

    def work() -> None:
        while not stop.is_set() and not session.stopping.is_set():
            with feed_lock:
                item = next(feed, None)
            if item is None:
                return
            try:
                session.run_cell(*item)
            except BaseException as exc:  # re-raised by the driver
                errors.append(exc)
                stop.set()
                return

    workers = [threading.Thread(target=work, name=f"rungbench-cell-{i}", daemon=True)
               for i in range(min(2 * concurrency, len(todo)))]
    for worker in workers:
        worker.start()
    try:
        for worker in workers:
            worker.join()
    except KeyboardInterrupt:  # calls in flight get a moment, then are left to the resume
        stop.set()
        deadline = time.monotonic() + INTERRUPT_GRACE_S
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        raise
    if errors:
        raise errors[0]


def _empty_usage() -> dict[str, Any]:
    return {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0}
