"""The two-pass label runner (seed 002, "Two passes, one narrow question" and "Pass A presents").

Order of events, each a gate that refuses rather than warns:

1. leakage preflight (:func:`rungbench.chess.labels.qualify.preflight`) — no engine exists yet;
   an already published stage is verified (:func:`rungbench.chess.labels.publish.verify_stage`);
2. idle-host gate before engine start;
3. engines started and identified (build, file sha256s, ``id name``, bench, every option);
   a workspace whose cache or published stage holds another engine's searches refuses
   (``engine_mismatch``, :func:`rungbench.chess.labels.cache.pin_engine`);
4. every (position, pass) looked up in the cache and revalidated; each uncached search
   passes the idle gate, clears the hash and runs; its record is stored immutably;
5. pass A and pass B compared by the stability rules; a stable position gets pass A's
   ranks 1–10 as its candidate list, an unstable one a registered exclusion;
6. publication (:mod:`rungbench.chess.labels.publish`), all or nothing.

Pass A runs over the whole pool before pass B. Workers are separate single-thread
engine processes, started in parallel while the binary is hashed; each is fed by one
thread that writes the previous search's record while the engine runs the next one.
A search's result does not depend on which worker ran it, so the manifest does not
depend on the number of workers or on interruptions.

With an ``executor`` (:mod:`rungbench.execute.executors`, e.g. Ray tasks) the driver
identifies one engine of its own, closes it, and hands each uncached search to the
executor: :func:`search_in_worker` starts an engine inside the worker, checks that the
worker's engine files hash as the driver's and that its identity digest (build, files,
``id name``, bench signature, every option) equals the driver's (``engine_changed``
otherwise), and returns the record; the driver revalidates and stores it and publishes, as
without one. The bench signature is taken from the driver once the worker's files hash
the same, since it is a property of those bytes.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import chess.engine

import chess
from rungbench.chess.engine import (
    ENGINE_FAILURES,
    EngineConfig,
    EngineIdentity,
    build_digests,
    build_record,
    finish_search,
    identify,
    lines_json,
    options_in_force,
    search,
    start_search,
    start_uci,
)
from rungbench.chess.engine_builds import files_digest
from rungbench.chess.labels.cache import (
    PASSES,
    CacheKey,
    Pass,
    SearchCache,
    check_published_engine,
    make_record,
    pin_engine,
)
from rungbench.chess.labels.config import LabelConfig
from rungbench.chess.labels.idle import IdleGate
from rungbench.chess.labels.pool import FrozenPool, load_pool
from rungbench.chess.labels.publish import Outcome, publish_stage, verify_stage
from rungbench.chess.labels.qualify import preflight
from rungbench.chess.labels.stability import (
    MIN_LINES,
    PassView,
    classify,
    expectation_units,
    stability_reasons,
)
from rungbench.chess.position import Position
from rungbench.chess.workspace import Workspace
from rungbench.errors import IntegrityError, Reason, Refusal

CANDIDATES_SCHEMA = "rungbench.chess.candidates/1"
"""Schema name and version of a candidate list."""

Progress = Callable[[int, int], None]
"""Called with (done, total) after every planned pass is accounted for."""


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
    for part in ("path", "build"):  # the identity names the build and its files' digests
        contract.pop(part)
    return [Task(pos, p, CacheKey(identity.digest, contract, pos.fen, p))
            for p in PASSES for pos in pool.positions]


class EngineSet:
    """Engine processes started in parallel, one per worker."""

    def __init__(self, config: EngineConfig, workers: int) -> None:
        self.engines: list[chess.engine.SimpleEngine] = []
        count = max(1, workers)
        with ThreadPoolExecutor(max_workers=count) as starter:
            futures = [starter.submit(start_uci, config) for _ in range(count)]
        failures = [f.exception() for f in futures if f.exception() is not None]
        self.engines = [f.result() for f in futures if f.exception() is None]
        if failures:
            self.close()
            raise failures[0]  # type: ignore[misc]

    def close(self) -> None:
        """Stop every engine process."""
        for engine in self.engines:
            try:
                engine.quit()
            except ENGINE_FAILURES:
                engine.close()
        self.engines = []


Pending = tuple[Task, chess.Board, list[chess.engine.InfoDict]]
"""A finished search whose record is not yet written."""


class _Driver:
    """Feeds one engine: while it searches, the previous search's record is written.

    Per search: idle gate, then Clear Hash + search sent in one command; the record of
    the search before is built, revalidated and stored while the engine works, so the
    engine waits only for the gate and the hand-over, not for JSON, hashing or fsync.
    """

    def __init__(self, engine: chess.engine.SimpleEngine, config: EngineConfig, gate: IdleGate,
                 cache: SearchCache, tick: Callable[[], None], own: int) -> None:
        self.engine, self.config, self.gate, self.cache = engine, config, gate, cache
        self.tick, self.own = tick, own
        self.pending: Pending | None = None

    def flush(self) -> None:
        """Store the record of the finished search, if any."""
        if self.pending is None:
            return
        (task, board, infos), self.pending = self.pending, None
        self.cache.put(task.key, make_record(task.key, lines_json(board, infos)))
        self.tick()

    def run(self, next_task: Callable[[], Task | None]) -> None:
        """Search tasks until none is left, then store the last record."""
        try:
            while (task := next_task()) is not None:
                self.gate.check("before an uncached search", own=self.own)
                board = chess.Board(task.position.fen)
                with start_search(self.engine, board, self.config) as handle:
                    self.flush()
                    infos = finish_search(handle, self.config)
                self.pending = (task, board, infos)
        finally:
            self.flush()


def _search_all(todo: Sequence[Task], engines: EngineSet, config: EngineConfig,
                gate: IdleGate, cache: SearchCache, tick: Callable[[], None]) -> None:
    tasks = iter(todo)
    lock = threading.Lock()
    stop = threading.Event()

    def next_task() -> Task | None:
        with lock:
            return None if stop.is_set() else next(tasks, None)

    def drive(engine: chess.engine.SimpleEngine) -> None:
        try:
            _Driver(engine, config, gate, cache, tick, len(engines.engines)).run(next_task)
        except BaseException:
            stop.set()
            raise

    with ThreadPoolExecutor(max_workers=len(engines.engines)) as pool:
        futures = [pool.submit(drive, engine) for engine in engines.engines]
    for future in futures:
        if future.exception() is not None:
            raise future.exception()  # type: ignore[misc]


WORKER_WINDOW = 2
"""Searches in flight per worker on an executor (one searching, one waiting its turn)."""
WORKER_SLOT = "rungbench.chess.label-engine"
"""The worker-resource slot holding a worker's label engine."""


@dataclass(frozen=True)
class SearchJob:
    """What a worker needs to run label searches with an engine identical to the driver's."""

    config: EngineConfig
    """The search contract."""
    identity: EngineIdentity
    """The driver's engine identity."""


def _close_engine(engine: chess.engine.SimpleEngine) -> None:
    try:
        engine.quit()
    except ENGINE_FAILURES:
        engine.close()


def _changed(detail: str, data: dict[str, Any]) -> Refusal:
    return Refusal([Reason("engine_changed", detail, subject="worker", data=data)],
                   gate="chess label worker")


def worker_engine(job: SearchJob) -> chess.engine.SimpleEngine:
    """Start an engine in this worker and verify it is the driver's (``engine_changed``)."""
    expected = job.identity
    digests = build_digests(job.config)
    sha = files_digest(digests)
    if sha != expected.sha256:
        raise _changed(f"{job.config.file} hashes {sha} in worker {os.uname().nodename}:"
                       f"{os.getpid()}, the driver identified {expected.sha256}",
                       {"sha256": sha, "expected": expected.sha256})
    engine = start_uci(job.config)
    try:
        mine = EngineIdentity(sha, str(engine.id.get("name", "")), expected.bench_nodes,
                              options_in_force(engine, job.config),
                              build_record(engine, job.config, digests))
        if mine.digest != expected.digest:
            raise _changed(f"the engine in worker {os.uname().nodename}:{os.getpid()} "
                           f"identifies as {mine.name!r} ({mine.digest}), the driver's as "
                           f"{expected.name!r} ({expected.digest})",
                           {"digest": mine.digest, "expected": expected.digest})
    except BaseException:
        engine.close()
        raise
    return engine


def search_in_worker(job: SearchJob, task: Task) -> dict[str, Any]:
    """Run one planned pass in this worker (engine started and verified once); return its
    cache record, for the driver to revalidate and store."""
    from rungbench.execute.executors import discard_resource, worker_resource

    engine = worker_resource(WORKER_SLOT, job.identity.digest, partial(worker_engine, job),
                             _close_engine)
    board = chess.Board(task.position.fen)
    try:
        infos = search(engine, board, job.config)
    except BaseException:
        discard_resource(WORKER_SLOT)
        raise
    return make_record(task.key, lines_json(board, infos))


def _search_on(executor: Executor, todo: Sequence[Task], job: SearchJob, workers: int,
               gate: IdleGate, cache: SearchCache, tick: Callable[[], None]) -> None:
    """Hand every search to ``executor``; store each returned record here, the driver."""
    # imported here: rungbench.execute loads the cell runner, which the CLI must not pay for
    from rungbench.execute.executors import dispatch

    def store(task: Task, record: dict[str, Any]) -> None:
        cache.put(task.key, record)
        tick()

    dispatch(executor, partial(search_in_worker, job), todo, window=WORKER_WINDOW * workers,
             before_submit=lambda: gate.check("before an uncached search", own=workers),
             on_result=store)


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
                    progress: Progress | None = None, *,
                    executor: Executor | None = None) -> dict[str, Any]:
    """Run (or resume) the label stage and publish it; return the summary.

    ``executor`` None runs ``config.workers`` engines here; an executor (Ray tasks) runs
    the searches in its workers, at most ``2 × config.workers`` in flight.
    """
    with exclusive(workspace):
        return _run_locked(workspace, config, gate, progress, executor)


def _run_locked(workspace: Workspace, config: LabelConfig, gate: IdleGate,
                progress: Progress | None, executor: Executor | None) -> dict[str, Any]:
    preflight(workspace, config.cohorts)
    pool = load_pool(workspace.pool)
    published = None
    if workspace.stage.exists():
        published = verify_stage(workspace)  # a tampered stage refuses before any engine starts
    gate.check("before engine start")
    log = RunLog()
    with ThreadPoolExecutor(max_workers=1) as hasher:  # hash the files while engines start
        files = hasher.submit(build_digests, config.engine)
        engines = EngineSet(config.engine, config.workers if executor is None else 1)
    try:
        identity = identify(engines.engines[0], config.engine, workspace,
                            digests=files.result())
        if published is not None:
            check_published_engine(published["engine"], identity)
        pin_engine(workspace, identity)
        tasks = plan(pool, identity, config.engine)
        cache = SearchCache(workspace)
        done = 0
        ticking = threading.Lock()

        def tick() -> None:
            nonlocal done
            with ticking:
                done += 1
                if progress is not None:
                    progress(done, len(tasks))

        todo = _cached_or_todo(tasks, cache, log, tick)
        if executor is None:
            _search_all(todo, engines, config.engine, gate, cache, tick)
        else:
            engines.close()  # it identified the engine; the workers search
            _search_on(executor, todo, SearchJob(config.engine, identity), config.workers,
                       gate, cache, tick)
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

