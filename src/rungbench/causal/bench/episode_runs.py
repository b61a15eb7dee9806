"""Run records/2 episodes through the runner and score them on the evidence actually delivered.

Seed 003 "Rules": "Record per arm the evidence actually obtained (tool events), so an arm
that fetched more logs is not credited with better reasoning." A finished episode run is
scored from its own log: for each cell, the ``tool_call`` records of the attempt that
produced its final (results read back from the run's verified object store) are replayed
in order — telemetry fetched, experiment outcomes, stage answers — and each stage answer
is scored against an oracle record recomputed by the exact oracle for the evidence
delivered *up to that answer* (:func:`delivered_oracle`): the identified set, the expected
loss of every repair, EIG and decision value of every probe. With every telemetry tool
called and no experiment, the recomputed record equals the sealed one.

Per diagnosis answer two regrets are reported: ``decision_regret`` (the scorer's: expected
loss of the named repair minus the best repair, under the posterior given the delivered
evidence) and ``episode_regret`` (experiment cost spent + that expected loss − the best
strategy's expected loss from the case's own evidence, the sealed ``experiment_loss``
minimum: the realised counterpart of ``protocols.p2_incident``'s regret).

The scored result carries seed 003's sub-capability table over the stage rows
(``subcapabilities``; the rung-1/2/3 metrics are ``not exercised`` by episodes).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rungbench.agents.outcomes import Outcome
from rungbench.agents.protocol import Agent
from rungbench.agents.spec import AgentSpec
from rungbench.causal.bench.episode_scorer import score_episode_case
from rungbench.causal.bench.episode_tools import (
    ANSWER,
    DEFAULT_EXPERIMENT_BUDGET,
    EPISODE_TASK,
    EXPERIMENT,
    PROBE,
    TELEMETRY_TOOLS,
    diagnosis_of,
    episode_cases,
    episode_schedule,
    episode_toolbox,
    is_incident,
    stage_view,
)
from rungbench.causal.bench.incidents import ACT_NOW
from rungbench.causal.bench.records import AgentResponse, EpisodeCase, EpisodeOracle
from rungbench.causal.bench.requests import validate_causal_answer
from rungbench.causal.bench.subcapabilities import subcapability_table
from rungbench.causal.bench.taxonomy import (
    episode_failure_labels,
    fabricated_links,
    graph_edges,
    with_fabrication,
)
from rungbench.causal.bench.verified import EPISODE_CASES, bench_episodes, open_bench
from rungbench.errors import InputError, IntegrityError
from rungbench.evidence.store import ObjectStore
from rungbench.execute.events import read_events
from rungbench.execute.runner import (
    EVENTS,
    RunSummary,
    create_run,
    describe_agent,
    execute_run,
    load_run,
)
from rungbench.execute.schedule import Schedule
from rungbench.execute.tasks import open_agent
from rungbench.execute.tools import TOOL_CALL
from rungbench.stats.paired import paired_cluster_bootstrap


def delivered_oracle(case: EpisodeCase, sealed: EpisodeOracle,
                     observed: Mapping[str, int]) -> EpisodeOracle:
    """The oracle record of ``case`` recomputed for the telemetry ``observed`` in the episode.

    Posterior items carry their evidence in the question, so their record is unchanged.
    Probes already run have EIG 0 and decision value cost + the best repair's loss.
    """
    if not is_incident(case):
        return sealed
    view = case.model_dump(mode="json")
    d = diagnosis_of(view, observed)
    ident = d.identified_set
    eig = {f"{PROBE}{x}" if x != ACT_NOW else x: v for x, v in d.eig_bits.items()}
    loss = {f"{PROBE}{x}" if x != ACT_NOW else x: v for x, v in d.experiment_loss.items()}
    best = min(d.expected_loss.values())
    for node in d.iw.symptoms:
        if node in d.evidence:
            eig[f"{PROBE}{node}"] = 0.0
            loss[f"{PROBE}{node}"] = d.iw.probe_cost[node] + best
    update: dict[str, Any] = {
        "identified_set": ident, "identifiable": len(ident) == 1, "eig_bits": eig,
        "experiment_loss": loss,
        "discriminating": [f"{PROBE}{x}" for x in d.discriminating]}
    if sealed.expected_loss is not None:
        update["expected_loss"] = dict(d.expected_loss)
    return sealed.model_copy(update=update)


def _calls_of_final(run_dir: Path) -> dict[str, tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Cell -> (its final record, the tool_call records of the attempt that decided it)."""
    events = read_events(run_dir / EVENTS)
    finals = {e["cell"]: e for e in events if e["kind"] == "final"}
    deciding: dict[str, int] = {}
    for e in events:
        f = finals.get(e.get("cell", ""))
        if e["kind"] == "tool_event" and f is not None and e.get("response") == f["response"] \
                and e.get("outcome") == f["outcome"]:
            deciding[e["cell"]] = int(e["attempt"])
    calls: dict[str, list[dict[str, Any]]] = {c: [] for c in finals}
    for e in events:
        if e["kind"] == TOOL_CALL and e["cell"] in finals and \
                int(e["attempt"]) == deciding.get(e["cell"]):
            calls[e["cell"]].append(e)
    return {c: (finals[c], sorted(calls[c], key=lambda r: (r["turn"], r["index"])))
            for c in finals}


def _stage_row(case: EpisodeCase, sealed: EpisodeOracle, observed: Mapping[str, int],
               answer: Mapping[str, Any] | None, evidence: Mapping[str, Any], arm: str,
               outcome: str, delivered: frozenset[tuple[str, str]] = frozenset()
               ) -> tuple[dict[str, Any], EpisodeOracle, str]:
    """One stage's scored row. ``delivered``: every edge the episode's prompt, released
    stages and tool results stated before this answer (the trace mechanism fabrication is
    read against)."""
    o = delivered_oracle(case, sealed, observed)
    row: dict[str, Any] = {"case_id": case.case_id, "world_id": case.world_id,
                           "episode_id": case.episode_id, "family": case.family,
                           "item_type": case.item_type, "stage": case.stage,
                           "skin": case.skin, "identified_set": o.identified_set,
                           "evidence": dict(evidence), "run_outcome": outcome}
    if answer is None:
        row.update({"verdict": {"case_id": case.case_id, "outcome": "invalid",
                                "error": f"run outcome {outcome}"}, "labels": [],
                    "named": None})
        failure = {"case_id": case.case_id, "arm": arm, "run_outcome": outcome}
        return row, o, json.dumps(failure, sort_keys=True)
    r = AgentResponse(case_id=case.case_id, arm=arm, **answer)
    v = score_episode_case(o, r)
    labels = episode_failure_labels(o, r, v)
    fabricated = fabricated_links(r.edges or [], set(delivered))
    if fabricated and v.outcome != "invalid":
        labels = with_fabrication(labels)
        row["fabricated"] = [list(e) for e in fabricated]
    row.update({"verdict": v.model_dump(mode="json"), "labels": labels,
                "named": r.label if r.status == "answer" else None})
    if o.expected_loss is not None and r.action is not None and r.action in o.expected_loss \
            and sealed.experiment_loss:
        row["episode_regret"] = (float(evidence["spent"]) + o.expected_loss[r.action]
                                 - min(sealed.experiment_loss.values()))
    return row, o, json.dumps(r.model_dump(mode="json"), sort_keys=True)


def score_episode_run(run_dir: Path, oracles: Mapping[str, EpisodeOracle]
                      ) -> list[dict[str, Any]]:
    """One row per stage case of every cell with a final, scored on its delivered evidence.

    Cells without a final (unresolved) are absent; a model-failure final scores its
    unanswered stages ``invalid``.
    """
    return [row for row, _, _ in episode_records(run_dir, oracles)]


def episode_records(run_dir: Path, oracles: Mapping[str, EpisodeOracle]
                    ) -> list[tuple[dict[str, Any], EpisodeOracle, str]]:
    """Per stage case: its scored row, its oracle record for the delivered evidence, and its
    response line (an agent_response, or a failure line the scorer marks invalid)."""
    manifest, schedule = load_run(run_dir)
    arm = str(manifest["agent"].get("name"))
    store = ObjectStore(run_dir)
    decided = _calls_of_final(run_dir)
    rows: list[tuple[dict[str, Any], EpisodeOracle, str]] = []
    for cell in schedule:
        if cell.cell_id not in decided:
            continue
        final, calls = decided[cell.cell_id]
        cases, _ = episode_cases(cell.request)
        delivered = graph_edges(stage_view(cases[0]))  # the prompt shows the first stage
        observed: dict[str, int] = {}
        evidence: dict[str, Any] = {"telemetry_calls": 0, "experiments": [], "spent": 0.0}
        stage = 0
        for call in calls:
            result = store.get_json(call["result"])
            args = store.get_json(call["arguments"])
            if not isinstance(result, dict) or "error" in result:
                continue
            delivered |= graph_edges(result)
            if call["tool"] in TELEMETRY_TOOLS:
                observed.update({str(k): int(v) for k, v in result["telemetry"].items()})
                evidence["telemetry_calls"] += 1
            elif call["tool"] == EXPERIMENT:
                observed.update({str(k): int(v) for k, v in result["observed"].items()})
                evidence["experiments"].append(result["intervention"])
                evidence["spent"] = round(evidence["spent"] + float(result["cost"]), 9)
            elif call["tool"] == ANSWER and result.get("accepted"):
                answer = _parse_answer(args, cell.cell_id)
                c = cases[stage]
                rows.append(_stage_row(c, oracles[c.case_id], observed, answer,
                                       _snapshot(evidence, observed), arm, "answered",
                                       frozenset(delivered)))
                stage += 1
                if stage < len(cases):  # the accepted answer's reply released this view
                    delivered |= graph_edges(stage_view(cases[stage]))
        answered = Outcome(final["outcome"]) is Outcome.ANSWERED and \
            final.get("tool") == ANSWER and final.get("arguments") is not None
        outcome = str(final["outcome"])
        if Outcome(outcome) is Outcome.ANSWERED and not answered:
            outcome = f"ended_without_answer:{final.get('tool')}"  # a tool or token budget
        for i in range(stage, len(cases)):
            c = cases[i]
            last = answered and i == len(cases) - 1
            rows.append(_stage_row(c, oracles[c.case_id], observed,
                                   final["arguments"] if last else None,
                                   _snapshot(evidence, observed), arm, outcome,
                                   frozenset(delivered)))
    return rows


def publish_episode_scores(bench_dir: Path, run_dir: Path) -> dict[str, Any] | None:
    """Publish ``run_dir/scored`` (``evaluate.publish_scored``'s sealed layout) once the run
    is complete: its stage answers against the oracle records of their delivered evidence,
    so ``causal report`` reads it; None while a cell lacks a final. A complete run cannot
    change, so a scored folder already there is left as it is (and its summary returned).
    """
    from rungbench.causal.bench.evaluate import SCORED, publish_scored
    from rungbench.causal.bench.verified import SUMMARY

    target = run_dir / SCORED
    if target.exists():
        loaded: dict[str, Any] = json.loads((target / SUMMARY).read_text("utf-8"))
        return loaded
    bench = open_bench(bench_dir)
    _, oracles = bench_episodes(bench)
    records = episode_records(run_dir, oracles)
    _, schedule = load_run(run_dir)
    cases = sum(len(episode_cases(c.request)[0]) for c in schedule)
    if len(records) != cases:
        return None
    manifest, _ = load_run(run_dir)
    data = "".join(f"{line}\n" for _, _, line in records).encode()
    delivered = {o.case_id: o for _, o, _ in records}
    fabricated = frozenset(row["case_id"] for row, _, _ in records if row.get("fabricated"))
    return publish_scored(bench, delivered, data, target, str(manifest["agent"]["name"]),
                          fabricated=fabricated)


def _snapshot(evidence: Mapping[str, Any], observed: Mapping[str, int]) -> dict[str, Any]:
    return {**evidence, "experiments": list(evidence["experiments"]),
            "observed": dict(sorted(observed.items()))}


def _parse_answer(stored: Any, cell: str) -> dict[str, Any]:
    try:
        args = json.loads(stored["arguments"])
    except (TypeError, KeyError, ValueError) as exc:
        raise IntegrityError(f"cell {cell!r}: stored stage answer unreadable ({exc})") from None
    if not isinstance(args, dict):
        raise IntegrityError(f"cell {cell!r}: stored stage answer is not an object")
    return args


def episode_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Aggregates per family: outcomes, mean regrets, lucky rate, evidence obtained."""
    fams: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        fams.setdefault(str(r["family"]), []).append(r)
    out: dict[str, Any] = {"n": len(rows), "families": {}}
    for fam, rs in sorted(fams.items()):
        oc = Counter(str(r["verdict"]["outcome"]) for r in rs)
        block: dict[str, Any] = {"n": len(rs), "outcomes": dict(sorted(oc.items())),
                                 "lucky_rate": oc["lucky"] / len(rs),
                                 "labels": dict(sorted(Counter(
                                     lb for r in rs for lb in r["labels"]).items())),
                                 "mean_telemetry_calls": float(np.mean(
                                     [r["evidence"]["telemetry_calls"] for r in rs])),
                                 "mean_experiments": float(np.mean(
                                     [len(r["evidence"]["experiments"]) for r in rs])),
                                 "mean_spent": float(np.mean(
                                     [r["evidence"]["spent"] for r in rs]))}
        for key in ("decision_regret", "episode_regret"):
            xs = [float(r["verdict"][key]) if key == "decision_regret" else float(r[key])
                  for r in rs if (r["verdict"].get(key) if key == "decision_regret"
                                  else r.get(key)) is not None]
            if xs:
                block[f"mean_{key}"] = float(np.mean(xs))
        out["families"][fam] = block
    return out


def paired_regret(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]], *,
                  family: str = "root_cause_debugging", metric: str = "episode_regret",
                  n_boot: int = 2000, seed: int = 20261003) -> dict[str, Any]:
    """Paired a − b of ``metric`` on the diagnosis cases both answered, clustered by world."""
    def pick(rows: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
        return {str(r["case_id"]): r for r in rows if r["family"] == family
                and r["item_type"] == "diagnosis" and r.get(metric) is not None}

    ra, rb = pick(a), pick(b)
    both = sorted(set(ra) & set(rb))
    if not both:
        raise InputError(f"no {family} diagnosis case carries {metric} in both runs")
    xa = [float(ra[c][metric]) for c in both]
    xb = [float(rb[c][metric]) for c in both]
    delta = paired_cluster_bootstrap(xa, xb, [str(ra[c]["world_id"]) for c in both],
                                     n_boot=n_boot, rng=seed)

    def lucky(rows: Mapping[str, Mapping[str, Any]]) -> float:
        return float(sum(rows[c]["verdict"]["outcome"] == "lucky" for c in both)) / len(both)

    return {"n": len(both), "metric": metric, "mean_a": float(np.mean(xa)),
            "mean_b": float(np.mean(xb)), "paired_difference": delta.to_json(),
            "lucky_rate": {"a": lucky(ra), "b": lucky(rb)}}


def bench_episode_schedule(bench_dir: Path, *, worlds: int | None = None,
                           families: frozenset[str] | None = None,
                           experiment_budget: float | None = None) -> Schedule:
    """The episode schedule over the records/2 cases of a verified bench."""
    bench = open_bench(bench_dir)
    cases, _ = bench_episodes(bench)
    if not cases:
        raise InputError("the bench holds no records/2 cases (build it with --families)",
                         path=str(bench_dir))
    ids = list(dict.fromkeys(c.world_id for c in cases))[:worlds]
    chosen = [c for c in cases if c.world_id in set(ids)
              and (families is None or c.family in families)]
    if not chosen:
        raise InputError(f"no records/2 case of families {sorted(families or [])}",
                         path=str(bench_dir))
    source = {"bench": bench_dir.name, "cases_v2": bench.digests[EPISODE_CASES],
              "worlds": len(ids), "families": sorted(families) if families else None}
    budget = DEFAULT_EXPERIMENT_BUDGET if experiment_budget is None else experiment_budget
    return episode_schedule(bench_dir.name, chosen, source, experiment_budget=budget)


def run_episodes(bench_dir: Path, out: Path, agent: Agent, *, resume: Path | None = None,
                 worlds: int | None = None, families: frozenset[str] | None = None,
                 experiment_budget: float | None = None, concurrency: int = 1,
                 max_cells: int | None = None,
                 progress: Callable[[int, int], None] | None = None
                 ) -> tuple[Path, RunSummary, list[dict[str, Any]]]:
    """Create (or resume) an episode run of ``agent`` on a bench; return it scored."""
    bench = open_bench(bench_dir)
    _, oracles = bench_episodes(bench)
    if resume is None:
        schedule = bench_episode_schedule(bench_dir, worlds=worlds, families=families,
                                          experiment_budget=experiment_budget)
        run_dir = create_run(out, schedule, describe_agent(agent))
    else:
        run_dir = resume
    summary = execute_run(run_dir, agent, validator=validate_causal_answer,
                          toolbox=episode_toolbox(oracles), concurrency=concurrency,
                          max_cells=max_cells, progress=progress)
    return run_dir, summary, score_episode_run(run_dir, oracles)


def run_agent(bench_dir: Path, out: Path, spec: AgentSpec, *, resume: Path | None = None,
              worlds: int | None = None, families: frozenset[str] | None = None,
              experiment_budget: float | None = None, concurrency: int = 1,
              max_cells: int | None = None,
              environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Run the agent ``spec`` names on the records/2 cases as episodes; return the scored
    summary. An episode policy (``reference:p2_protocol``, ...) is served on loopback and
    answers through the real ``openai`` client; an endpoint is sent to directly."""
    with open_agent(spec, EPISODE_TASK, serve=True, environ=environ) as agent:
        return _scored(agent, bench_dir, out, resume=resume, worlds=worlds, families=families,
                       experiment_budget=experiment_budget, concurrency=concurrency,
                       max_cells=max_cells)


def _scored(agent: Agent, bench_dir: Path, out: Path, **options: Any) -> dict[str, Any]:
    run_dir, summary, rows = run_episodes(bench_dir, out, agent, **options)
    published = publish_episode_scores(bench_dir, run_dir)
    return {"run": str(run_dir), "agent": agent.name, "cells": summary.cells,
            "session": summary.to_json(), "scored": episode_summary(rows),
            "subcapabilities": subcapability_table(rows),
            "published": None if published is None else str(run_dir / "scored"),
            "rows": rows}
