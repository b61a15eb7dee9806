"""Runs of a SCHEDULE: the schedule a source names, the agent a name names, start or resume.

SCHEDULE is one of:

* a Lichess puzzle CSV (``PuzzleId,FEN,Moves,…``): one move-choice cell per puzzle, the
  position after the opponent's setup move, the solution's first move as ``best_move``;
* a JSONL of positions (``{"fen": …, "id"?: …, "best_move"?: …}`` per line);
* a built causal benchmark directory (``DIR/public/*.jsonl`` public_case records): one
  cell per case, answered through a ``submit_answer`` tool with the agent_response fields
  of docs/CONTRACTS.md §3.

The agent is ``reference:NAME`` or ``openai:MODEL`` with a base URL. Schedules and agents
come from the domains (:mod:`rungbench.chess.studies.move_choice`,
:mod:`rungbench.causal.bench.requests`); chess and causal never import each other, so the
choice between them is made here, above both, and the schedule goes to
:mod:`rungbench.execute.runner`. The domains and the openai SDK load inside each function,
so that importing this module (and ``rungbench --help``) stays fast.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rungbench.errors import InputError, Reason, Refusal

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from rungbench.agents.openai_provider import Pricing
    from rungbench.agents.outcomes import Validator
    from rungbench.agents.protocol import Agent
    from rungbench.execute.policy import RetryPolicy
    from rungbench.execute.schedule import Schedule

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
"""Default ``--api-key-env``; equals :data:`rungbench.agents.openai_provider.DEFAULT_API_KEY_ENV`
(repeated here so that ``rungbench --help`` does not import the openai SDK)."""

def validator_for(task: str) -> Validator | None:
    """Return the domain validator of ``task`` cells (None for a task without one)."""
    from rungbench.causal.bench.requests import CAUSAL_TASK, validate_causal_answer
    from rungbench.chess import reference_agents as chess_agents

    validators: dict[str, Validator] = {
        chess_agents.TASK: chess_agents.validate_move,
        CAUSAL_TASK: validate_causal_answer,
    }
    return validators.get(task)


def build_schedule(source: Path, *, limit: int | None = None, offset: int = 0) -> Schedule:
    """Build the frozen schedule a SCHEDULE argument names (see the module docstring)."""
    from rungbench.causal.bench.requests import causal_schedule
    from rungbench.chess.studies.move_choice import fen_schedule, puzzle_schedule

    if source.is_dir():
        if not (source / "public").is_dir():
            raise InputError(
                "a causal benchmark directory needs a public/ folder", path=str(source)
            )
        return causal_schedule(source, limit=limit, offset=offset)
    if not source.exists():
        raise InputError("schedule source does not exist", path=str(source))
    if source.suffix == ".csv":
        return puzzle_schedule(source, limit=limit, offset=offset)
    if source.suffix == ".jsonl":
        return fen_schedule(source, limit=limit, offset=offset)
    raise InputError(
        "unknown schedule source: expected a puzzle .csv, a FEN .jsonl or a causal bench directory",
        path=str(source),
    )


def build_agent(
    task: str,
    *,
    agent: str | None,
    model: str | None,
    base_url: str | None,
    api_key_env: str = DEFAULT_API_KEY_ENV,
    timeout_s: float = 120.0,
    seed: int = 0,
    nodes: int = 20_000,
    pricing: Pricing | None = None,
    params: dict[str, Any] | None = None,
    causal_dir: Path | None = None,
    client_processes: int = 0,
) -> Agent:
    """Return the agent named by ``--agent reference:NAME`` or ``--model openai:MODEL``
    (its calls sent by ``client_processes`` helper processes, a model's only)."""
    from rungbench.agents.openai_provider import OpenAIProvider
    from rungbench.causal.bench.requests import CAUSAL_TASK, reference_case_agent
    from rungbench.chess.reference_agents import reference_move_agent

    if (agent is None) == (model is None):
        raise InputError("give exactly one of --agent reference:NAME or --model openai:MODEL")
    if model is not None:
        kind, _, name = model.partition(":")
        if kind != "openai" or not name:
            raise InputError(f"--model must be openai:MODEL, got {model!r}", field="model")
        if not base_url:
            raise InputError("--model needs --base-url", field="base_url")
        return OpenAIProvider(
            name,
            base_url=base_url,
            api_key_env=api_key_env,
            timeout_s=timeout_s,
            pricing=pricing,
            params=params,
            client_processes=client_processes,
        )
    if client_processes:
        raise InputError("--client-processes applies to --model only (a reference agent "
                         "answers in this process)", field="client_processes")
    kind, _, name = str(agent).partition(":")
    if kind != "reference":
        raise InputError(f"--agent must be reference:NAME, got {agent!r}", field="agent")
    if task == CAUSAL_TASK:
        return reference_case_agent(name, causal_dir)
    return reference_move_agent(name, seed=seed, nodes=nodes)


def start_or_resume(
    *,
    source: Path | None,
    out: Path,
    resume: str | None,
    make_agent: Callable[[str, Path | None], Agent],
    limit: int | None = None,
    concurrency: int = 4,
    policy: RetryPolicy | None = None,
    max_cells: int | None = None,
    quiet: bool = False,
    executor: Executor | None = None,
) -> dict[str, Any]:
    """Create (or reopen) a run, execute its pending cells, verify it; return the summary.

    ``executor`` (e.g. Ray tasks) runs the agent calls; the log stays on this driver."""
    from rungbench.agents.protocol import close_agent
    from rungbench.causal.bench.requests import CAUSAL_TASK, write_agent_responses
    from rungbench.execute.progress import run_progress
    from rungbench.execute.runner import (
        create_run,
        describe_agent,
        execute_run,
        load_run,
        verify_run,
    )

    check_out(out)
    run_dir = _resolve_run(out, resume) if resume else None
    fresh = build_schedule(source, limit=limit) if source is not None else None
    if run_dir is not None:
        _, schedule = load_run(run_dir)
        if fresh is not None and fresh.digest() != schedule.digest():
            raise Refusal(
                [
                    Reason(
                        "different",
                        "SCHEDULE does not rebuild the run's frozen schedule",
                        subject="schedule",
                        data={"frozen": schedule.digest(), "rebuilt": fresh.digest()},
                    )
                ],
                gate="resume",
            )
    elif fresh is not None:
        schedule = fresh
    else:
        raise InputError("give a SCHEDULE, or --resume RUN")
    causal_dir = source if source is not None and source.is_dir() else None
    agent = make_agent(schedule.task, causal_dir)
    try:
        if run_dir is None:
            run_dir = create_run(out, schedule, describe_agent(agent), policy=policy)
        with run_progress("cells", quiet=quiet) as hook:
            summary = execute_run(
                run_dir,
                agent,
                validator=validator_for(schedule.task),
                concurrency=concurrency,
                progress=hook,
                max_cells=max_cells,
                executor=executor,
            )
    finally:
        close_agent(agent)
    check = verify_run(run_dir, validator_for(schedule.task))
    result = {
        **summary.to_json(),
        "task": schedule.task,
        "complete": check.ok,
        "cells_final": check.final,
        "problems": list(check.problems),
    }
    if schedule.task == CAUSAL_TASK:
        counts = write_agent_responses(run_dir)
        # cells without a final outcome have no response either: the scorer lists them missing
        result["agent_responses"] = {**counts, "missing": counts["missing"] + summary.unresolved}
    return result


def incomplete_message(summary: dict[str, Any]) -> str:
    """The one line saying how many cells of a run have no final outcome, and what to do."""
    missing = int(summary["cells"]) - int(summary["cells_final"])
    why = ", ".join(f"{n} {o}" for o, n in sorted(summary.get("unresolved_outcomes", {}).items()))
    return (f"run {summary['run_id']}: {missing} of {summary['cells']} cells have no final "
            f"outcome" + (f" (last: {why})" if why else "")
            + f"; resume with --resume {summary['run_id']}")


def check_out(out: Path) -> None:
    """Refuse an ``--out`` (or its ``runs/``) that is a file, naming the path."""
    for folder in (out, out / "runs"):
        if folder.exists() and not folder.is_dir():
            raise InputError("--out must be a folder, but a file is there", path=str(folder))


def _resolve_run(out: Path, resume: str) -> Path:
    from rungbench.execute.runner import TEMP_MARK, clear_leftovers

    for candidate in (Path(resume), out / "runs" / resume):
        if (candidate / "manifest.json").exists():
            return candidate
    runs = out / "runs"
    unfinished = sorted(runs.glob(f".{Path(resume).name}{TEMP_MARK}*")) if runs.is_dir() else []
    if unfinished:
        removed = clear_leftovers(runs)
        state = ("its creation was killed; the unfinished folder was removed, start it again"
                 if removed else "it is still being created by another process")
        raise InputError(f"no run {resume!r}: {state}", path=str(unfinished[0]))
    raise InputError(f"no run {resume!r} (looked for a run directory or {out}/runs/{resume})")



def parse_params(items: list[str]) -> dict[str, Any]:
    """Parse ``KEY=JSON`` items (a bare word value is taken as a string).

    A key the frozen request owns (:data:`~rungbench.agents.protocol.REQUEST_OWNED_KEYS`)
    is refused: it would replace the frozen prompt or tools on the wire.
    """
    from rungbench.agents.protocol import owned_key_problem

    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise InputError(f"--param must be KEY=VALUE, got {item!r}", field="--param")
        problem = owned_key_problem(key)
        if problem is not None:
            raise InputError(f"--param {problem}", field="--param")
        try:
            out[key] = json.loads(text)
        except json.JSONDecodeError:
            out[key] = text
    return out


def seconds(text: str) -> tuple[float, ...]:
    """Parse ``--backoff`` (comma-separated seconds) into the policy's waits."""
    try:
        return tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError as exc:
        raise InputError(f"--backoff must be comma-separated seconds, got {text!r}") from exc
