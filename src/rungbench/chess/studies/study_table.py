"""A bound study's runs and their published evaluations → the per-cell table the analysis
reads (:mod:`rungbench.chess.studies.cells`).

For one binding of a study (:func:`study_table`):

1. **Runs.** Every run under ``<study>/runs`` whose manifest names the binding (move-choice
   and probe runs alike) is read through the runner's verified readers. Every model the
   binding registers must have a run, and a model × route with a move-choice run must
   have its probe run when the design registers a probe (and the reverse); otherwise
   ``cells_missing`` — a scheduled model or route is never silently dropped.
2. **Evaluations.** A move-choice run's evaluation is ``<study>/evaluations/<run id>``,
   verified (seal and file digests, :func:`~rungbench.chess.studies.evaluation.
   verify_evaluation`); absent → ``evaluation_missing``. It must name that run's id,
   manifest digest and schedule digest, the study's label stage, and agree with the run's
   current answers cell by cell (an evaluation made before a resume is *stale*); any
   difference → ``manifest_mismatch``. All evaluations of a binding share one evaluator
   identity, conversion model and depth (``manifest_mismatch`` otherwise), so every row is
   scored against the same best sets.
3. **Rows.** Split, position key, source game, condition, panel order (A105),
   presentation (E023), model and route come from the frozen cell metadata; outcome
   class and regret from the evaluation's ``cells.json``; ``evaluation_digest`` is the
   digest of that cell's ``cells.json`` entry. ``chose_best`` is the *evaluator's* best
   set (``positions.json``), never pass A's rank 1; ``best_in_candidates`` (cells that show
   candidates) is whether any shown move is in that set; ``selected_rank`` is the hidden
   proposer rank of the chosen shown move. Probe (``self_shortlist``) rows carry no
   regret: the shortlist answer against the evaluator's best set of the position, their
   ``evaluation_digest`` the digest of the ``positions.json`` entry compared with.
4. **Header.** ``study_digest`` is the binding digest; the schedule is every cell of every
   run, runs in (model, route, part) order and cells in schedule order, each named
   ``<route>/<cell id>``; ``evaluation_digest`` names the set of evaluation records
   (:func:`evaluations_digest`); A105 carries the rendered-prompt audit of its bound
   positions (:func:`~rungbench.chess.studies.panels.panel_audit`, gate 4).

Answers the evaluation could not attach to a cell (its ``anomalies.json``) travel into the
table as counted anomalies.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rungbench.chess.labels.stage_records import CandidateList
from rungbench.chess.reference_agents import validate_move
from rungbench.chess.studies.bindings import Binding
from rungbench.chess.studies.cells import (
    A105_CONDITIONS,
    RELIABILITY,
    CellTable,
    CellTableHeader,
    build_table,
    schedule_digest,
)
from rungbench.chess.studies.evaluation import read_run, verify_evaluation
from rungbench.chess.studies.gates import prompt_audit
from rungbench.chess.studies.ladder import final_arguments, own_shortlist
from rungbench.chess.studies.manifest import FrozenManifest
from rungbench.chess.studies.plan import best_moves, plan_of
from rungbench.chess.studies.strata import position_strata, usage
from rungbench.design.registry import RegisteredDesign
from rungbench.errors import Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, digest, loads_canonical
from rungbench.evidence.store import ObjectStore
from rungbench.execute.runner import (
    MANIFEST,
    CellState,
    load_run,
    read_log,
    verify_run,
)
from rungbench.execute.schedule import Schedule

GATE = "chess study analysis"
"""Gate name of table refusals."""
PROBE_PART = "probe"
"""``part`` of a probe run's schedule source."""


@dataclass(frozen=True)
class StudyRun:
    """One verified run of a binding."""

    run_id: str
    """Run id (its directory name)."""
    path: Path
    """Run directory."""
    model: str
    """Model label."""
    route: str
    """Route label."""
    part: str
    """``cells`` (move choice) or ``probe``."""
    manifest_digest: str
    """``sha256:`` of the run's manifest bytes."""
    schedule: Schedule
    """The frozen schedule."""

    @property
    def is_probe(self) -> bool:
        """Whether this is a coverage-probe run."""
        return self.part == PROBE_PART


def _refuse(code: str, detail: str, subject: str, **data: Any) -> Refusal:
    return Refusal([Reason(code, detail, subject=subject, data=data)], gate=GATE)


def binding_runs(study: Path, binding: Binding) -> list[StudyRun]:
    """Every run of ``binding`` in the study, in (model, route, part) order, verified."""
    runs = []
    root = study / "runs"
    for path in sorted(p for p in root.glob("*") if p.is_dir() and not p.name.startswith(".")):
        manifest, schedule = load_run(path)
        agent = manifest.get("agent") or {}
        if agent.get("binding") != binding.digest:
            continue
        source = schedule.source or {}
        if source.get("binding") != binding.digest or source.get("model") != agent.get("model"):
            raise _refuse("manifest_mismatch", f"run {path.name}: its schedule and its agent "
                          "name different bindings or models", path.name)
        runs.append(StudyRun(path.name, path, str(agent["model"]), str(agent["route"]),
                             str(source.get("part", "cells")),
                             bytes_digest((path / MANIFEST).read_bytes()), schedule))
    return sorted(runs, key=lambda r: (r.model, r.route, r.part, r.run_id))


def check_coverage(binding: Binding, runs: Sequence[StudyRun]) -> tuple[str, ...]:
    """Refuse (``cells_missing``) a binding without runs, or a model × route that ran
    without one of its parts; return the registered models that have not run (the analysis
    covers the models that ran and reports these as not run)."""
    reasons = []
    have = {(r.model, r.route, r.part) for r in runs}
    not_run = tuple(str(m) for m in binding.document.get("models") or []
                    if not any(r.model == m for r in runs))
    parts = {"cells", PROBE_PART} if binding.document.get("probes") else {"cells"}
    for model, route in sorted({(m, r) for m, r, _ in have}):
        for part in sorted(parts - {p for m, r, p in have if (m, r) == (model, route)}):
            reasons.append(Reason("cells_missing", f"{model} @ {route} has no {part} run",
                                  subject=f"{model}@{route}", data={"part": part}))
    if not runs:
        reasons.append(Reason("cells_missing", f"binding {binding.digest} has no run",
                              subject=binding.digest))
    if reasons:
        raise Refusal(reasons, gate=GATE)
    return not_run


@dataclass(frozen=True)
class RunEvaluation:
    """A verified, current evaluation of one move-choice run."""

    run: StudyRun
    """The run it scores."""
    digest: str
    """``sha256:`` of its ``evaluation.json``."""
    record: dict[str, Any]
    """``evaluation.json``."""
    cells: dict[str, dict[str, Any]]
    """Cell id → its ``cells.json`` entry."""
    best: dict[str, dict[str, Any]]
    """Position key → its ``positions.json`` entry."""
    anomalies: tuple[dict[str, Any], ...]
    """``anomalies.json`` entries."""

    @property
    def contract(self) -> dict[str, Any]:
        """What must be one across a binding's evaluations."""
        r = self.record
        return {"evaluator": r["evaluator_digest"], "model": r["model"]["digest"],
                "depth": r["depth"], "role": r["role"],
                "label_stage": r["label_stage"]["stage_record"]}


def _json(path: Path) -> Any:
    return loads_canonical(path.read_bytes(), path=str(path))


def load_evaluation(study: Path, run: StudyRun, stage_record: str) -> RunEvaluation:
    """Read, verify and check the evaluation of ``run`` (module docstring, step 2)."""
    out = study / "evaluations" / run.run_id
    if not out.exists():
        raise _refuse("evaluation_missing", f"run {run.run_id} has no published evaluation "
                      f"({out})", run.run_id)
    record = verify_evaluation(out)
    named = record.get("run") or {}
    expected = {"run_id": run.run_id, "manifest": run.manifest_digest,
                "schedule": run.schedule.digest()}
    wrong = {k: {"evaluation": named.get(k), "run": v} for k, v in expected.items()
             if named.get(k) != v}
    if record["label_stage"]["stage_record"] != stage_record:
        wrong["label_stage"] = {"evaluation": record["label_stage"]["stage_record"],
                                "study": stage_record}
    if wrong:
        raise _refuse("manifest_mismatch", f"the evaluation in {out} does not name run "
                      f"{run.run_id} as it stands ({', '.join(sorted(wrong))})", run.run_id,
                      **wrong)
    cells = {str(c["cell"]): c for c in _json(out / "cells.json")["cells"]}
    best = {str(p["key"]): p for p in _json(out / "positions.json")["positions"]}
    evaluation = RunEvaluation(run, bytes_digest((out / "evaluation.json").read_bytes()),
                               record, cells, best,
                               tuple(_json(out / "anomalies.json")["anomalies"]))
    _check_current(evaluation)
    return evaluation


def _check_current(evaluation: RunEvaluation) -> None:
    """Refuse an evaluation whose scored answers are not the run's current answers."""
    current = read_run(evaluation.run.path)
    first: dict[str, Any] = {}
    for a in current.answers:
        first.setdefault(a.cell, a)
    stale = []
    for cell in evaluation.run.schedule:
        scored = evaluation.cells.get(cell.cell_id)
        answer = first.get(cell.cell_id)
        if scored is None:
            continue  # a missing entry is counted by the table (cells_missing)
        outcome = "not_sent" if answer is None else answer.outcome
        if scored.get("submitted") != (None if answer is None else answer.move) or (
                (scored["class"] in RELIABILITY) != (outcome in RELIABILITY)):
            stale.append(cell.cell_id)
    if stale:
        raise _refuse("manifest_mismatch", f"the evaluation of {evaluation.run.run_id} is "
                      f"stale: {len(stale)} cell(s) differ from the run's current answers "
                      f"(first: {stale[0]})", evaluation.run.run_id, count=len(stale),
                      first=stale[:5])


def evaluations_digest(evaluations: Sequence[RunEvaluation]) -> str:
    """The digest naming a binding's set of evaluation records (run id → record digest)."""
    return digest({"evaluations": {e.run.run_id: e.digest for e in evaluations}})


def _one_contract(evaluations: Sequence[RunEvaluation]) -> dict[str, Any]:
    contracts = {json.dumps(e.contract, sort_keys=True) for e in evaluations}
    if len(contracts) != 1:
        raise _refuse("manifest_mismatch", f"the binding's evaluations use {len(contracts)} "
                      "evaluator contracts; one analysis needs one", "evaluations",
                      contracts=sorted(contracts))
    return evaluations[0].contract


def _best_sets(evaluations: Sequence[RunEvaluation]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for e in evaluations:
        for key, entry in e.best.items():
            if key in out and out[key]["best_moves"] != entry["best_moves"]:
                raise _refuse("manifest_mismatch", f"two evaluations disagree on the best set "
                              f"of {key}", key)
            out.setdefault(key, entry)
    return out


def _common(binding: Binding, meta: dict[str, Any], run: StudyRun,
            family: dict[str, Any]) -> dict[str, Any]:
    design_id = str(binding.document["design"]["id"])
    row: dict[str, Any] = {
        "study_digest": binding.digest, "design_digest": binding.document["design"]["digest"],
        "design_id": design_id, "model": run.model, "split": meta["split"],
        "condition": str(meta["condition"]), "position": str(meta["key"]),
        "source_game": str(meta["game"]), "route": run.route,
        "evaluator_family": family["evaluator_family"],
        "evaluator_proxy": family["evaluator_family"] == family["labeller_family"],
        "action_universe_digest": str(meta["universe_digest"])}
    if design_id == "A105":
        board, legal = A105_CONDITIONS.get(row["condition"], (None, None))
        row |= {"board": meta.get("board", board), "legal_list": meta.get("legal_list", legal),
                "panel_order": meta.get("panel_order")}
    if "presentation" in meta:
        row["presentation"] = str(meta["presentation"])
    return row


def move_rows(binding: Binding, evaluation: RunEvaluation, family: dict[str, Any],
              states: Mapping[str, CellState] | None = None,
              lists: Mapping[str, CandidateList] | None = None,
              ) -> list[tuple[str, dict[str, Any]]]:
    """``(table cell id, row)`` of every cell of a move-choice run (``cells.json`` order
    is not trusted: schedule order; a cell the evaluation lacks has no row), with the
    position's strata (from ``lists``, the manifest's pass A lists) and the deciding
    attempt's cost (from ``states``, the run's verified log)."""
    run = evaluation.run
    rule = plan_of(bound_preset(binding)).best_set
    out = []
    for cell in run.schedule:
        scored = evaluation.cells.get(cell.cell_id)
        if scored is None:
            continue
        meta = dict(cell.request.metadata)
        best = best_moves(rule, evaluation.best[str(meta["key"])]["best_moves"], meta)
        move = scored.get("move")
        reliability = scored["class"] in RELIABILITY
        row = _common(binding, meta, run, family) | {
            "cell": table_cell(run, cell.cell_id), "outcome": scored["class"],
            "regret": scored["regret"],
            "evaluation_digest": None if reliability else digest(scored),
            "tool_schema_digest": digest(list(cell.request.tools)),
            "chose_best": None if reliability else move in best, "selected_move": move,
            **_strata(meta, lists, states, cell.cell_id)}
        shown = meta.get("candidates")
        if isinstance(shown, list):
            row["best_in_candidates"] = bool(best & set(shown))
            ranks = meta.get("ranks")
            rank = ranks[shown.index(move)] if move in shown and isinstance(ranks, list) else None
            # a self-shortlist choice may show moves pass A never ranked (rank null)
            row["selected_rank"] = int(rank) if isinstance(rank, int) else None
        out.append((row["cell"], row))
    return out


def probe_rows(binding: Binding, run: StudyRun, best: dict[str, dict[str, Any]],
               family: dict[str, Any], lists: Mapping[str, CandidateList] | None = None,
               ) -> list[tuple[str, dict[str, Any]]]:
    """``(table cell id, row)`` of every cell of a probe run, against the evaluator's best
    sets (no regret), with the position's strata and the deciding attempt's cost."""
    _, states = read_log(run.path, run.schedule, None)
    rule = plan_of(bound_preset(binding)).best_set
    store = ObjectStore(run.path)
    out = []
    for cell in run.schedule:
        meta = dict(cell.request.metadata)
        key = str(meta["key"])
        if key not in best:
            raise _refuse("evaluation_missing", f"no evaluation of the binding scores position "
                          f"{key} (probe {cell.cell_id})", cell.cell_id)
        cls, listed = _probe_answer(store, str(meta["fen"]), states[cell.cell_id],
                                    int(meta["shortlist_size"]))
        row = _common(binding, meta, run, family) | {
            "cell": table_cell(run, cell.cell_id), "outcome": cls, "regret": None,
            "evaluation_digest": None if cls in RELIABILITY else digest(best[key]),
            "tool_schema_digest": digest(list(cell.request.tools)),
            "best_in_candidates": None if cls in RELIABILITY
            else bool(listed & best_moves(rule, best[key]["best_moves"], meta)),
            **_strata(meta, lists, states, cell.cell_id)}
        out.append((row["cell"], row))
    return out


def _strata(meta: Mapping[str, Any], lists: Mapping[str, CandidateList] | None,
            states: Mapping[str, CellState] | None, cell_id: str) -> dict[str, Any]:
    """A row's strata (``chess/studies/strata.py``) and its deciding attempt's cost."""
    lst = None if lists is None else lists.get(str(meta["key"]))
    state = None if states is None else states.get(cell_id)
    return {**position_strata(meta, lst), **usage(None if state is None
                                                 else state.last_event)}


def _probe_answer(store: ObjectStore, fen: str, state: CellState, k: int
                  ) -> tuple[str, set[str]]:
    """A probe cell's class and listed moves from its verified final (or last outcome)."""
    if not state.finals:
        last = state.last_event
        cls = str(last["outcome"]) if last is not None else "not_sent"
        return (cls if cls in RELIABILITY else "not_sent"), set()
    final = state.finals[0]
    return _shortlist_class(fen, str(final["outcome"]), final_arguments(store, final), k)


def _shortlist_class(fen: str, outcome: str, args: dict[str, Any] | None, k: int
                     ) -> tuple[str, set[str]]:
    """A probe answer's class and its own shortlist, by the rule the choice stage shows
    (:func:`~rungbench.chess.studies.ladder.own_shortlist`: the first ``k`` distinct legal
    moves listed): legal when that list is non-empty, illegal when moves were listed but
    none is legal, malformed or missing otherwise."""
    if outcome in ("malformed", "refusal"):
        return outcome, set()
    moves = args.get("moves") if isinstance(args, dict) else None
    if not isinstance(moves, list) or not moves:
        return ("missing" if outcome == "answered" else "malformed"), set()
    listed = own_shortlist(fen, moves, k)
    return ("legal", set(listed)) if listed else ("illegal", set())


def table_cell(run: StudyRun, cell_id: str) -> str:
    """The table's name of a run's cell: ``<route>/<cell id>``."""
    return f"{run.route}/{cell_id}"


def _anomalies(evaluations: Sequence[RunEvaluation]) -> list[dict[str, Any]]:
    codes = {"duplicate_answer": "duplicate_cell", "unknown_cell": "unknown_cell"}
    out = []
    for e in evaluations:
        known = {c.cell_id for c in e.run.schedule}
        for a in e.anomalies:
            out.append({"anomaly": codes.get(str(a.get("anomaly")), "unknown_cell"),
                        "line": None, "row": a, "source": f"evaluation {e.run.run_id}"})
        for cell_id in sorted(set(e.cells) - known):
            out.append({"anomaly": "unknown_cell", "line": None, "row": e.cells[cell_id],
                        "source": f"evaluation {e.run.run_id}"})
    return out


def a105_prompt_audit(reg: RegisteredDesign, manifest: FrozenManifest,
                      binding: Binding) -> dict[str, Any]:
    """The gate-4 audit of the binding's own positions, as the header's ``prompt_audit``."""
    from rungbench.chess.studies.panels import panel_audit
    from rungbench.design.presets import factorial_design

    fens = [manifest.lists[k].fen for k in binding.document["positions"]]
    return prompt_audit(panel_audit(fens, factorial_design(reg))).model_dump(mode="json")


def bound_preset(binding: Binding) -> RegisteredDesign:
    """The preset a binding froze (its parsed document and digest)."""
    d = binding.document["design"]
    return RegisteredDesign(str(d["name"]), f"<binding {binding.digest}>", d["document"],
                            str(d["digest"]))


@dataclass(frozen=True)
class StudyTable:
    """A binding's verified cell table and the inputs it was built from."""

    table: CellTable
    """The verified table."""
    runs: tuple[StudyRun, ...]
    """Every run of the binding."""
    evaluations: tuple[RunEvaluation, ...]
    """Every move-choice run's evaluation."""
    rows: tuple[dict[str, Any], ...]
    """The rows as written (schedule order)."""
    not_run: tuple[str, ...] = ()
    """Models the binding registers that have no run (the table holds the others)."""

    def inputs(self) -> list[dict[str, Any]]:
        """Per run: id, model, route, part, manifest, schedule and evaluation digests, and
        its terminal provider failures (cells that reached the registered retry cap)."""
        by_run = {e.run.run_id: e.digest for e in self.evaluations}
        return [{"run_id": r.run_id, "model": r.model, "route": r.route, "part": r.part,
                 "manifest": r.manifest_digest, "schedule": r.schedule.digest(),
                 "cells": len(r.schedule), "evaluation": by_run.get(r.run_id),
                 "terminal_provider_failures": verify_run(r.path).terminal}
                for r in self.runs]


def study_table(study: Path, binding: Binding, manifest: FrozenManifest,
                stage_record: str) -> StudyTable:
    """Build and verify the cell table of ``binding`` (see the module docstring)."""
    runs = binding_runs(study, binding)
    not_run = check_coverage(binding, runs)
    states_of = {}  # the verified read: chain, order, every final against its response
    for run in runs:
        states_of[run.run_id] = read_log(run.path, run.schedule,
                                         None if run.is_probe else validate_move)[1]
    evaluations = [load_evaluation(study, r, stage_record) for r in runs if not r.is_probe]
    if not evaluations:
        raise _refuse("evaluation_missing", "the binding has no move-choice run to evaluate",
                      binding.digest)
    _one_contract(evaluations)
    family = evaluations[0].record["family_check"]
    best = _best_sets(evaluations)
    pairs: list[tuple[str, dict[str, Any]]] = []
    schedule: list[str] = []
    evaluation_of = {e.run.run_id: e for e in evaluations}
    for run in runs:
        schedule += [table_cell(run, c.cell_id) for c in run.schedule]
        pairs += (probe_rows(binding, run, best, family, manifest.lists) if run.is_probe
                  else move_rows(binding, evaluation_of[run.run_id], family,
                                 states_of[run.run_id], manifest.lists))
    reg = bound_preset(binding)
    header = CellTableHeader.model_validate({
        "schema": "rungbench.chess.cell-table/1", "study_digest": binding.digest,
        "design_id": binding.document["design"]["id"],
        "design_digest": binding.document["design"]["digest"],
        "evaluation_digest": evaluations_digest(evaluations),
        "evaluator_family": family["evaluator_family"],
        "labeller_family": family["labeller_family"],
        "evaluator_proxy": family["evaluator_family"] == family["labeller_family"],
        "schedule": schedule, "schedule_digest": schedule_digest(schedule),
        "prompt_audit": a105_prompt_audit(reg, manifest, binding)
        if binding.document["design"]["id"] == "A105" else None})
    numbered = [(i, row) for i, (_, row) in enumerate(pairs, start=2)]
    table = build_table(header, numbered, source=f"<binding {binding.digest}>")
    table = replace(table, anomalies=(*table.anomalies, *_anomalies(evaluations)))
    return StudyTable(table, tuple(runs), tuple(evaluations), tuple(r for _, r in pairs),
                      not_run)

