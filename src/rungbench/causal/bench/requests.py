"""Causal benchmark cases as frozen agent requests, and agent answers back as records.

A built causal benchmark directory (``DIR/public/*.jsonl`` public_case records, see
docs/CONTRACTS.md §3) becomes a schedule of :data:`CAUSAL_TASK` cells, one per case.
Each case is rendered as a system prompt plus the question, its evidence, assumptions
and permitted interventions, with one required ``submit_answer`` tool whose arguments
are the agent_response fields. The case itself rides in ``Request.metadata`` (never
sent to a provider) so that reference agents can answer it.

* :func:`causal_request` / :func:`causal_schedule` — public cases to requests / cells.
* :func:`validate_causal_answer` — admissibility of a schema-valid ``submit_answer``.
* :class:`CaseAgentAdapter` / :func:`reference_case_agent` — a case-level
  :class:`~rungbench.causal.bench.reference_agents.CaseAgent` behind the Agent protocol.
* :func:`write_agent_responses` — a finished run's final outcomes as the
  ``responses.jsonl`` that :func:`rungbench.causal.bench.evaluate.score_run` scores.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from rungbench.agents.outcomes import Outcome
from rungbench.agents.protocol import Message, Request, Response, ToolCall
from rungbench.causal.bench.records import AgentResponse, PublicCase
from rungbench.causal.bench.reference_agents import POLICIES, CaseAgent
from rungbench.causal.bench.reference_agents import reference_agent as causal_reference_agent
from rungbench.causal.bench.verified import CASES, bench_cases, bench_oracles, open_bench
from rungbench.errors import InputError
from rungbench.execute.events import read_events
from rungbench.execute.runner import EVENTS, load_run
from rungbench.execute.schedule import Schedule

CAUSAL_TASK = "causal.public_case/1"
"""Task id of a causal public-case cell."""

SUBMIT_ANSWER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "submit_answer",
        "description": "Submit your answer to the causal question (fields of agent_response).",
        "parameters": {
            "type": "object",
            "properties": {
                "status": {
                    "type": "string",
                    "enum": ["answer", "not_identifiable", "abstain", "need_info"],
                    "description": "answer, not_identifiable, abstain or need_info.",
                },
                "value": {"type": ["number", "null"], "description": "Numeric answer."},
                "bounds": {
                    "type": ["array", "null"],
                    "items": {"type": "number"},
                    "description": "[lo, hi] when the question asks for bounds.",
                },
                "label": {"type": ["string", "null"], "description": "Categorical answer."},
                "confidence": {
                    "type": ["number", "null"],
                    "description": "Probability that your answer is correct, in [0, 1].",
                },
                "experiment": {"type": ["string", "null"], "description": "Chosen experiment."},
                "action": {"type": ["string", "null"], "description": "Chosen intervention id."},
                "edges": {
                    "type": ["array", "null"],
                    "items": {"type": "array", "items": {"type": "string"}},
                    "description": "Directed edges [cause, effect].",
                },
                "claim_text": {"type": "string", "description": "Short justification."},
            },
            "required": ["status"],
            "additionalProperties": False,
        },
    },
}
"""The one tool a causal cell offers; its arguments are agent_response fields."""

CAUSAL_SYSTEM = (
    "You answer causal-reasoning questions about a described system. "
    "Answer only by calling the submit_answer tool."
)
"""System prompt of every causal cell."""


def causal_request(case: PublicCase) -> Request:
    """Render one public case into a request with the ``submit_answer`` tool."""
    parts = [
        case.question,
        f"Evidence ({case.evidence.kind}):\n"
        + json.dumps(case.evidence.payload, sort_keys=True, indent=1),
    ]
    if case.assumptions:
        parts.append("Assumptions:\n" + "\n".join(f"- {a}" for a in case.assumptions))
    if case.permitted_interventions:
        parts.append(
            "Permitted interventions (id: cost):\n"
            + "\n".join(f"- {i.id}: {i.cost:g}" for i in case.permitted_interventions)
        )
    parts.append(f"Answer format: {case.answer_format}")
    return Request(
        case_id=case.case_id,
        messages=(Message("system", CAUSAL_SYSTEM), Message("user", "\n\n".join(parts))),
        tools=(SUBMIT_ANSWER_TOOL,),
        tool_choice="required",
        metadata={"task": CAUSAL_TASK, "public_case": case.model_dump(mode="json")},
    )


def causal_schedule(directory: Path, *, limit: int | None = None, offset: int = 0) -> Schedule:
    """Build one cell per public case of a built causal benchmark directory.

    The bench is verified first (:func:`rungbench.causal.bench.verified.open_bench`): an
    unfinished, tampered or foreign directory is an IntegrityError naming the file.
    """
    bench = open_bench(directory)
    cases = bench_cases(bench)
    chosen = cases[offset : None if limit is None else offset + limit]
    return Schedule.of(
        CAUSAL_TASK,
        directory.name,
        [causal_request(c) for c in chosen],
        {
            "directory": directory.name,
            "files": {Path(CASES).name: bench.digests[CASES]},
            "offset": offset,
            "limit": limit,
        },
    )


def validate_causal_answer(request: Request, tool: str, arguments: Mapping[str, Any]) -> str | None:
    """Return why a schema-valid ``submit_answer`` call is inadmissible, or None.

    The domain check of the runner (:data:`rungbench.agents.outcomes.Validator`): a
    reason makes the call ``illegal`` — schema-valid but rejected by the domain, as an
    illegal chess move is — never ``answered``. docs/CONTRACTS.md §3 (outcome rules and
    convention 5): ``value``, ``confidence`` and both ends of ``bounds`` are finite
    numbers in [0, 1] and bounds are ordered; the scorers mark such answers ``invalid``.
    """
    for name in ("value", "confidence"):
        number = arguments.get(name)
        if number is not None and not _is_probability(number):
            return f"{name} {number!r} outside [0, 1]"
    bounds = arguments.get("bounds")
    if bounds is not None and (
        len(bounds) != 2 or not all(_is_probability(b) for b in bounds) or bounds[0] > bounds[1]
    ):
        return f"bounds {bounds!r} are not [lo, hi] with 0 <= lo <= hi <= 1"
    edges = arguments.get("edges")
    if edges is not None and any(len(e) != 2 for e in edges):
        return "every edge must be [cause, effect]"
    return None


def _is_probability(number: Any) -> bool:
    """Whether ``number`` is a finite float in [0, 1] (NaN and infinities are not)."""
    return math.isfinite(float(number)) and 0.0 <= float(number) <= 1.0


class CaseAgentAdapter:
    """Puts a causal :class:`CaseAgent` behind the Agent protocol (answers via submit_answer)."""

    def __init__(self, case_agent: CaseAgent) -> None:
        self.case_agent = case_agent
        self.name = case_agent.name if ":" in case_agent.name else f"reference:{case_agent.name}"

    def respond(self, request: Request) -> Response:
        """Answer the public case carried in the request's metadata."""
        record = request.metadata.get("public_case")
        if not isinstance(record, dict):
            raise InputError(
                f"request {request.case_id!r} carries no public case", field="metadata.public_case"
            )
        case = PublicCase.model_validate(record)
        reply = self.case_agent.answer(case).model_dump(mode="json")
        fields = {k: v for k, v in reply.items() if k not in ("version", "case_id", "arm", "t")}
        return Response(text=None, tool_calls=(ToolCall("submit_answer", json.dumps(fields)),))

    def describe(self) -> dict[str, Any]:
        """Return the run-manifest description: the kind (name prefix) and the name."""
        return {"kind": self.name.partition(":")[0], "name": self.name}


def reference_case_agent(name: str, bench: Path | None) -> CaseAgentAdapter:
    """Return causal reference agent ``name`` reading ``bench/private/oracle.jsonl``.

    Raises InputError naming the unknown policy, or when ``bench`` is None or holds no
    private oracle records.
    """
    if name not in POLICIES:
        raise InputError(f"unknown causal reference agent {name!r}; known: {', '.join(POLICIES)}")
    if bench is None or not (bench / "private" / "oracle.jsonl").is_file():
        raise InputError(
            "causal reference agents read the private oracle records (DIR/private/oracle.jsonl)",
            field="agent",
        )
    oracles = bench_oracles(open_bench(bench))
    return CaseAgentAdapter(cast(CaseAgent, causal_reference_agent(f"reference:{name}", oracles)))


def write_agent_responses(run_dir: Path) -> dict[str, Any]:
    """Write ``run_dir/responses.jsonl`` (agent_response records) from a causal run's finals.

    Answered cells become agent_response records; model failures (malformed, refusal,
    illegal) become lines the causal scorer marks ``invalid`` for their case; cells with no
    final outcome (reliability failures) are left out and counted ``missing``, so the
    scorer lists them as missing (no response) — nothing is silently dropped. The arm is
    the agent's label. Score with ``rungbench.causal.bench.evaluate.score_run``.
    """
    manifest, _ = load_run(run_dir)
    agent = manifest["agent"]
    arm = str(agent.get("label") or agent.get("name"))
    lines: list[str] = []
    counts = {"responses": 0, "invalid": 0, "missing": 0}
    finals = 0
    for event in read_events(run_dir / EVENTS):
        if event["kind"] != "final":
            continue
        finals += 1
        outcome = Outcome(event["outcome"])
        if outcome is Outcome.ANSWERED and event.get("arguments") is not None:
            lines.append(_response_line(event, arm))
            counts["responses"] += 1
        elif outcome.is_model_failure:
            lines.append(_failure_line(event, arm, outcome))
            counts["invalid"] += 1
        else:
            counts["missing"] += 1
    counts["missing"] += int(manifest["cells"]) - finals  # no final yet: no response
    (run_dir / "responses.jsonl").write_text("".join(f"{line}\n" for line in lines), "utf-8")
    return counts


def _response_line(event: Mapping[str, Any], arm: str) -> str:
    record = AgentResponse(case_id=event["cell"], arm=arm, t=event["t"], **event["arguments"])
    return json.dumps(record.model_dump(mode="json"), sort_keys=True)


def _failure_line(event: Mapping[str, Any], arm: str, outcome: Outcome) -> str:
    failure = {
        "case_id": event["cell"],
        "arm": arm,
        "run_outcome": outcome.value,
        "detail": event.get("detail", ""),
    }
    return json.dumps(failure, sort_keys=True)
