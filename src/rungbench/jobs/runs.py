"""Runs of a SCHEDULE: the schedule a source names, the agent a spec names, start or resume.

What a SCHEDULE may be is whatever a registered task reads (:func:`rungbench.execute.tasks.
schedule_from`: a Lichess puzzle CSV, a FEN JSONL, a built causal bench directory, ...);
the agent is an :class:`~rungbench.agents.spec.AgentSpec` (an endpoint, or a task's
planted or reference agent). The task registry supplies the answer validator and the step
after a run, so nothing here names a domain (docs/ARCHITECTURE.md, "The task seam"). The
domains and the openai SDK load inside each function, so that importing this module (and
``rungbench --help``) stays fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rungbench.errors import InputError, Reason, Refusal

if TYPE_CHECKING:
    from collections.abc import Mapping
    from concurrent.futures import Executor

    from rungbench.agents.spec import AgentSpec
    from rungbench.execute.policy import RetryPolicy
    from rungbench.execute.schedule import Schedule


def build_schedule(source: Path, *, limit: int | None = None, offset: int = 0) -> Schedule:
    """Build the frozen schedule a SCHEDULE argument names (the task that reads it)."""
    from rungbench.execute.tasks import schedule_from

    return schedule_from(source, limit=limit, offset=offset)


def start_or_resume(
    *,
    source: Path | None,
    out: Path,
    resume: str | None,
    spec: AgentSpec,
    limit: int | None = None,
    concurrency: int = 4,
    policy: RetryPolicy | None = None,
    max_cells: int | None = None,
    quiet: bool = False,
    executor: Executor | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Create (or reopen) a run, execute its pending cells with the agent ``spec`` names,
    verify it; return the summary.

    ``executor`` (e.g. Ray tasks) runs the agent calls, each worker rebuilding the agent
    from its spec; the log stays on this driver. ``environ`` (default the process
    environment) holds an endpoint's key variable.
    """
    from functools import partial

    from rungbench.execute.executors import WorkerAgent
    from rungbench.execute.progress import run_progress
    from rungbench.execute.runner import create_run, describe_agent, execute_run, load_run
    from rungbench.execute.tasks import build_agent, open_agent, task_named

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
        raise InputError("give a schedule source, or a run to resume", field="schedule")
    task = task_named(schedule.task)
    bench = source if source is not None and source.is_dir() else None
    with open_agent(spec, schedule.task, source=bench, environ=environ) as built:
        agent = built if executor is None else WorkerAgent(
            built, partial(build_agent, spec, schedule.task, bench))
        if run_dir is None:
            run_dir = create_run(out, schedule, describe_agent(agent), policy=policy)
        with run_progress("cells", quiet=quiet) as hook:
            summary = execute_run(run_dir, agent, validator=task.validator,
                                  toolbox=task.toolbox, concurrency=concurrency, progress=hook,
                                  max_cells=max_cells, executor=executor)
    return finish_run(run_dir, summary.to_json(), schedule.task)


def finish_run(run_dir: Path, summary: dict[str, Any], task: str) -> dict[str, Any]:
    """A session's summary with the run's verification and its task's after-run step."""
    from rungbench.execute.runner import verify_run
    from rungbench.execute.tasks import after_run, validator_for

    check = verify_run(run_dir, validator_for(task))
    return {**summary, "task": task, "complete": check.ok, "cells_final": check.final,
            "problems": list(check.problems), **after_run(task, run_dir)}


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
            raise InputError("the output folder is a file", path=str(folder), field="out")


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
            raise InputError(f"a parameter is KEY=VALUE, got {item!r}", field="params")
        problem = owned_key_problem(key)
        if problem is not None:
            raise InputError(f"parameter {problem}", field="params")
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
        raise InputError(f"waits are comma-separated seconds, got {text!r}",
                         field="backoff") from exc
