"""A bound chess study design as an inspect_ai task, and inspect logs back as a study run.

The chess side of the inspect_ai bridge (docs/CONTRACTS.md §16 and §23; optional extra
``rungbench[inspect]``). Export:
:func:`study_task` turns the schedule one model x route of a binding would run
(:func:`~rungbench.chess.studies.ladder.schedule_for`: A105 cells, E020/E021 or E023 arms)
into an inspect Task. Each sample is one cell: the request's messages exactly as the
runner would send them, id = the cell's case id, the request's payload digest in the
metadata. The solver offers ``submit_move`` (one free UCI string, no enumeration, the same
tool the study registers) and generates once. The scorer is rungbench's deterministic
legality check (:func:`move_class`: ``legal``, ``illegal``, ``malformed`` or ``missing``,
from :func:`~rungbench.chess.reference_agents.validate_move`); WDL regret needs the
evaluator, so the scorer records the submitted move as the score's answer and
:func:`import_study_log` brings the log back.

Import: :func:`import_study_log` replays the log through the real runner
(:func:`~rungbench.chess.studies.study.run_study`) with :class:`ReplayAgent`, whose answer
to a cell is the sample's recorded assistant turn. The replay refuses a sample whose
recorded payload digest differs from the cell's request (``foreign_log``), so the run
directory holds the provider responses exactly as inspect received them, under the same
budget, crash-safety and verification as any study run, and ``rungbench chess study
evaluate`` / ``analyze`` read it as any other run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rungbench.agents.inspect_logs import read_log, require_inspect
from rungbench.agents.protocol import Request, Response, ToolCall, Usage
from rungbench.chess.reference_agents import validate_move
from rungbench.chess.studies.bindings import load_binding
from rungbench.chess.studies.ladder import schedule_for
from rungbench.chess.studies.study import current_manifest, run_study
from rungbench.errors import InputError, Reason, Refusal
from rungbench.evidence.canonical import bytes_digest
from rungbench.execute.schedule import Schedule

TASK_NAME = "rungbench_chess_study"
"""Name of the exported inspect task."""

GATE = "chess inspect import"
"""Gate name of import refusals."""

MOVE_CLASSES = ("legal", "illegal", "malformed", "missing")
"""What the deterministic scorer records per sample."""



def study_schedule(study: Path, stage: Path, binding: str, *, model: str,
                   route: str) -> Schedule:
    """The verified schedule of one model x route of a binding (what the runner sends)."""
    manifest = current_manifest(study, stage)
    return schedule_for(load_binding(study, binding, manifest), manifest, model, route)


def first_move_call(messages: Sequence[Any]) -> tuple[str | None, str | None, str]:
    """(tool name, raw JSON arguments, final text) of a sample's first assistant tool call."""
    text = ""
    for message in messages:
        if getattr(message, "role", None) != "assistant":
            continue
        for call in getattr(message, "tool_calls", None) or []:
            return str(call.function), json.dumps(call.arguments or {}, sort_keys=True), ""
        text = str(getattr(message, "text", "") or "")
    return None, None, text


def move_class(request: Request, tool: str | None, arguments: str | None) -> str:
    """``legal``/``illegal``/``malformed``/``missing`` of one submitted call in ``request``."""
    if tool is None or arguments is None:
        return "missing"
    try:
        args = json.loads(arguments)
    except ValueError:
        return "malformed"
    if tool != "submit_move" or not isinstance(args, dict) or not isinstance(
            args.get("move"), str) or set(args) != {"move"}:
        return "malformed"
    return "legal" if validate_move(request, tool, args) is None else "illegal"


def study_task(study: str | Path, stage: str | Path, binding: str, *, model: str, route: str,
               limit: int | None = None) -> Any:
    """The inspect_ai Task over one model x route of a binding (module docstring)."""
    require_inspect()
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser
    from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
    from inspect_ai.solver import TaskState, generate, use_tools
    from inspect_ai.tool import Tool, tool

    schedule = study_schedule(Path(study), Path(stage), binding, model=model, route=route)
    cells = list(schedule)[:limit] if limit is not None else list(schedule)
    requests = {c.request.case_id: c.request for c in cells}
    samples = []
    for cell in cells:
        req = cell.request
        if any(m.role not in ("system", "user") for m in req.messages):
            raise InputError(f"cell {req.case_id!r} is not a single-turn request",
                             field="messages")
        samples.append(Sample(
            input=[ChatMessageSystem(content=m.content) if m.role == "system"
                   else ChatMessageUser(content=m.content) for m in req.messages],
            id=req.case_id,
            metadata={"case_id": req.case_id, "payload_digest": req.payload_digest(),
                      "condition": req.metadata.get("condition"),
                      "key": req.metadata.get("key")}))

    @tool
    def submit_move() -> Tool:
        async def execute(move: str) -> str:
            """Submit your move for the side to move, in UCI notation (e.g. e2e4, e7e8q).

            Args:
              move: One move in UCI notation.
            """
            return "recorded"

        return execute

    @scorer(metrics=[accuracy()])
    def legality() -> Any:
        async def score(state: TaskState, target: Target) -> Score:
            name, arguments, _ = first_move_call(state.messages)
            kind = move_class(requests[str(state.metadata["case_id"])], name, arguments)
            return Score(value=CORRECT if kind == "legal" else INCORRECT,
                         answer=arguments or "", explanation=kind)

        return score

    return Task(dataset=MemoryDataset(samples, name=f"{schedule.name}"),
                solver=[use_tools(submit_move(), tool_choice="any"),
                        generate(tool_calls="none")],
                scorer=legality(), name=TASK_NAME,
                metadata={"rungbench_schedule": schedule.digest()})



class ReplayAgent:
    """Answers each cell with the assistant turn its inspect sample recorded."""

    def __init__(self, log: Any, log_digest: str) -> None:
        self.name = "inspect-replay"
        self._samples: dict[str, Any] = {str(s.id): s for s in log.samples or []}
        self._model = str(getattr(log.eval, "model", ""))
        self._log = log_digest

    def respond(self, request: Request) -> Response:
        """The recorded reply to ``request``; refuses a sample of another request."""
        sample = self._samples.get(request.case_id)
        if sample is None:
            raise Refusal([Reason("foreign_cases", f"the log has no sample for cell "
                                  f"{request.case_id!r}", subject=request.case_id)], gate=GATE)
        recorded = dict(sample.metadata or {}).get("payload_digest")
        if recorded != request.payload_digest():
            raise Refusal([Reason("foreign_log", f"sample {request.case_id!r} was sent another "
                                  "request than this cell's", subject=request.case_id,
                                  data={"logged": recorded,
                                        "cell": request.payload_digest()})], gate=GATE)
        name, arguments, text = first_move_call(sample.messages)
        usage = getattr(sample.output, "usage", None)
        tokens = Usage(int(getattr(usage, "input_tokens", 0) or 0),
                       int(getattr(usage, "output_tokens", 0) or 0))
        calls = (ToolCall(name, arguments),) if name is not None and arguments is not None \
            else ()
        return Response(text=text or None, tool_calls=calls, usage=tokens)

    def describe(self) -> dict[str, Any]:
        """The run manifest's agent record: the log's digest and inspect's model."""
        return {"kind": "inspect_replay", "log": self._log, "model": self._model}


def log_classes(log: Any) -> dict[str, str]:
    """The move class inspect's run of the legality scorer recorded per sample."""
    out = {}
    for s in log.samples or []:
        for score in (s.scores or {}).values():
            out[str(s.id)] = str(score.explanation)
    return out


def import_study_log(path: Path, study: Path, stage: Path, binding: str, *, model: str,
                     route: str, authorization: str) -> dict[str, Any]:
    """Replay an inspect log of :func:`study_task` as a study run (module docstring)."""
    log = read_log(path)
    if getattr(log, "status", "success") != "success":
        raise Refusal([Reason("unfinished_log", f"the inspect run ended {log.status!r}",
                              subject=str(path))], gate=GATE)
    schedule = study_schedule(study, stage, binding, model=model, route=route)
    logged = (dict(getattr(log.eval, "metadata", None) or {}).get("rungbench_schedule")
              or dict(getattr(log.eval, "task_metadata", None) or {}).get("rungbench_schedule"))
    if logged != schedule.digest():
        raise Refusal([Reason("foreign_log", f"the log's task was exported from schedule "
                              f"{logged!r}, not {schedule.digest()!r}", subject=str(path),
                              data={"logged": logged, "schedule": schedule.digest()})],
                      gate=GATE)
    missing = [c.request.case_id for c in schedule
               if c.request.case_id not in {str(s.id) for s in log.samples or []}]
    if missing:
        raise Refusal([Reason("cells_missing", f"{len(missing)} cells have no sample",
                              subject=str(path), data={"examples": missing[:5]})], gate=GATE)
    agent = ReplayAgent(log, bytes_digest(path.read_bytes()))
    result = run_study(study, stage, binding, model=model, route=route, agent=agent,
                       authorization=authorization)
    return {**result, "log": str(path), "inspect_classes": _counts(log_classes(log))}


def _counts(classes: Mapping[str, str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in classes.values():
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))
