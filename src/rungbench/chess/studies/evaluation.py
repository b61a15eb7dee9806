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
import shutil
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor
from contextlib import contextmanager
from dataclasses import dataclass, field
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
    rule_ppm,
    score_answers,
    summarize,
)
from rungbench.chess.studies.successor_records import (
    EvaluationCache,
    SuccessorKey,
    make_record,
)
from rungbench.chess.studies.successor_search import (
    Engines,
    EvaluationJob,
    Progress,
    SearchContext,
    SearchCounter,
    search_all,
    search_on,
)
from rungbench.chess.studies.wdl_model import WdlModel
from rungbench.errors import InputError, IntegrityError, Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, canonical_bytes, loads_canonical
from rungbench.evidence.sealed import leftover_temps, publish_dir, verify_sealed
from rungbench.evidence.store import ObjectStore, write_atomic
from rungbench.execute.runner import MANIFEST, load_run, read_log, response_from_json

EVALUATION_SCHEMA = "rungbench.chess.evaluation/1"
"""Schema name and version of ``evaluation.json``."""
EVALUATION_KIND = "rungbench.chess.evaluation"
"""Seal kind of a published evaluation."""
GATE = "chess evaluation"
"""Gate name in refusals."""



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
        counter = SearchCounter(total=len(keys), progress=progress)
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
        ctx = SearchContext(cache, model, gate, counter, config.search_depth, engines.name,
                       config.timeout_s)
        if executor is None:
            search_all(todo, engines, ctx)
        else:
            engines.close()  # it identified the evaluator; the workers search
            search_on(executor, todo, EvaluationJob(config, model, identity), options.workers,
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
