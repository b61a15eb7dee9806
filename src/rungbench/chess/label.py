"""The two-pass label runner (seed 002, "Two passes, one narrow question" and "Pass A presents").

Order of events, each a gate that refuses rather than warns:

1. leakage preflight (:func:`rungbench.chess.qualify.preflight`) — no engine exists yet;
2. idle-host gate before engine start;
3. engines started and identified (binary sha256, ``id name``, bench, every option);
4. every (position, pass) looked up in the cache and revalidated; each uncached search
   passes the idle gate, clears the hash and runs; its record is stored immutably;
5. pass A and pass B compared by the stability rules; a stable position gets pass A's
   ranks 1–10 as its candidate list, an unstable one a registered exclusion;
6. publication (:mod:`rungbench.chess.publish`), all or nothing.

Pass A runs over the whole pool before pass B. Workers are separate single-thread
engine processes; a search's result does not depend on which worker ran it, so the
manifest does not depend on the number of workers or on interruptions.
"""

from __future__ import annotations

import fcntl
import queue
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import chess.engine

import chess
from rungbench.chess.cache import PASSES, CacheKey, Pass, SearchCache, make_record
from rungbench.chess.engine import (
    EngineConfig,
    EngineIdentity,
    identify,
    lines_json,
    search,
    start_uci,
)
from rungbench.chess.idle import IdleGate
from rungbench.chess.pool import FrozenPool, load_pool
from rungbench.chess.position import Position
from rungbench.chess.publish import Outcome, publish_stage
from rungbench.chess.qualify import DEFAULT_COHORTS, preflight
from rungbench.chess.stability import (
    MIN_LINES,
    PassView,
    classify,
    expectation_units,
    stability_reasons,
)
from rungbench.chess.workspace import Workspace
from rungbench.errors import IntegrityError, Reason, Refusal

CANDIDATES_SCHEMA = "rungbench.chess.candidates/1"
"""Schema name and version of a candidate list."""

Progress = Callable[[int, int], None]
"""Called with (done, total) after every planned pass is accounted for."""


@dataclass(frozen=True)
class LabelConfig:
    """Everything a label run is configured with (recorded in the stage)."""

    engine: EngineConfig = field(default_factory=EngineConfig)
    """The search contract."""
    cohorts: tuple[str, ...] = DEFAULT_COHORTS
    """Cohorts the pool must be jointly cleared against."""
    workers: int = 1
    """Engine processes searching in parallel."""


@dataclass(frozen=True)
class Task:
    """One planned pass of one position."""

    position: Position
    """The position searched."""
    pass_: Pass
    """Which pass."""
    key: CacheKey
    """Its cache key."""


@dataclass
class RunLog:
    """What happened during one invocation (not part of the published evidence)."""

    cache_hits: int = 0
    """Records reused after revalidation."""
    searches: int = 0
    """Searches run by this invocation."""
    rejected: Counter[str] = field(default_factory=Counter)
    """Cache records rejected on revalidation, by first problem."""

    def to_json(self) -> dict[str, Any]:
        """Return the log as a JSON-ready mapping."""
        return {"cache_hits": self.cache_hits, "searches": self.searches,
                "rejected": dict(sorted(self.rejected.items()))}


def pass_view(lines: Sequence[dict[str, Any]]) -> PassView:
    """Return the rule inputs of one pass's recorded lines."""
    return PassView(
        moves=tuple(str(line["uci"]) for line in lines),
        expectations=tuple(expectation_units(*line["wdl"]) for line in lines),
        best_mate=lines[0]["score"].get("mate") if lines else None,
        best_forcing=bool(lines[0]["forcing"]) if lines else False,
    )


def candidate_list(position: Position, record: dict[str, Any], record_digest: str
                   ) -> dict[str, Any]:
    """Return pass A's ranks 1–10 as the candidate list the experiment presents."""
    items = [{
        "rank": line["rank"], "uci": line["uci"], "san": line["san"], "score": line["score"],
        "wdl": line["wdl"], "expectation": expectation_units(*line["wdl"]) / 2000,
        "search": line["search"], "pv": line["pv"],
    } for line in record["payload"]["lines"][:MIN_LINES]]
    return {"schema": CANDIDATES_SCHEMA, "key": position.key, "fen": position.fen,
            "engine": record["key"]["engine"], "contract": record["key"]["contract"],
            "pass": "A", "record": record_digest, "candidates": items}


def judge(position: Position, rec_a: tuple[dict[str, Any], str],
          rec_b: tuple[dict[str, Any], str]) -> Outcome:
    """Return the label or registered exclusion of one position from its two passes."""
    view_a = pass_view(rec_a[0]["payload"]["lines"])
    view_b = pass_view(rec_b[0]["payload"]["lines"])
    reasons = stability_reasons(view_a, view_b)
    classes = tuple(classify(v) if len(v.moves) >= 2 else "unclassified"
                    for v in (view_a, view_b))
    candidates = None if reasons else candidate_list(position, *rec_a)
    return Outcome(position=position, label=None if reasons else classes[0],
                   reasons=tuple(reasons), classes=(classes[0], classes[1]),
                   records=(rec_a[1], rec_b[1]), candidates=candidates)


def plan(pool: FrozenPool, identity: EngineIdentity, config: EngineConfig) -> list[Task]:
    """Return every planned pass: pass A over the pool, then pass B."""
    contract = config.to_json()
    contract.pop("path")
    return [Task(pos, p, CacheKey(identity.digest, contract, pos.fen, p))
            for p in PASSES for pos in pool.positions]


class EngineSet:
    """Started engine processes shared by worker threads."""

    def __init__(self, config: EngineConfig, workers: int) -> None:
        self.engines: list[chess.engine.SimpleEngine] = []
        self.free: queue.Queue[chess.engine.SimpleEngine] = queue.Queue()
        try:
            for _ in range(max(1, workers)):
                engine = start_uci(config)
                self.engines.append(engine)
                self.free.put(engine)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop every engine process."""
        for engine in self.engines:
            try:
                engine.quit()
            except (chess.engine.EngineError, chess.engine.EngineTerminatedError, TimeoutError):
                engine.close()
        self.engines = []


def _run_task(task: Task, engines: EngineSet, config: EngineConfig, gate: IdleGate,
              cache: SearchCache) -> None:
    gate.check("before an uncached search", own=len(engines.engines))
    engine = engines.free.get()
    try:
        board = chess.Board(task.position.fen)
        lines = lines_json(board, search(engine, board, config))
    finally:
        engines.free.put(engine)
    cache.put(task.key, make_record(task.key, lines))


def _search_all(todo: Sequence[Task], engines: EngineSet, config: EngineConfig,
                gate: IdleGate, cache: SearchCache, tick: Callable[[], None]) -> None:
    with ThreadPoolExecutor(max_workers=len(engines.engines)) as pool:
        futures = [pool.submit(_run_task, t, engines, config, gate, cache) for t in todo]
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_EXCEPTION)
            for future in done:
                if future.exception() is not None:
                    for other in pending:
                        other.cancel()
                    raise future.exception()  # type: ignore[misc]
                tick()


@contextmanager
def exclusive(workspace: Workspace) -> Iterator[None]:
    """Hold the workspace's run lock; refuse when another label run holds it.

    ``flock`` is released by the kernel when its holder dies, SIGKILL included.
    """
    workspace.root.mkdir(parents=True, exist_ok=True)
    with open(workspace.root / ".label.lock", "a") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise Refusal([Reason("workspace_busy", "another label run holds this workspace",
                                  subject="workspace")], gate="chess label run") from exc
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def run_label_stage(workspace: Workspace, config: LabelConfig, gate: IdleGate,
                    progress: Progress | None = None) -> dict[str, Any]:
    """Run (or resume) the label stage and publish it; return the summary."""
    with exclusive(workspace):
        return _run_locked(workspace, config, gate, progress)


def _run_locked(workspace: Workspace, config: LabelConfig, gate: IdleGate,
                progress: Progress | None) -> dict[str, Any]:
    preflight(workspace, config.cohorts)
    pool = load_pool(workspace.pool)
    gate.check("before engine start")
    log = RunLog()
    engines = EngineSet(config.engine, config.workers)
    try:
        identity = identify(engines.engines[0], config.engine, workspace)
        tasks = plan(pool, identity, config.engine)
        cache = SearchCache(workspace)
        done = 0

        def tick() -> None:
            nonlocal done
            done += 1
            if progress is not None:
                progress(done, len(tasks))

        todo = _cached_or_todo(tasks, cache, log, tick)
        _search_all(todo, engines, config.engine, gate, cache, tick)
        log.searches = len(todo)
    finally:
        engines.close()
    outcomes = _judge_all(tasks, cache)
    summary = publish_stage(workspace, outcomes, identity=identity, config=config, gate=gate)
    return {**summary, "run": log.to_json()}


def _cached_or_todo(tasks: Sequence[Task], cache: SearchCache, log: RunLog,
                    tick: Callable[[], None]) -> list[Task]:
    todo: list[Task] = []
    for task in tasks:
        found = cache.lookup(task.key)
        if found.rejected:
            log.rejected[found.rejected[0].split(":")[0]] += 1
        if found.record is None:
            todo.append(task)
        else:
            log.cache_hits += 1
            tick()
    return todo


def _judge_all(tasks: Sequence[Task], cache: SearchCache) -> list[Outcome]:
    by_pos: dict[str, dict[str, tuple[dict[str, Any], str]]] = {}
    order: list[Position] = []
    for task in tasks:
        found = cache.lookup(task.key)
        if found.record is None or found.record_digest is None:
            raise IntegrityError(f"record for {task.position.key!r} pass {task.pass_} failed "
                                 f"revalidation after it was written: {found.rejected}")
        if task.position.key not in by_pos:
            by_pos[task.position.key] = {}
            order.append(task.position)
        by_pos[task.position.key][task.pass_] = (found.record, found.record_digest)
    return [judge(pos, by_pos[pos.key]["A"], by_pos[pos.key]["B"]) for pos in order]

