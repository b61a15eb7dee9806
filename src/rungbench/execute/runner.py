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

Rules (seed 000; DESIGN.md "Provider outcomes"):

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
import os
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Executor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rungbench.agents.outcomes import CallFailure, Outcome, Validator, classify
from rungbench.agents.protocol import Agent, Request, Response, ToolCall, Usage
from rungbench.errors import InputError, IntegrityError, Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, canonical_bytes, digest, loads_canonical
from rungbench.evidence.sealed import process_alive
from rungbench.evidence.store import TEMP_PREFIX, ObjectStore, fsync_dir
from rungbench.execute.events import (
    CHAIN,
    EventLog,
    chained_lines,
    read_events,
    torn_bytes,
    utc_now,
)
from rungbench.execute.journal import GroupLog
from rungbench.execute.policy import RetryPolicy
from rungbench.execute.schedule import Cell, Schedule, load_schedule
from rungbench.execute.tools import TOOL_CALL, Budget, ToolboxFactory, run_episode

RUN_VERSION = "rungbench.run/1"
MANIFEST = "manifest.json"
EVENTS = "events.jsonl"
TEMP_MARK = ".tmp-"
"""A run being created lives in ``runs/.<run_id>.tmp-<pid>`` until it is complete."""

ProgressHook = Callable[[int, int], None]
"""Called with ``(cells settled, cells total)`` at the start and whenever a cell settles
(gets its final outcome, or is left unresolved by this session)."""


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
    """Create a run directory atomically; return it.

    The schedule, the manifest and the log's first (``run``) record are written in a
    hidden temporary sibling, fsynced, and the sibling is renamed to ``runs/<run_id>``:
    a kill at any point leaves either no run or a complete one.
    """
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    rid = run_id or f"{stamp}-{schedule.digest()[7:15]}-{os.urandom(2).hex()}"
    runs = runs_folder(out_dir)
    run_dir = runs / rid
    if run_dir.exists():
        raise InputError(f"run directory already exists: {run_dir}", path=str(run_dir))
    clear_leftovers(runs)
    temp = runs / f".{rid}{TEMP_MARK}{os.getpid()}"
    temp.mkdir()
    try:
        _fill_run(temp, rid, schedule, agent_description, policy or RetryPolicy())
        temp.rename(run_dir)
        fsync_dir(runs)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    return run_dir


def runs_folder(out_dir: Path) -> Path:
    """Return ``out_dir/runs``, created; a file where a folder must be is an input error."""
    for folder in (out_dir, out_dir / "runs"):
        if folder.exists() and not folder.is_dir():
            raise InputError("a file is there where the runs folder should be", path=str(folder))
    runs = out_dir / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    return runs


def _fill_run(
    folder: Path, rid: str, schedule: Schedule, agent: dict[str, Any], policy: RetryPolicy
) -> None:
    schedule_digest = schedule.save(ObjectStore(folder))
    manifest = {
        "version": RUN_VERSION,
        "run_id": rid,
        "created": utc_now(),
        "schedule": schedule_digest,
        "task": schedule.task,
        "cells": len(schedule),
        "agent": agent,
        # seed 000 claim gate 5: the tool schema must be identical across every arm
        "tool_schemas": sorted({digest(list(c.request.tools)) for c in schedule}),
        "policy": policy.to_json(),
    }
    data = canonical_bytes(manifest) + b"\n"
    first = {"kind": "run", "run_id": rid, "manifest": bytes_digest(data), "t": manifest["created"]}
    for name, content in ((MANIFEST, data), (EVENTS, chained_lines([first])[0])):
        with open(folder / name, "xb") as fh:
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())
    for path in folder.rglob("*"):
        if path.is_dir():
            fsync_dir(path)
    fsync_dir(folder)


def clear_leftovers(runs: Path) -> list[Path]:
    """Remove temporary run folders whose creating process is gone; return them."""
    removed = []
    for path in sorted(runs.glob(f".*{TEMP_MARK}*")):
        pid = path.name.rpartition(TEMP_MARK)[2]
        if path.is_dir() and pid.isdigit() and not process_alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def load_run(run_dir: Path) -> tuple[dict[str, Any], Schedule]:
    """Return a run's manifest and its verified frozen schedule.

    The manifest must hash to the digest the log's first record names, so an edited
    manifest (or a log taken from another run) is an :class:`IntegrityError`.
    """
    path = run_dir / MANIFEST
    if not run_dir.is_dir():
        raise InputError("not a run directory", path=str(run_dir))
    if not path.exists():
        if (run_dir / EVENTS).exists():
            raise IntegrityError(f"{path}: missing (the run's {EVENTS} is there)")
        raise InputError(f"not a run directory (no {MANIFEST})", path=str(path))
    data = path.read_bytes()
    manifest = loads_canonical(data.rstrip(b"\n"), path=str(path))
    if not isinstance(manifest, dict) or manifest.get("version") != RUN_VERSION:
        raise InputError(f"not a {RUN_VERSION} manifest", path=str(path), field="version")
    _check_manifest_anchor(run_dir, bytes_digest(data))
    return manifest, load_schedule(ObjectStore(run_dir), str(manifest["schedule"]))


def _check_manifest_anchor(run_dir: Path, manifest_digest: str) -> None:
    events_path = run_dir / EVENTS
    if not events_path.exists():
        raise IntegrityError(f"{events_path}: missing (every run is created with its log)")
    events = read_events(events_path)
    if not events or events[0]["kind"] != "run":
        raise IntegrityError(f"{events_path}:1: the log does not open with its run record")
    if events[0].get("manifest") != manifest_digest:
        raise IntegrityError(
            f"{run_dir / MANIFEST}: changed since the run was created (digest "
            f"{manifest_digest}, the log names {events[0].get('manifest')})"
        )


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


def reduce_events(events: list[dict[str, Any]], schedule: Schedule) -> dict[str, CellState]:
    """Fold the event log into per-cell state; raise when the log contradicts itself.

    An event naming an unknown cell or a request digest other than the frozen one, an
    attempt out of sequence, a tool_event for no open attempt, and a final that does not
    copy its deciding tool_event (or records a reliability outcome) are each an
    :class:`IntegrityError` naming the log line.
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
        problem = _fold(state, event)
        if problem is not None:
            raise IntegrityError(f"{where}: cell {event['cell']!r}: {problem}")
    return states


def _fold(state: CellState, event: dict[str, Any]) -> str | None:
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
            return _fold_final(state, event)
        elif kind != "unresolved":
            return f"unknown event kind {kind!r}"
    except (KeyError, TypeError, ValueError) as exc:
        return f"malformed {event.get('kind')} record ({type(exc).__name__}: {exc})"
    return None


def _fold_final(state: CellState, event: dict[str, Any]) -> str | None:
    source = state.last_event
    if source is None or state.open_attempts:
        return "final outcome without a deciding tool_event"
    if Outcome(event["outcome"]).is_reliability:
        return f"final outcome {event['outcome']!r} is a reliability outcome"
    changed = [f for f in FINAL_FIELDS if event.get(f) != source.get(f)]
    if event.get("attempts") != source.get("attempt"):
        changed.append("attempts")
    if changed:
        return f"final differs from its tool_event in {', '.join(changed)}"
    state.finals.append(event)
    return None


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
    tool call (legality is the one judgement left unchecked).
    """
    store = ObjectStore(run_dir)
    for cell in schedule:
        for final in states[cell.cell_id].finals:
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
    try:
        states = reduce_events(events, schedule)
    except IntegrityError as exc:
        raise IntegrityError(f"{run_dir}/{exc}") from None
    check_finals(run_dir, schedule, states, validator)
    return events, states


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
    * The stored response (its file fsynced and renamed, its folder fsynced, by
      :meth:`ObjectStore.put_json` in the worker) before the ``tool_event`` naming it is
      submitted, so no durable event names an object a crash lost.
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
        self.objects = _ResponseWriter(self.store)
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

    @property
    def journal(self) -> GroupLog:
        """The open log (set once the session has verified the log and opened it)."""
        if self.log is None:
            raise RuntimeError("the session's log is not open")
        return self.log

    def submit(self, records: list[dict[str, Any]]) -> int:
        """Queue ``records`` for the log; return the ticket that waits for their durability."""
        return self.journal.submit(records)[1]

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
            failed = self._attempt(cell, attempt, last=attempt - prior_attempts
                                   >= self.policy.max_attempts)
            if failed is None or attempt - prior_attempts >= self.policy.max_attempts:
                return
            retry_after = failed[0].retry_after

    def _attempt(
        self, cell: Cell, attempt: int, *, last: bool
    ) -> tuple[CallFailure, dict[str, Any]] | None:
        frozen = self.frozen[cell.cell_id]
        if cell.request.digest() != frozen:
            raise IntegrityError(f"cell {cell.cell_id!r}: request changed since it was frozen")
        base = {"cell": cell.cell_id, "request_digest": frozen, "attempt": attempt}
        self.journal.wait(self.submit([{"kind": "attempt", **base}]))  # durable, then send
        episode: dict[str, Any] = {}
        failure: CallFailure | None = None
        with self.calls:
            with self.lock:
                self.sent += 1
            start = time.perf_counter()
            try:
                response = self._respond(cell, base, episode)
            except CallFailure as exc:
                failure = exc
            latency = time.perf_counter() - start
        if failure is not None:
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
            if last:
                self.submit([event, unresolved_record(cell, event, attempt)])
                self.progress()
            else:
                self.submit([event])
            return failure, event
        stored = self.objects.put(canonical_bytes(response_json(response)))  # durable first
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
        self.final(cell, event, attempt, preceded_by=event)
        return None

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
        self.submit([preceded_by, record] if preceded_by is not None else [record])
        with self.lock:
            self.finalized += 1
            self.outcomes[str(source["outcome"])] += 1
            self.pending.pop(cell.cell_id, None)
        self.progress()


class _ResponseWriter:
    """Durable puts into a run's object store with few system calls (the runner's hot path).

    The same files as :meth:`ObjectStore.put_bytes` (``objects/sha256/<2>/<62>``, mode
    0444, written through a temp file that is fsynced and renamed, the folder fsynced), but
    without its checks of every parent folder on every put: a shard folder is made once per
    session, and a present object is replaced by the same bytes rather than read back. Any
    OS error falls back to :meth:`ObjectStore.put_bytes`, which names what is wrong.
    Workers call it concurrently: the file systems' journals merge their fsyncs.
    """

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self.made: set[str] = set()

    def put(self, data: bytes) -> str:
        """Store ``data`` durably; return its digest."""
        name = bytes_digest(data)
        hexpart = name[len("sha256:"):]
        folder = str(self.store.objects / hexpart[:2])
        temp = f"{folder}/{TEMP_PREFIX}{hexpart[2:18]}-{threading.get_ident()}"
        try:
            if folder not in self.made:
                os.makedirs(folder, exist_ok=True)
                self.made.add(folder)
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o444)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, f"{folder}/{hexpart[2:]}")
            fsync_dir(folder)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            return self.store.put_bytes(data)
        return name


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
    toolbox: ToolboxFactory | None = None,
    executor: Executor | None = None,
) -> RunSummary:
    """Run (or resume) every cell of ``run_dir`` that has no final outcome yet.

    Agent calls go through ``executor`` when one is given (each call is
    ``executor.submit(call_agent, agent, request)``, awaited by the driver); the driver
    keeps every log write, fsync, classification and final record, and never has more
    than ``concurrency`` calls outstanding, so the bound is global whatever the executor's
    own worker count. Without one, calls run on the driver's own ``concurrency`` threads.
    The log and the store do not depend on the executor.

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
                         "agent": agent.name, "torn_bytes": torn}])
        session.progress = tick
        if progress is not None:
            progress(skipped, len(schedule))
        todo = _close_open_attempts(session, schedule, states)
        del states
        if max_cells is not None:
            todo = todo[:max_cells]
        _run_pool(session, todo, concurrency)
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
    )


def _check_agent(manifest: dict[str, Any], agent: Agent) -> None:
    described = describe_agent(agent)
    frozen = manifest["agent"]
    if frozen != described:
        changes = agent_differences(frozen, described)
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
            session.submit([{
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
            }])
            session.pending[cell.cell_id] = Outcome.INTERRUPTED.value
        todo.append((cell, state.attempts))
    return todo


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
        while not stop.is_set():
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
    finally:
        stop.set()
        for worker in workers:
            worker.join()
    if errors:
        raise errors[0]


def _empty_usage() -> dict[str, Any]:
    return {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0}


@dataclass(frozen=True)
class RunCheck:
    """The result of checking a run's (verified) log against its frozen schedule."""

    cells: int
    """Cells in the schedule."""
    final: int
    """Cells with their one final outcome."""
    problems: tuple[str, ...]
    """Why the run is not finished: cells without a final outcome, a torn last line."""

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
    return RunCheck(len(schedule), single, tuple(problems))
