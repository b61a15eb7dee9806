"""Arm × case × sample → frozen runner cells, and a finished arm run back to scored rows.

A cell is one public case under one arm, sample ``k`` (cell id ``<case_id>~s<k>``): the arm's
system prompt, the case rendered as the bench renders it (minus the world id, which the agent
side never sees), the arm's text facts when it has them, the ``submit_answer`` tool plus the
arm's tools, and in metadata (never sent) the budget and the tool environment. An arm with a
routing gate offers its graph tools only on cases whose question the gate's frozen detector
flags as a causal opportunity (the verdict is recorded in the cell). Samples of a
case send identical payloads: a stochastic model draws again, a deterministic one repeats.

Cases are chosen per world in bench order (:func:`select_cases`), the same for every arm, so
arms pair by (case, sample) and cluster by world.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rungbench.agents.outcomes import Outcome
from rungbench.agents.protocol import Message, Request
from rungbench.causal.ablations import labels
from rungbench.causal.ablations.arms import GRAPH_TOOLS, Arm
from rungbench.causal.ablations.contamination import Needles, cell_writings
from rungbench.causal.ablations.facts import CAUSAL, Edges, arm_rows, fact_sentences, world_edges
from rungbench.causal.ablations.tools import tool_schemas
from rungbench.causal.bench.records import AgentResponse, PrivateOracle, PublicCase
from rungbench.causal.bench.requests import SUBMIT_ANSWER_TOOL, validate_causal_answer
from rungbench.causal.bench.scorer import score
from rungbench.causal.bench.taxonomy import failure_labels
from rungbench.causal.instrument.detector import Detector, load_detector
from rungbench.errors import InputError
from rungbench.evidence.store import ObjectStore
from rungbench.execute.events import read_events
from rungbench.execute.runner import EVENTS, load_run
from rungbench.execute.schedule import Schedule
from rungbench.execute.tools import Budget

ABLATION_TASK = "causal.ablation_case/1"
"""Task id of an ablation cell."""
ANSWER_TOOL = "submit_answer"


ITEM_ORDER = ("discovery", "identification", "cf_no_mechanism", "exact")
"""Item types taken round-robin per world (types the world lacks are skipped)."""


def select_cases(cases: Sequence[PublicCase], per_world: int) -> list[PublicCase]:
    """Up to ``per_world`` cases of every world, round-robin over :data:`ITEM_ORDER`.

    Within a type, cases are taken in bench order (a world's domain-skin copy before its
    nonsense twin). The choice depends only on the public cases, so it is identical for
    every arm; worlds appear in bench order.
    """
    by_world: dict[str, dict[str, list[PublicCase]]] = {}
    for case in cases:
        by_world.setdefault(case.world_id, {}).setdefault(case.item_type, []).append(case)
    out: list[PublicCase] = []
    for types in by_world.values():
        queues = [list(types.get(t, [])) for t in ITEM_ORDER]
        queues += [list(v) for t, v in types.items() if t not in ITEM_ORDER]
        taken = 0
        while taken < per_world and any(queues):
            for queue in queues:
                if queue and taken < per_world:
                    out.append(queue.pop(0))
                    taken += 1
    return out


def _without_world_id(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_world_id(v) for k, v in value.items() if k != "world_id"}
    if isinstance(value, list):
        return [_without_world_id(v) for v in value]
    return value


def latent_nodes(case: PublicCase) -> list[str]:
    """Nodes the case's evidence marks unobserved."""
    out = set()
    for key in ("variables", "graph"):
        for v in case.evidence.payload.get(key, []) or []:
            if v.get("observed") is False:
                out.add(str(v["name"]))
    return sorted(out)


def case_text(case: PublicCase) -> str:
    """The case as the bench renders it (question, evidence, assumptions, format), no world id."""
    parts = [case.question,
             f"Evidence ({case.evidence.kind}):\n"
             + json.dumps(_without_world_id(case.evidence.payload), sort_keys=True, indent=1)]
    if case.assumptions:
        parts.append("Assumptions:\n" + "\n".join(f"- {a}" for a in case.assumptions))
    if case.permitted_interventions:
        parts.append("Permitted interventions (id: cost):\n"
                     + "\n".join(f"- {i.id}: {i.cost:g}" for i in case.permitted_interventions))
    parts.append(f"Answer format: {case.answer_format}")
    return "\n\n".join(parts)


@functools.cache
def gate_detector(name: str) -> Detector:
    """The frozen opportunity detector a routing gate names (loaded once)."""
    return load_detector(f"{name}.json")


def routing(arm: Arm, case: PublicCase) -> dict[str, Any] | None:
    """The gate's verdict on the case's question, or None when the arm has no gate."""
    if arm.gate is None:
        return None
    detector = gate_detector(arm.gate)
    found = detector.detect(case.question)
    return {"detector": detector.version, "opportunity": found.opportunity,
            "kind": found.kind}


def offered_tools(arm: Arm, route: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The arm's tools on one case: without the graph tools where its gate says no."""
    if route is None or route["opportunity"]:
        return arm.tools
    return tuple(t for t in arm.tools if t not in GRAPH_TOOLS)


def arm_request(arm: Arm, case: PublicCase, sample: int, edges: Edges) -> Request:
    """One cell's frozen request."""
    held = arm_rows(edges, case.world_id, arm.content, arm.production_keep,
                    arm.production_associations, arm.edges == "typed")
    text = case_text(case)
    if arm.facts == "text":
        text = f"{text}\n\n{fact_sentences(held)}"
    route = routing(arm, case)
    tools = offered_tools(arm, route)
    return Request(
        case_id=f"{case.case_id}~s{sample}",
        messages=(Message("system", arm.system_prompt), Message("user", text)),
        tools=(SUBMIT_ANSWER_TOOL, *tool_schemas(tools)),
        tool_choice="required",
        metadata={
            "task": ABLATION_TASK, "arm": arm.name, "arm_digest": arm.digest(),
            "case_id": case.case_id, "world_id": case.world_id, "sample": sample,
            "budget": Budget(arm.max_tool_calls, arm.max_tokens).to_json(),
            "tool_env": {"tools": list(tools), "query": arm.query,
                         "edges": [list(e) for e in held] if arm.facts == "graph" else [],
                         "latent": latent_nodes(case)},
            **({"routing": route} if route is not None else {}),
        },
    )


def arm_schedule(arm: Arm, cases: Sequence[PublicCase], all_cases: Sequence[PublicCase],
                 samples: int, source: Mapping[str, Any]) -> Schedule:
    """Every chosen case × ``samples`` for one arm; ``all_cases`` supply the world's edges."""
    edges = world_edges(all_cases)
    requests = [arm_request(arm, c, k, edges.get((c.world_id, c.skin), ()))
                for c in cases for k in range(samples)]
    return Schedule.of(ABLATION_TASK, f"{arm.name}", requests,
                       {**dict(source), "arm": arm.name, "arm_digest": arm.digest(),
                        "samples": samples})


def validate_ablation_answer(request: Request, tool: str, arguments: Mapping[str, Any]
                             ) -> str | None:
    """The runner's domain check: the episode must end in ``submit_answer``.

    An episode that ends on a tool call (its tool or token budget spent) is ``illegal``; a
    ``submit_answer`` call is checked as the bench checks it.
    """
    if tool != ANSWER_TOOL:
        return f"episode ended on a {tool!r} call (budget spent before an answer)"
    return validate_causal_answer(request, tool, arguments)


def run_needles(cases: Sequence[PublicCase], cohort: Needles | None = None) -> Needles:
    """What a cell's writing is scanned for: the world ids of the bench the arm ran on, and a
    validation cohort's ids and unique names when given (:mod:`.labels`)."""
    ids = frozenset(c.world_id for c in cases)
    if cohort is None:
        return Needles(ids, frozenset(), ())
    return Needles(ids | cohort.world_ids, cohort.names, ())


def run_rows(run_dir: Path, oracles: Mapping[str, PrivateOracle],
             cases: Sequence[PublicCase], *, cohort: Needles | None = None
             ) -> list[dict[str, Any]]:
    """One scored row per cell of a finished arm run (harness side; per-case, private).

    Each row carries the outcome (``missing`` for a cell without a final), whether it was
    right, tokens, cost, tool calls, the evidence actually obtained (the digests of the tool
    results of the deciding attempt and the edges those results named), and its failure
    ``labels``: the scorer's mechanical labels plus routing bypass and oracle leakage, with
    the evidence for those two (``opportunity``, ``graph_tool_calls``, ``graph_held_answer``,
    ``leaks``; :mod:`.labels`). ``cases`` are the bench's public cases (questions, queries and
    the worlds' true edges); ``cohort`` adds a validation cohort's needles to the leak scan.
    """
    manifest, schedule = load_run(run_dir)
    store = ObjectStore(run_dir)
    events = read_events(run_dir / EVENTS)
    finals = {e["cell"]: e for e in events if e["kind"] == "final"}
    deciding = {e["cell"]: e for e in events if e["kind"] == "tool_event"
                and finals.get(e["cell"], {}).get("attempts") == e["attempt"]}
    calls: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        if e["kind"] == "tool_call" and finals.get(e["cell"], {}).get("attempts") == e["attempt"]:
            calls.setdefault(e["cell"], []).append(e)
    writings: dict[str, list[tuple[str, str]]] = {}
    for cell_id, where, text in cell_writings(run_dir):
        writings.setdefault(cell_id, []).append((where, text))
    by_id = {c.case_id: c for c in cases}
    true_edges = world_edges(cases)
    needles = run_needles(cases, cohort)
    rows = []
    for cell in schedule:
        meta = cell.request.metadata
        oracle = oracles[str(meta["case_id"])]
        case = by_id.get(oracle.case_id)
        if case is None:
            raise InputError(f"{run_dir}: case {oracle.case_id!r} is not among the bench's "
                             "public cases", field="cases")
        final = finals.get(cell.cell_id)
        event = deciding.get(cell.cell_id, {})
        outcome, brier, mechanical = "missing", None, []
        if final is not None and Outcome(final["outcome"]) is Outcome.ANSWERED:
            try:
                response = AgentResponse(case_id=oracle.case_id, arm=str(meta["arm"]),
                                         t=str(final["t"]), **final["arguments"])
            except (ValidationError, TypeError):
                outcome = "invalid"  # schema-valid tool call the record model still rejects
            else:
                verdict = score(oracle, response)
                outcome, brier = verdict.outcome, verdict.brier
                mechanical = failure_labels(oracle, response, verdict)
        elif final is not None:
            outcome = "invalid"
        obtained = calls.get(cell.cell_id, [])
        tools_used = [str(c["tool"]) for c in obtained]
        row: dict[str, Any] = {
            "arm": str(meta["arm"]), "cell": cell.cell_id, "case_id": oracle.case_id,
            "world_id": oracle.world_id, "sample": int(meta["sample"]),
            "item_type": oracle.item_type, "identifiable": oracle.identifiable,
            "decision": oracle.expected_loss is not None,
            "outcome": outcome, "right": outcome in ("correct", "correct_non_id"),
            "brier": brier,
            "tokens": int(event.get("tokens_in", 0)) + int(event.get("tokens_out", 0)),
            "cost_usd": float(event.get("cost_usd", 0.0)),
            "tool_calls": len(obtained),
            "routed": _routed(meta),
            "tools_used": sorted(set(tools_used)),
            "evidence": [str(c["result_digest"]) for c in obtained],
            "edges_obtained": _edges_obtained(store, obtained),
            "opportunity": _opportunity(meta, case),
            "graph_tool_calls": labels.graph_tool_calls(tools_used),
            "graph_held_answer": cell_held_answer(meta, case, true_edges),
            "leaks": labels.leaked_needles(writings.get(cell.cell_id, []), needles),
            "run_id": str(manifest["run_id"]),
        }
        row["labels"] = labels.cell_labels(row, mechanical)
        rows.append(row)
    return rows


def _opportunity(meta: Mapping[str, Any], case: PublicCase) -> dict[str, Any]:
    """Condition (a) of routing bypass: the gate's frozen verdict, else the default detector's."""
    route = meta.get("routing")
    if isinstance(route, dict):
        return labels.gate_opportunity(route)
    return labels.default_opportunity(gate_detector(labels.DEFAULT_DETECTOR), case.question)


def cell_held_answer(meta: Mapping[str, Any], case: PublicCase,
                     true_edges: Mapping[tuple[str, str], Edges]) -> bool:
    """Condition (c) of routing bypass: the rows the arm held answer the case's queries (a
    cell not offered ``causal()`` could not have asked its graph, so it held nothing)."""
    env = meta["tool_env"]
    if "causal" not in env.get("tools", []):
        return False
    held = tuple(sorted((str(r[0]), str(r[1]), str(r[2]) if len(r) > 2 else CAUSAL)
                        for r in env.get("edges", [])))
    return labels.graph_held_answer(held, true_edges.get((case.world_id, case.skin), ()),
                                    labels.case_queries(case), str(env.get("query") or "fixed"))


def _routed(meta: Mapping[str, Any]) -> bool | None:
    """Whether a gated cell was offered the graph tools (None when the arm has no gate)."""
    route = meta.get("routing")
    return None if not isinstance(route, dict) else bool(route["opportunity"])


def _edges_obtained(store: ObjectStore, calls: Sequence[Mapping[str, Any]]) -> int:
    seen: set[tuple[str, str]] = set()
    for call in calls:
        if call["tool"] != "causal":
            continue
        result = store.get_json(str(call["result"]))
        if isinstance(result, dict):
            seen |= labels.answer_edges(result)
    return len(seen)
