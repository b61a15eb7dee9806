"""Searching successors: evaluator processes on this host or the executor's workers.

:class:`Engines` starts and identifies one evaluator per local worker; each engine is fed
by a driver thread that writes the previous record while the next search runs. With an
executor (:mod:`rungbench.execute.executors`, e.g. Ray), :func:`evaluate_in_worker` starts
an evaluator inside the worker, requires its identity digest to equal the driver's
(``engine_changed``) and returns the record for the driver alone to revalidate and store.
Used by :mod:`.evaluation`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import chess.engine

import chess
from rungbench.chess.engine import binary_digest
from rungbench.chess.labels.idle import IdleGate
from rungbench.chess.studies import evaluator as ev
from rungbench.chess.studies.successor_records import EvaluationCache, SuccessorKey, make_record
from rungbench.chess.studies.wdl_model import WdlModel
from rungbench.errors import Reason, Refusal
from rungbench.execute.executors import discard_resource, dispatch, worker_resource

Progress = Callable[[int, int], None]
"""Called with (successors accounted for, total) as the stage advances."""


class Engines:
    """Evaluator processes started and identified in parallel, one per worker."""

    def __init__(self, config: ev.EvaluatorConfig, model: WdlModel, workers: int) -> None:
        self.engines: list[chess.engine.SimpleEngine] = []
        with ThreadPoolExecutor(max_workers=workers + 1) as pool:
            sha = pool.submit(binary_digest, config.binary)
            started = [pool.submit(ev.start_engine, config) for _ in range(workers)]
            self.engines = [f.result() for f in started if f.exception() is None]
            failure = next((f.exception() for f in started if f.exception() is not None), None)
            if failure is not None:
                self.close()
                raise failure
            try:
                identities = list(pool.map(lambda e: ev.identify(e, config, model,
                                                                 sha256=sha.result()),
                                           self.engines))
            except BaseException:
                self.close()
                raise
        self.name = identities[0].name
        self.identity = identities[0]

    def close(self) -> None:
        """Stop every engine process."""
        for engine in self.engines:
            ev.close_engine(engine)
        self.engines = []


@dataclass
class SearchCounter:
    """Successors accounted for so far, reported to the stage's progress callback."""

    done: int = 0
    total: int = 0
    progress: Progress | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def tick(self) -> None:
        """Count one successor done (thread-safe) and report progress."""
        with self.lock:
            self.done += 1
            if self.progress is not None:
                self.progress(self.done, self.total)


class _Driver:
    """Feeds one engine; the previous search's record is written while the next one runs."""

    def __init__(self, engine: chess.engine.SimpleEngine, ctx: SearchContext, own: int) -> None:
        self.engine, self.ctx, self.own = engine, ctx, own
        self.pending: tuple[SuccessorKey, chess.Board, chess.engine.InfoDict] | None = None

    def flush(self) -> None:
        if self.pending is None:
            return
        (key, board, info), self.pending = self.pending, None
        self.ctx.cache.put(key, make_record(key, board, info, self.ctx.model), self.ctx.model)
        self.ctx.counter.tick()

    def run(self, next_key: Callable[[], SuccessorKey | None]) -> None:
        try:
            while (key := next_key()) is not None:
                self.ctx.gate.check("before an uncached search", own=self.own)
                board = key.successor
                handle = ev.start_search(self.engine, board, self.ctx.depth)
                self.flush()
                info = ev.finish_search(self.engine, handle, name=self.ctx.name,
                                        timeout_s=self.ctx.timeout_s, fen=board.fen())
                self.pending = (key, board, info)
        finally:
            self.flush()


@dataclass(frozen=True)
class SearchContext:
    """What every search of one stage run shares: cache, model, idle gate, contract."""

    cache: EvaluationCache
    model: WdlModel
    gate: IdleGate
    counter: SearchCounter
    depth: int
    name: str
    timeout_s: float


def search_all(todo: Sequence[SuccessorKey], engines: Engines, ctx: SearchContext) -> None:
    """Search every key of ``todo`` on the local engines, one driver thread per engine;
    the first failure stops the others and is raised."""
    keys = iter(todo)
    lock = threading.Lock()
    stop = threading.Event()

    def next_key() -> SuccessorKey | None:
        with lock:
            return None if stop.is_set() else next(keys, None)

    def drive(engine: chess.engine.SimpleEngine) -> None:
        try:
            _Driver(engine, ctx, len(engines.engines)).run(next_key)
        except BaseException:
            stop.set()
            raise

    with ThreadPoolExecutor(max_workers=len(engines.engines)) as pool:
        futures = [pool.submit(drive, e) for e in engines.engines]
    for future in futures:
        error = future.exception()
        if error is not None:
            raise error


WORKER_SLOT = "rungbench.chess.evaluator-engine"
"""The worker-resource slot holding a worker's evaluator."""


@dataclass(frozen=True)
class EvaluationJob:
    """What a worker needs to evaluate successors with an evaluator identical to the driver's."""

    config: ev.EvaluatorConfig
    """The evaluation contract."""
    model: WdlModel
    """The registered conversion model."""
    identity: ev.EvaluatorIdentity
    """The driver's evaluator identity."""


def worker_evaluator(job: EvaluationJob) -> chess.engine.SimpleEngine:
    """Start and identify an evaluator in this worker; refuse (``engine_changed``) unless its
    identity is the driver's."""
    engine = ev.start_engine(job.config)
    try:
        mine = ev.identify(engine, job.config, job.model,
                           sha256=binary_digest(job.config.binary))
        if mine.digest != job.identity.digest:
            raise Refusal([Reason(
                "engine_changed", f"the evaluator in worker {os.uname().nodename}:{os.getpid()} "
                f"identifies as {mine.digest} (binary {mine.sha256}), the driver's as "
                f"{job.identity.digest} (binary {job.identity.sha256})", subject="worker",
                data={"digest": mine.digest, "expected": job.identity.digest})],
                gate="chess evaluation worker")
    except BaseException:
        ev.close_engine(engine)
        raise
    return engine


def evaluate_in_worker(job: EvaluationJob, key: SuccessorKey) -> dict[str, Any]:
    """Search one successor in this worker (evaluator started and verified once); return its
    record, for the driver to revalidate and store."""
    engine = worker_resource(WORKER_SLOT, job.identity.digest, partial(worker_evaluator, job),
                             ev.close_engine)
    board = key.successor
    try:
        info = ev.search(engine, board, job.config.search_depth, name=job.identity.name,
                         timeout_s=job.config.timeout_s)
    except BaseException:
        discard_resource(WORKER_SLOT)
        raise
    return make_record(key, board, info, job.model)


def search_on(executor: Executor, todo: Sequence[SuccessorKey], job: EvaluationJob,
               workers: int, ctx: SearchContext) -> None:
    """Hand every successor to ``executor``; store each returned record here, the driver."""
    def store(key: SuccessorKey, record: dict[str, Any]) -> None:
        ctx.cache.put(key, record, ctx.model)
        ctx.counter.tick()

    dispatch(executor, partial(evaluate_in_worker, job), todo, window=2 * workers,
             before_submit=lambda: ctx.gate.check("before an uncached search", own=workers),
             on_result=store)
