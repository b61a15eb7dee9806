"""The evaluation stage: a finished run's moves → WDL regret by a different-family engine.

Seed 002 ("The labeling engine cannot grade its own exam"), seed 001 (WDL regret,
catastrophic-blunder rate) and seed 000 (model failures get maximal regret).

Inputs: a run directory made by ``rungbench run`` over a move-choice schedule (read
through :func:`rungbench.execute.runner.load_run` and :func:`~rungbench.execute.runner.
read_log`, which verify the manifest, the hash chain and every final against its stored
response) and the published label stage (:func:`rungbench.chess.labels.stage_records.
read_stage`, which verifies the seal and every digest). Every cell's position must be
one of the stage's frozen positions (``position_not_frozen`` otherwise).

Order of gates, each refusing rather than warning, all before any engine starts except
the last three:

1. the labeller's family (from the stage record) against the evaluator's
   (``evaluator_same_family`` unless ``--proxy stockfish``);
2. the conversion model's digest against the registered one (``conversion_model_changed``);
3. every cell's position frozen in the label stage (``position_not_frozen``);
4. idle host before engine start; engines started and identified, reference signature
   compared with the registry (``engine_changed``);
5. idle host before every uncached search;
6. publication: the binary re-hashed (``engine_binary_changed``), idle host, then one
   atomic rename of a sealed directory (:func:`rungbench.evidence.sealed.publish_dir`).

Successor evaluations are content-addressed immutable records keyed by (evaluator
identity digest, conversion-model digest, depth, normalized position, move), shared by
every cell, arm, model and run that uses the position. The engine is given the
normalized position with its counters reset (``<key> 0 1``) and the move played, so a
record is a function of its key; the halfmove clock's 50-move horizon is thereby
ignored (a stated simplification). Every record is revalidated before reuse (bytes,
schema, key, payload digest, successor FEN, PV legality, and the expectation recomputed
from the score by the model); a failing record is quarantined and searched again.
Successors that end the game are scored by the stated rule
(:func:`rungbench.chess.studies.wdl_model.terminal_ppm`) without an engine.

Published directory (sealed, kind ``rungbench.chess.evaluation``)::

    evaluation.json   inputs, labeller and evaluator identities and families, role label,
                      model, contract, threshold, idle gate, digests of the files below
    cells.json        one scored outcome per frozen cell, schedule order
    positions.json    per position: every legal move's expectation, best set, records
    summary.json      classes, mean regret, catastrophic rates, hazard table, bad input
    anomalies.json    answers that name no frozen cell or repeat a cell, verbatim

No file holds a time, a path or a worker count, so two clean runs, runs with 1 or 2
workers, and a run resumed after SIGKILL publish byte-identical directories.

With an ``executor`` (:mod:`rungbench.execute.executors`, e.g. Ray tasks) the driver
identifies one evaluator of its own (gate 4), closes it and hands each uncached successor
to the executor: :func:`evaluate_in_worker` starts an evaluator inside the worker,
identifies it there (binary sha256, reference signature against the registry) and requires
its identity digest to equal the driver's (``engine_changed``), then returns the record;
the driver alone revalidates, stores and publishes, so the directory is the same.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import Any

import chess.engine

import chess
from rungbench.chess.engine import binary_digest
from rungbench.chess.labels.idle import IdleGate
from rungbench.chess.labels.stage_records import read_stage, verify_stage_dir
from rungbench.chess.position import normalized_key
from rungbench.chess.reference_agents import submitted_move
from rungbench.chess.studies import evaluator as ev
from rungbench.chess.studies.regret import (
    Answer,
    CellInfo,
    PositionValues,
    Scored,
    mover_ppm,
    rule_ppm,
    score_answers,
    summarize,
)
from rungbench.chess.studies.wdl_model import WdlModel
from rungbench.errors import InputError, IntegrityError, Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, canonical_bytes, digest, loads_canonical
from rungbench.evidence.sealed import leftover_temps, publish_dir, verify_sealed
from rungbench.evidence.store import ObjectStore, write_atomic
from rungbench.execute.executors import discard_resource, dispatch, worker_resource
from rungbench.execute.runner import MANIFEST, load_run, read_log, response_from_json

RECORD_SCHEMA = "rungbench.chess.successor-eval/1"
"""Schema name and version of a successor-evaluation record."""
EVALUATION_SCHEMA = "rungbench.chess.evaluation/1"
"""Schema name and version of ``evaluation.json``."""
EVALUATION_KIND = "rungbench.chess.evaluation"
"""Seal kind of a published evaluation."""
GATE = "chess evaluation"
"""Gate name in refusals."""

Progress = Callable[[int, int], None]
"""Called with (successors accounted for, total) as the stage advances."""


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class SuccessorKey:
    """Everything one successor evaluation depends on."""

    evaluator: str
    """Digest of the evaluator identity."""
    model: str
    """Digest of the conversion model."""
    depth: int
    """Search depth."""
    position: str
    """Normalized identity of the position before the move."""
    move: str
    """The move (UCI)."""

    def to_json(self) -> dict[str, Any]:
        """Return the key as recorded inside the record."""
        return {"evaluator": self.evaluator, "model": self.model, "depth": self.depth,
                "position": self.position, "move": self.move}

    @cached_property
    def digest(self) -> str:
        """Digest of the key (names the index entry)."""
        return digest(self.to_json())

    @property
    def successor(self) -> chess.Board:
        """The board the engine searches: the normalized position, counters reset, moved.

        Returned without a move stack, so the engine receives ``position fen <successor>``:
        Ethereal 12.00 aborts (``getlsb: Assertion `bb' failed``) on ``position fen <root>
        moves <m>`` when the move leaves the side to move a bare king (measured on
        ``7k/8/6K1/8/8/8/8/Q7 w - -`` + any queen move), and answers the same position
        given as a plain FEN.
        """
        board = chess.Board(f"{self.position} 0 1")
        board.push(chess.Move.from_uci(self.move))
        return chess.Board(board.fen())


def make_record(key: SuccessorKey, board: chess.Board, info: chess.engine.InfoDict,
                model: WdlModel) -> dict[str, Any]:
    """Return the record of one finished search of ``key.successor``."""
    score = info.get("score")
    if score is None:
        raise ev.EvaluatorError(f"search of {board.fen()!r} returned no score")
    score_j = ev.score_json(score.pov(board.turn))
    payload = {"successor": board.fen(), "score": score_j,
               "search": {"depth": int(info.get("depth", 0)),
                          "seldepth": int(info.get("seldepth", 0)),
                          "nodes": int(info.get("nodes", 0))},
               "pv": [m.uci() for m in info.get("pv") or []],
               "expectation_ppm": mover_ppm(score_j, board, model)}
    return {"schema": RECORD_SCHEMA, "key": key.to_json(), "payload": payload,
            "payload_digest": digest(payload)}


def _pv_legal(board: chess.Board, pv: Sequence[str]) -> bool:
    replay = board.copy(stack=False)
    for uci in pv:
        try:
            move = chess.Move.from_uci(uci)
        except ValueError:
            return False
        if move not in replay.legal_moves:
            return False
        replay.push(move)
    return True


def record_problems(record: Any, key: SuccessorKey, model: WdlModel) -> list[str]:
    """Return every reason ``record`` may not be reused for ``key`` (empty: valid)."""
    if not isinstance(record, dict) or record.get("schema") != RECORD_SCHEMA:
        return ["schema"]
    if record.get("key") != key.to_json():
        return ["key"]
    payload = record.get("payload")
    if not isinstance(payload, dict) or record.get("payload_digest") != digest(payload):
        return ["payload_digest"]
    board = key.successor
    problems = []
    if payload.get("successor") != board.fen():
        problems.append("successor")
    score = payload.get("score")
    if not isinstance(score, dict) or len(score) != 1 or not (
            set(score) <= {"cp", "mate"} and type(next(iter(score.values()))) is int):
        return [*problems, "score"]
    if payload.get("expectation_ppm") != mover_ppm(score, board, model):
        problems.append("expectation_ppm")
    if not isinstance(payload.get("pv"), list) or not _pv_legal(board, payload["pv"]):
        problems.append("pv")
    return problems


class EvaluationCache:
    """A directory of successor-evaluation records with one index file per key.

    ``<root>/objects/sha256/..`` holds the records (immutable, content-addressed),
    ``<root>/index/<hex of key digest>.json`` names each key's record, and
    ``<root>/quarantine/`` receives records that failed revalidation.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.store = ObjectStore(root)

    def index_path(self, key: SuccessorKey) -> Path:
        """The index file of ``key``."""
        return self.root / "index" / f"{key.digest[7:]}.json"

    def lookup(self, key: SuccessorKey, model: WdlModel) -> tuple[dict[str, Any] | None,
                                                                 str | None, list[str]]:
        """Return ``(record, record digest, problems)``; a bad record is quarantined."""
        path = self.index_path(key)
        if not path.is_file():
            return None, None, []
        name: str | None = None
        try:
            entry = loads_canonical(path.read_bytes(), path=str(path))
            if not isinstance(entry, dict) or entry.get("key") != key.digest:
                raise InputError("index entry names another key", path=str(path))
            name = str(entry["record"])
            record = self.store.get_json(name)
            problems = record_problems(record, key, model)
        except (InputError, IntegrityError, KeyError, TypeError, ValueError) as exc:
            record, problems = None, [f"unreadable: {type(exc).__name__}"]
        if problems:
            self._quarantine(path, name)
            return None, None, problems
        return record, name, []

    def put(self, key: SuccessorKey, record: dict[str, Any], model: WdlModel) -> str:
        """Store a record that passes revalidation and point the index at it."""
        problems = record_problems(record, key, model)
        if problems:
            raise IntegrityError(f"refusing to cache an invalid record for {key.position!r} "
                                 f"{key.move}: {problems}")
        name = self.store.put_bytes(canonical_bytes(record))
        path = self.index_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, canonical_bytes({"key": key.digest, "record": name}), overwrite=True)
        return name

    def _quarantine(self, index: Path, name: str | None) -> None:
        qdir = self.root / "quarantine"
        qdir.mkdir(parents=True, exist_ok=True)
        os.replace(index, qdir / f"index-{index.name}")
        if name is not None and name.startswith("sha256:") and self.store.has(name):
            os.replace(self.store.path_for(name), qdir / f"object-{name[7:]}")


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class RunInput:
    """What the evaluation reads from a run directory."""

    run_id: str
    """Run identifier."""
    manifest_digest: str
    """``sha256:`` of the run's manifest bytes."""
    schedule: str
    """Digest of the frozen schedule."""
    route: str
    """The agent route (model or reference agent name) for the hazard table."""
    cells: tuple[CellInfo, ...]
    """Every frozen cell, schedule order."""
    answers: tuple[Answer, ...]
    """Every final answer and every unresolved cell's last reliability outcome, log order."""


def _route(agent: dict[str, Any]) -> str:
    # a study run's agent names its provider route; other runs fall back to model or name
    for field_name in ("route", "model", "name"):
        if isinstance(agent.get(field_name), str):
            return str(agent[field_name])
    return "unknown"


def read_run(run_dir: Path) -> RunInput:
    """Read and verify a move-choice run: its cells and their answers."""
    manifest, schedule = load_run(run_dir)
    _, states = read_log(run_dir, schedule, None)
    store = ObjectStore(run_dir)
    cells: list[CellInfo] = []
    for cell in schedule:
        fen = cell.request.metadata.get("fen")
        if not isinstance(fen, str):
            raise InputError(f"cell {cell.cell_id!r} has no FEN in its metadata",
                             path=str(run_dir), field="metadata.fen")
        try:
            key = normalized_key(chess.Board(fen))
        except ValueError as exc:
            raise InputError(f"cell {cell.cell_id!r}: invalid FEN {fen!r}", path=str(run_dir),
                             field="metadata.fen") from exc
        condition = cell.request.metadata.get("condition") or cell.request.metadata.get("arm")
        cells.append(CellInfo(cell.cell_id, fen, key, str(condition or "all")))
    answers = [_answer(store, cell_id, state) for cell_id, state in states.items()]
    run_manifest = (run_dir / MANIFEST).read_bytes()
    return RunInput(str(manifest["run_id"]), bytes_digest(run_manifest),
                    str(manifest["schedule"]), _route(dict(manifest["agent"])),
                    tuple(cells), tuple(a for a in answers if a is not None))


def _answer(store: ObjectStore, cell_id: str, state: Any) -> Answer | None:
    if state.finals:
        final = state.finals[0]
        name = final.get("response")
        move = None
        if isinstance(name, str) and name.startswith("sha256:"):
            response = response_from_json(store.get_json(name), where=str(store.path_for(name)))
            move = submitted_move(response)
        return Answer(cell_id, str(final["outcome"]), move, str(final.get("detail", "")), name)
    if state.last_event is not None:
        return Answer(cell_id, str(state.last_event["outcome"]), None,
                      str(state.last_event.get("detail", "")))
    return None


@dataclass(frozen=True)
class LabelInput:
    """What the evaluation reads from the published label stage."""

    stage: Path
    """The stage directory."""
    record_digest: str
    """``sha256:`` of ``stage.json``."""
    manifest_digest: str
    """Digest of the stage's manifest."""
    labeller: dict[str, Any]
    """The labeller's engine identity."""
    keys: frozenset[str]
    """Normalized identities of the frozen positions."""


def stage_dir_of(manifest: Path) -> Path:
    """Return the label-stage directory named by ``--manifest`` (the directory or its file)."""
    return manifest.parent if manifest.name == "manifest.json" else manifest


def read_label_stage(manifest: Path) -> LabelInput:
    """Read and verify the published label stage."""
    stage = stage_dir_of(manifest)
    record = verify_stage_dir(stage)
    entries, _ = read_stage(stage)
    return LabelInput(stage, bytes_digest((stage / "stage.json").read_bytes()),
                      record.manifest, dict(record.engine),
                      frozenset(k for k, _ in entries.entries))


def check_frozen(cells: Sequence[CellInfo], label: LabelInput) -> None:
    """Refuse (``position_not_frozen``) when a cell's position is not in the label stage."""
    missing = [c for c in cells if c.key not in label.keys]
    if missing:
        raise Refusal([Reason("position_not_frozen",
                              f"{len(missing)} cell(s) show positions the label stage did not "
                              f"freeze, first {missing[0].cell!r} ({missing[0].key})",
                              subject=missing[0].cell,
                              data={"cells": [c.cell for c in missing[:20]]})], gate=GATE)


# --------------------------------------------------------------------------- engines


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
class _Counter:
    done: int = 0
    total: int = 0
    progress: Progress | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def tick(self) -> None:
        with self.lock:
            self.done += 1
            if self.progress is not None:
                self.progress(self.done, self.total)


class _Driver:
    """Feeds one engine; the previous search's record is written while the next one runs."""

    def __init__(self, engine: chess.engine.SimpleEngine, ctx: _Context, own: int) -> None:
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
class _Context:
    cache: EvaluationCache
    model: WdlModel
    gate: IdleGate
    counter: _Counter
    depth: int
    name: str
    timeout_s: float


def _search_all(todo: Sequence[SuccessorKey], engines: Engines, ctx: _Context) -> None:
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


def _search_on(executor: Executor, todo: Sequence[SuccessorKey], job: EvaluationJob,
               workers: int, ctx: _Context) -> None:
    """Hand every successor to ``executor``; store each returned record here, the driver."""
    def store(key: SuccessorKey, record: dict[str, Any]) -> None:
        ctx.cache.put(key, record, ctx.model)
        ctx.counter.tick()

    dispatch(executor, partial(evaluate_in_worker, job), todo, window=2 * workers,
             before_submit=lambda: ctx.gate.check("before an uncached search", own=workers),
             on_result=store)


# --------------------------------------------------------------------------- stage


@dataclass(frozen=True)
class StageOptions:
    """Where an evaluation reads and writes, and how it runs."""

    cache: Path
    """Cache directory of successor records (shared across runs)."""
    out: Path
    """Directory to publish the evaluation into (must not exist unless ``force``)."""
    workers: int = 1
    """Evaluator processes searching in parallel."""
    force: bool = False
    """Replace an existing published evaluation."""


@dataclass
class RunLog:
    """What happened during one invocation (not part of the published evidence)."""

    cache_hits: int = 0
    """Records reused after revalidation."""
    searches: int = 0
    """Searches run by this invocation."""
    rule: int = 0
    """Successors scored by the terminal rule."""
    rejected: Counter[str] = field(default_factory=Counter)
    """Records rejected on revalidation, by first problem."""

    def to_json(self) -> dict[str, Any]:
        """Return the log as a JSON-ready mapping."""
        return {"cache_hits": self.cache_hits, "searches": self.searches, "rule": self.rule,
                "rejected": dict(sorted(self.rejected.items()))}


@contextmanager
def exclusive(cache: Path) -> Iterator[None]:
    """Hold the cache's lock; refuse (``cache_busy``) while another evaluation holds it."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".evaluate.lock", "a") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise Refusal([Reason("cache_busy", "another evaluation holds this cache",
                                  subject=str(cache))], gate=GATE) from exc
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def positions_in_order(cells: Sequence[CellInfo]) -> list[str]:
    """Return the distinct position keys in order of first appearance."""
    return list(dict.fromkeys(c.key for c in cells))


def legal_moves_of(key: str) -> list[str]:
    """Return the legal moves of a normalized position, sorted UCI."""
    return sorted(m.uci() for m in chess.Board(f"{key} 0 1").legal_moves)


def evaluate_run(run_dir: Path, manifest: Path, config: ev.EvaluatorConfig,
                 options: StageOptions, gate: IdleGate,
                 progress: Progress | None = None, *,
                 executor: Executor | None = None) -> dict[str, Any]:
    """Run (or resume) the evaluation of ``run_dir`` and publish it; return the summary.

    ``executor`` None runs ``options.workers`` evaluators here; an executor (Ray tasks)
    runs the searches in its workers, at most ``2 × options.workers`` in flight.
    """
    if options.workers < 1:
        raise InputError(f"workers must be >= 1, got {options.workers!r}", field="workers")
    run = read_run(run_dir)
    label = read_label_stage(manifest)
    family = ev.check_family(str(label.labeller.get("name", "")), config)
    model = ev.registered_model(config)
    check_frozen(run.cells, label)
    with exclusive(options.cache):
        return _evaluate_locked(run, label, family, model, config, options, gate, progress,
                                executor)


def _evaluate_locked(run: RunInput, label: LabelInput, family: ev.FamilyCheck,
                     model: WdlModel, config: ev.EvaluatorConfig, options: StageOptions,
                     gate: IdleGate, progress: Progress | None,
                     executor: Executor | None) -> dict[str, Any]:
    if options.out.exists() and not options.force:
        raise Refusal([Reason("exists", f"{options.out} already holds an evaluation; pass "
                              "--force to replace it", subject=str(options.out))], gate=GATE)
    gate.check("before engine start")
    cache = EvaluationCache(options.cache)
    log = RunLog()
    engines = Engines(config, model, options.workers if executor is None else 1)
    try:
        identity = engines.identity
        keys = [SuccessorKey(identity.digest, model.digest, config.search_depth, pos, move)
                for pos in positions_in_order(run.cells) for move in legal_moves_of(pos)]
        counter = _Counter(total=len(keys), progress=progress)
        todo: list[SuccessorKey] = []
        for key in keys:
            if rule_ppm(f"{key.position} 0 1", key.move) is not None:
                log.rule += 1
                counter.tick()
                continue
            record, _, problems = cache.lookup(key, model)
            if problems:
                log.rejected[problems[0]] += 1
            if record is None:
                todo.append(key)
            else:
                log.cache_hits += 1
                counter.tick()
        ctx = _Context(cache, model, gate, counter, config.search_depth, engines.name,
                       config.timeout_s)
        if executor is None:
            _search_all(todo, engines, ctx)
        else:
            engines.close()  # it identified the evaluator; the workers search
            _search_on(executor, todo, EvaluationJob(config, model, identity), options.workers,
                       ctx)
        log.searches = len(todo)
    finally:
        engines.close()
    positions, values = _position_table(keys, cache, model)
    scored = score_answers(run.cells, run.answers, values)
    files = _files(run, label, family, identity, model, config, gate, positions, scored)
    now = binary_digest(config.binary)
    if now != identity.sha256:
        raise Refusal([Reason("engine_binary_changed", f"{config.binary} now hashes {now}, "
                              f"identified as {identity.sha256}", subject="evaluator")],
                      gate=GATE)
    gate.check("before publication", own=options.workers)
    _publish(options, files)
    summary = loads_canonical(files["summary.json"])
    return {"out": str(options.out), "evaluation": bytes_digest(files["evaluation.json"]),
            "role": family.role, "evaluator": identity.name,
            "evaluator_family": identity.family, "labeller": family.labeller,
            "labeller_family": family.labeller_family, "depth": config.search_depth,
            "model": model.digest, "summary": summary, "run": log.to_json()}


def _position_table(keys: Sequence[SuccessorKey], cache: EvaluationCache, model: WdlModel
                    ) -> tuple[list[dict[str, Any]], dict[str, PositionValues]]:
    by_pos: dict[str, list[dict[str, Any]]] = {}
    for key in keys:
        rule = rule_ppm(f"{key.position} 0 1", key.move)
        if rule is not None:
            entry = {"move": key.move, "expectation_ppm": rule, "score": None, "record": "rule"}
        else:
            record, name, problems = cache.lookup(key, model)
            if record is None:
                raise IntegrityError(f"record for {key.position!r} {key.move} failed "
                                     f"revalidation after it was written: {problems}")
            payload = record["payload"]
            entry = {"move": key.move, "expectation_ppm": payload["expectation_ppm"],
                     "score": payload["score"], "record": name}
        by_pos.setdefault(key.position, []).append(entry)
    values = {pos: PositionValues(pos, {e["move"]: int(e["expectation_ppm"]) for e in moves})
              for pos, moves in by_pos.items()}
    table = [{"key": pos, "moves": moves, "e_best_ppm": values[pos].e_best,
              "best_moves": list(values[pos].best_moves)} for pos, moves in by_pos.items()]
    return table, values


def _files(run: RunInput, label: LabelInput, family: ev.FamilyCheck,
           identity: ev.EvaluatorIdentity, model: WdlModel, config: ev.EvaluatorConfig,
           gate: IdleGate, positions: list[dict[str, Any]], scored: Scored) -> dict[str, bytes]:
    role = {"role": family.role}
    files = {
        "cells.json": canonical_bytes({**role, "cells": [c.to_json() for c in scored.cells]}),
        "positions.json": canonical_bytes({**role, "positions": positions}),
        "summary.json": canonical_bytes({**role, **summarize(scored, run.route)}),
        "anomalies.json": canonical_bytes({**role, "anomalies": list(scored.anomalies)}),
    }
    record = {
        "schema": EVALUATION_SCHEMA, **role,
        "run": {"run_id": run.run_id, "manifest": run.manifest_digest,
                "schedule": run.schedule, "route": run.route, "cells": len(run.cells)},
        "label_stage": {"stage_record": label.record_digest, "manifest": label.manifest_digest,
                        "labeller": label.labeller.get("name"),
                        "labeller_family": family.labeller_family},
        "family_check": family.to_json(),
        "evaluator": identity.to_json(), "evaluator_digest": identity.digest,
        "model": {**model.to_json(), "digest": model.digest},
        "depth": config.search_depth, "idle_gate": gate.to_json(),
        "files": {name: bytes_digest(data) for name, data in sorted(files.items())},
    }
    files["evaluation.json"] = canonical_bytes(record)
    return files


def _publish(options: StageOptions, files: dict[str, bytes]) -> None:
    for leftover in leftover_temps(options.out.parent, options.out.name):
        shutil.rmtree(leftover, ignore_errors=True)
    with publish_dir(options.out, kind=EVALUATION_KIND, force=options.force) as tmp:
        for name, data in files.items():
            write_atomic(tmp / name, data, overwrite=True)


def verify_evaluation(out: Path) -> dict[str, Any]:
    """Verify a published evaluation (seal and file digests); return ``evaluation.json``."""
    verify_sealed(out, kind=EVALUATION_KIND)
    record = loads_canonical((out / "evaluation.json").read_bytes(),
                             path=str(out / "evaluation.json"))
    for name, expected in record["files"].items():
        if bytes_digest((out / name).read_bytes()) != expected:
            raise IntegrityError(f"{out / name}: does not hash as evaluation.json records")
    return dict(record)


def position_values(engine: chess.engine.SimpleEngine, fen: str, config: ev.EvaluatorConfig,
                    model: WdlModel, *, name: str) -> PositionValues:
    """Evaluate every legal successor of ``fen`` directly (no cache): the known-answer path.

    The same rule as the stage: the normalized position with counters reset, every
    successor searched after ``ucinewgame`` at the configured depth, or scored by rule.
    """
    key = normalized_key(chess.Board(fen))
    values: dict[str, int] = {}
    for move in legal_moves_of(key):
        rule = rule_ppm(f"{key} 0 1", move)
        if rule is not None:
            values[move] = rule
            continue
        board = SuccessorKey("", "", config.search_depth, key, move).successor
        info = ev.search(engine, board, config.search_depth, name=name,
                         timeout_s=config.timeout_s)
        values[move] = int(make_record(SuccessorKey("", "", 0, key, move), board, info,
                                       model)["payload"]["expectation_ppm"])
    return PositionValues(key, values)
