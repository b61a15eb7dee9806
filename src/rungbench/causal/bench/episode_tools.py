"""Records/2 cases as tool-use episodes: ``logs``, ``metrics``, ``run_experiment``, stages.

The agent gets the incident's telemetry only through tools and may run budgeted
experiments from the case's menu (docs/CONTRACTS.md §13b). An *episode* is one runner cell
(:mod:`rungbench.execute.tools`): a single records/2 case, or every stage of one
sequential-revision episode in stage order (seed 003 "Rules": "keep state within a
multi-stage episode"; state is reset between episodes — the runner builds a fresh
:class:`EpisodeEnvironment` per attempt).

The prompt shows the public case *without* its telemetry block; the tools return it:

* ``logs`` / ``metrics`` — the telemetry the current stage's public case delivers through
  that tool (its ``evidence.payload.tools[name]``), nothing else;
* ``run_experiment(intervention)`` — one ``probe:<node>`` of the current stage's
  ``permitted_interventions``; its cost is charged against the episode's experiment budget
  (``metadata.episode.experiment_budget``, cost units); an unlisted intervention, a repair,
  a repeat or a probe over budget is a tool error and charges nothing. The outcome is the
  episode's telemetry value of that node: the value a later stage delivers when one does,
  else a draw from P(node = 1 | do(F = the true hypothesis)) under the episode's final
  (true) mechanism with an RNG seeded from the case id and node, so replays are identical;
* ``submit_answer`` — the answer tool (records/2 agent_response fields). Before the last
  stage it is executed as a tool: the stage answer is recorded and the next stage is
  released in its reply; at the last stage it ends the episode (the cell's response).

Only the true hypothesis is read from the private oracle, by the factory's closure; a tool
reply carries telemetry bits, costs and stage text, never a posterior, EIG or loss.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import ValidationError

from rungbench.agents.protocol import Message, Request
from rungbench.causal.bench.incidents import JOINT_SEP, OUTAGE, Diagnosis, IncidentWorld
from rungbench.causal.bench.records import AgentResponse, EpisodeCase, EpisodeOracle
from rungbench.causal.bench.requests import SUBMIT_ANSWER_TOOL, validate_causal_answer
from rungbench.causal.scm import oracle
from rungbench.causal.scm.world import Query, World
from rungbench.errors import InputError
from rungbench.execute.schedule import Schedule
from rungbench.execute.tools import Budget, ToolboxFactory

EPISODE_TASK = "causal.episode/2"
"""Task id of a records/2 tool-use episode cell."""

ANSWER = "submit_answer"
"""The answer tool (shared with records/1 cells)."""
TELEMETRY_TOOLS = ("logs", "metrics")
"""Tools returning the stage's delivered telemetry."""
EXPERIMENT = "run_experiment"
"""Tool running one permitted probe."""
PROBE = "probe:"
"""Prefix of an experiment-menu id."""

DEFAULT_EXPERIMENT_BUDGET = 2.0
"""Experiment cost an episode may spend (cost units; every single probe costs ≤ 1.5)."""

_NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}


def _tool(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function",
            "function": {"name": name, "description": description, "parameters": parameters}}


LOGS_TOOL = _tool("logs", "Read the log-derived telemetry available at this stage.", _NO_ARGS)
METRICS_TOOL = _tool("metrics", "Read the metric telemetry available at this stage.", _NO_ARGS)
EXPERIMENT_TOOL = _tool(
    EXPERIMENT, "Run one permitted experiment (a probe:<node> id); its cost is charged "
    "against the episode's experiment budget.",
    {"type": "object", "properties": {"intervention": {"type": "string"}},
     "required": ["intervention"], "additionalProperties": False})

EPISODE_SYSTEM = (
    "You diagnose incidents and answer causal questions about a described system. "
    "Telemetry is not in the prompt: read it with the logs and metrics tools. You may run "
    "experiments from the permitted menu with run_experiment, within the stated budget. "
    "Answer each stage by calling submit_answer; a multi-stage episode releases the next "
    "stage in that call's reply."
)
"""System prompt of every episode cell."""


def stage_view(case: EpisodeCase) -> dict[str, Any]:
    """The public case as the prompt shows it: everything but the telemetry block."""
    doc = case.model_dump(mode="json")
    payload = dict(doc["evidence"]["payload"])
    payload.pop("tools", None)
    return {"case_id": case.case_id, "stage": case.stage, "family": case.family,
            "item_type": case.item_type, "question": case.question, "query": case.query,
            "evidence": {"kind": case.evidence.kind, "payload": payload},
            "assumptions": case.assumptions,
            "tools": [t for t in case.allowed_tools if t in TELEMETRY_TOOLS],
            "permitted_interventions": doc["permitted_interventions"],
            "answer_format": case.answer_format}


VIEW_MARK = "Case (JSON):\n"
"""Line that introduces a stage's public view in a prompt or a stage release."""


def render_stage(case: EpisodeCase, budget: float, spent: float) -> str:
    """The text releasing one stage: its question, the budget left, its public view."""
    return (f"Stage {case.stage}. {case.question}\nExperiment budget left: "
            f"{budget - spent:g} of {budget:g}.\nAnswer format: {case.answer_format}\n"
            f"{VIEW_MARK}{json.dumps(stage_view(case), sort_keys=True)}")


def tools_for(cases: Sequence[EpisodeCase]) -> tuple[dict[str, Any], ...]:
    """Tool schemas an episode offers (telemetry and experiments only where a case allows)."""
    allowed = {t for c in cases for t in c.allowed_tools}
    out = [t for name, t in (("logs", LOGS_TOOL), ("metrics", METRICS_TOOL)) if name in allowed]
    if any(i.id.startswith(PROBE) for c in cases for i in c.permitted_interventions):
        out.append(EXPERIMENT_TOOL)
    return (*out, SUBMIT_ANSWER_TOOL)


def episode_request(cell_id: str, cases: Sequence[EpisodeCase], *,
                    experiment_budget: float = DEFAULT_EXPERIMENT_BUDGET,
                    budget: Budget | None = None) -> Request:
    """One episode cell: stage 1 in the prompt, later stages released by the answer tool."""
    if not cases:
        raise InputError(f"episode {cell_id!r} has no cases", field="cases")
    tool_budget = budget or Budget(max_tool_calls=8 + 4 * len(cases),
                                   max_tokens=48_000 * len(cases))
    return Request(
        case_id=cell_id,
        messages=(Message("system", EPISODE_SYSTEM),
                  Message("user", render_stage(cases[0], experiment_budget, 0.0))),
        tools=tools_for(cases), tool_choice="required",
        metadata={"task": EPISODE_TASK, "budget": tool_budget.to_json(),
                  "episode": {"cases": [c.model_dump(mode="json") for c in cases],
                              "experiment_budget": experiment_budget}})


def episode_groups(cases: Sequence[EpisodeCase]) -> list[tuple[str, list[EpisodeCase]]]:
    """(cell id, stage cases): a revision episode is one cell (id = its episode id, stages
    in order); every other case is a cell of its own (id = its case id)."""
    groups: dict[str, list[EpisodeCase]] = {}
    for c in cases:
        key = c.episode_id if c.family == "sequential_revision" else c.case_id
        groups.setdefault(key, []).append(c)
    return [(k, sorted(v, key=lambda c: c.stage)) for k, v in groups.items()]


def episode_schedule(name: str, cases: Sequence[EpisodeCase], source: dict[str, Any], *,
                     experiment_budget: float = DEFAULT_EXPERIMENT_BUDGET) -> Schedule:
    """One cell per episode of ``cases`` (see :func:`episode_groups`)."""
    requests = [episode_request(k, g, experiment_budget=experiment_budget)
                for k, g in episode_groups(cases)]
    return Schedule.of(EPISODE_TASK, name, requests,
                       {**source, "experiment_budget": experiment_budget})


def episode_cases(request: Request) -> tuple[list[EpisodeCase], float]:
    """The stage cases and experiment budget a frozen episode request carries."""
    raw = request.metadata.get("episode")
    if not isinstance(raw, dict) or not isinstance(raw.get("cases"), list):
        raise InputError(f"cell {request.case_id!r} carries no episode",
                         field="metadata.episode")
    try:
        cases = [EpisodeCase.model_validate(c) for c in raw["cases"]]
        budget = float(raw["experiment_budget"])
    except (ValidationError, KeyError, TypeError, ValueError) as exc:
        raise InputError(f"cell {request.case_id!r}: bad episode ({exc})",
                         field="metadata.episode") from None
    return cases, budget


# --- the public case as an incident world (shared by the scorer and the reference agents)


def view_world(view: Mapping[str, Any]) -> World:
    """The mechanism a telemetry stage view (or public case dump) shows, as a world.

    The outage node keeps its skinned name in the view; here it is named
    :data:`~rungbench.causal.bench.incidents.OUTAGE`, the name the incident oracle reads.
    """
    payload = view["evidence"]["payload"]
    (shown,) = payload["outage"]
    doc = payload["mechanism"]

    def name(n: str) -> str:
        return OUTAGE if n == shown else n

    if shown != OUTAGE and any(v["name"] == OUTAGE for v in doc["variables"]):
        raise InputError(f"mechanism already names a node {OUTAGE!r}", field="mechanism")
    return World.from_json({**doc, "variables": [
        {**v, "name": name(v["name"]), "parents": [name(p) for p in v["parents"]]}
        for v in doc["variables"]]})


def view_incident(view: Mapping[str, Any]) -> IncidentWorld:
    """The incident world a telemetry stage shows (skinned names; menus from its costs).

    Symptoms are the probe-menu nodes: the nodes the stage lets an agent learn by
    experiment (the others are delivered through logs/metrics or never observed).
    """
    payload = view["evidence"]["payload"]
    world = view_world(view)
    hyps = [str(h) for h in payload["hypotheses"]]
    menu = {str(i["id"]): float(i["cost"]) for i in view["permitted_interventions"]}
    faults = tuple(h for h in hyps if JOINT_SEP not in h)
    joint = {h: tuple(h.split(JOINT_SEP)) for h in hyps if JOINT_SEP in h}
    probes = {k.removeprefix(PROBE): v for k, v in menu.items() if k.startswith(PROBE)}
    return IncidentWorld(
        world=world, faults=faults, symptoms=tuple(probes), tool_of={}, probe_cost=probes,
        repair_cost={f: menu[f"repair:{f}"] for f in faults},
        restart_cost=menu.get("restart_service", 0.0), joint=joint)


def outage_event(view: Mapping[str, Any]) -> dict[str, int]:
    """The outage observation every incident stage states (under the oracle's node name)."""
    (value,) = view["evidence"]["payload"]["outage"].values()
    return {OUTAGE: int(value)}


def diagnosis_of(view: Mapping[str, Any], observed: Mapping[str, int]) -> Diagnosis:
    """Exact oracle quantities of a stage given the outage and ``observed`` telemetry."""
    iw = view_incident(view)
    known = set(iw.world.names)
    evidence = {**outage_event(view), **{k: int(v) for k, v in observed.items() if k in known}}
    return Diagnosis(iw, evidence)


def is_incident(case: EpisodeCase) -> bool:
    """Whether ``case`` is a telemetry (incident) case."""
    return case.evidence.kind == "telemetry"


def _seed(case_id: str, node: str) -> int:
    h = hashlib.sha256(f"rungbench.episode/2|{case_id}|{node}".encode()).digest()
    return int.from_bytes(h[:8], "big")


def probe_outcome(truth: World, hypothesis: str, faults: Sequence[str], node: str,
                  case_id: str) -> int:
    """A draw of ``node`` under do(F = the hypothesis's faults), seeded by case id and node."""
    active = set(hypothesis.split(JOINT_SEP))
    do = {f: int(f in active) for f in faults}
    p = oracle.probability(truth, Query(2, {node: 1}, do))
    return int(np.random.default_rng(_seed(case_id, node)).random() < p)


@dataclass
class EpisodeState:
    """What one attempt of one episode has done so far (reset with every attempt)."""

    stage: int = 0
    """Index of the current stage."""
    spent: float = 0.0
    """Experiment cost charged."""
    outcomes: dict[str, int] = field(default_factory=dict)
    """Node -> value of every experiment run."""
    answers: list[dict[str, Any]] = field(default_factory=list)
    """Stage answers recorded before the last stage."""


class EpisodeEnvironment:
    """The tools of one attempt of one episode cell."""

    def __init__(self, request: Request, truth: Mapping[str, str]) -> None:
        self.cases, self.budget = episode_cases(request)
        self.truth = dict(truth)
        self.state = EpisodeState()
        last = self.cases[-1]
        self._true_world = view_world(last.model_dump(mode="json")) if is_incident(last) \
            else None
        self._delivered: dict[str, int] = {}
        for c in self.cases:  # later stages' telemetry is the episode's telemetry
            for values in c.evidence.payload.get("tools", {}).values():
                self._delivered.update({str(k): int(v) for k, v in values.items()})

    @property
    def case(self) -> EpisodeCase:
        """The current stage's public case."""
        return self.cases[self.state.stage]

    def offers(self, name: str) -> bool:
        """Telemetry/experiment tools the case allows; the answer tool before the last stage."""
        if name == ANSWER:
            return self.state.stage < len(self.cases) - 1
        if name in TELEMETRY_TOOLS:
            return name in self.case.allowed_tools
        return name == EXPERIMENT and any(
            i.id.startswith(PROBE) for i in self.case.permitted_interventions)

    def call(self, name: str, arguments: str) -> dict[str, Any]:
        """Execute one tool call; a bad call is answered with ``{"error"}``, never raised."""
        try:
            args = json.loads(arguments) if arguments.strip() else {}
        except (json.JSONDecodeError, RecursionError):
            return {"error": "arguments are not JSON"}
        if not isinstance(args, dict):
            return {"error": "arguments are not a JSON object"}
        if not self.offers(name):
            return {"error": f"tool {name!r} is not offered at this stage"}
        if name in TELEMETRY_TOOLS:
            values = self.case.evidence.payload.get("tools", {}).get(name, {})
            return {"stage": self.case.stage, "telemetry": dict(sorted(values.items()))}
        if name == EXPERIMENT:
            return self._experiment(args.get("intervention"))
        return self._stage_answer(args)

    def _experiment(self, chosen: Any) -> dict[str, Any]:
        menu = {i.id: i.cost for i in self.case.permitted_interventions}
        if not isinstance(chosen, str) or chosen not in menu:
            return {"error": f"intervention {chosen!r} is not in this stage's menu"}
        if not chosen.startswith(PROBE):
            return {"error": f"{chosen!r} is a repair: submit it with the answer"}
        node = chosen.removeprefix(PROBE)
        if node in self.state.outcomes:
            return {"error": f"{chosen!r} was already run this episode"}
        cost = menu[chosen]
        if self.state.spent + cost > self.budget + 1e-9:
            return {"error": f"{chosen!r} costs {cost:g}; budget left "
                             f"{self.budget - self.state.spent:g}"}
        self.state.spent = round(self.state.spent + cost, 9)
        value = self._delivered.get(node)
        if value is None:
            assert self._true_world is not None
            iw = view_incident(self.cases[-1].model_dump(mode="json"))
            value = probe_outcome(self._true_world, self.truth[self.case.case_id], iw.faults,
                                  node, self.case.case_id)
        self.state.outcomes[node] = value
        return {"intervention": chosen, "observed": {node: value}, "cost": cost,
                "budget_left": round(self.budget - self.state.spent, 9)}

    def _stage_answer(self, args: dict[str, Any]) -> dict[str, Any]:
        try:
            AgentResponse(case_id=self.case.case_id, arm="-", **args)
        except (ValidationError, TypeError) as exc:
            return {"error": f"answer not accepted: {exc}".splitlines()[0]}
        why = validate_causal_answer(self.case_request_stub(), ANSWER, args)
        if why is not None:
            return {"error": f"answer not accepted: {why}"}
        self.state.answers.append(args)
        self.state.stage += 1
        return {"accepted": True, "next_stage": self.case.stage,
                "release": render_stage(self.case, self.budget, self.state.spent)}

    def case_request_stub(self) -> Request:
        """A request naming the current case (what the answer validator reads)."""
        return Request(self.case.case_id, (), ())

    def close(self) -> None:
        """Nothing to release: the state lives in memory and dies with the attempt."""
        self.state = EpisodeState()


def episode_toolbox(oracles: Mapping[str, EpisodeOracle]) -> ToolboxFactory:
    """The runner's toolbox factory for episode cells over a bench's private oracle records.

    Only each case's true hypothesis is taken from the oracle (the environment samples
    experiment outcomes from it); nothing else private reaches an environment.
    """
    truth = {cid: o.true_cause for cid, o in oracles.items() if o.true_cause is not None}

    def factory(request: Request) -> EpisodeEnvironment:
        return EpisodeEnvironment(request, truth)

    return factory
