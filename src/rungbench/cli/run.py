"""``rungbench run``: execute a frozen schedule of cells against an agent, resumably.

SCHEDULE is one of:

* a Lichess puzzle CSV (``PuzzleId,FEN,Moves,…``): one move-choice cell per puzzle, the
  position after the opponent's setup move, the solution's first move as ``best_move``;
* a JSONL of positions (``{"fen": …, "id"?: …, "best_move"?: …}`` per line);
* a built causal benchmark directory (``DIR/public/*.jsonl`` public_case records): one
  cell per case, answered through a ``submit_answer`` tool with the agent_response fields
  of docs/CONTRACTS.md §3.

The agent is ``--agent reference:NAME`` or ``--model openai:MODEL --base-url URL``.

Schedules and agents come from the domains (:mod:`rungbench.chess.studies.move_choice`,
:mod:`rungbench.causal.bench.requests`); this module only picks the domain a SCHEDULE names
(chess and causal never import each other, so the choice between them is made here)
and hands the schedule to :mod:`rungbench.execute.runner`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from rungbench.cli._common import JSON_OPTION, console, emit_json
from rungbench.cli._common import run as guarded
from rungbench.errors import InputError, Reason, Refusal

if TYPE_CHECKING:  # the domains, the runner and the openai SDK load when a command runs
    from rungbench.agents.openai_provider import Pricing
    from rungbench.agents.outcomes import Validator
    from rungbench.agents.protocol import Agent
    from rungbench.execute.policy import RetryPolicy
    from rungbench.execute.runner import RunSummary
    from rungbench.execute.schedule import Schedule

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
"""Default ``--api-key-env``; equals :data:`rungbench.agents.openai_provider.DEFAULT_API_KEY_ENV`
(repeated here so that ``rungbench --help`` does not import the openai SDK)."""

# ---------------------------------------------------------------- building blocks


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
) -> Agent:
    """Return the agent named by ``--agent reference:NAME`` or ``--model openai:MODEL``."""
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
        )
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
) -> dict[str, Any]:
    """Create (or reopen) a run, execute its pending cells, verify it; return the summary."""
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
            )
    finally:
        close_agent(agent)
    check = verify_run(run_dir)
    result = {
        **summary.to_json(),
        "task": schedule.task,
        "complete": check.ok,
        "cells_final": check.final,
        "problems": list(check.problems),
    }
    if schedule.task == CAUSAL_TASK and check.ok:
        result["agent_responses"] = write_agent_responses(run_dir)
    return result


def _resolve_run(out: Path, resume: str) -> Path:
    for candidate in (Path(resume), out / "runs" / resume):
        if (candidate / "manifest.json").exists():
            return candidate
    raise InputError(f"no run {resume!r} (looked for a run directory or {out}/runs/{resume})")


# ---------------------------------------------------------------- the command


SCHEDULE_ARGUMENT = typer.Argument(
    None, help="Puzzle CSV, FEN JSONL, or causal bench directory (omit with --resume)."
)
OUT_OPTION = typer.Option(Path("rungbench-runs"), "--out", help="Where runs/ is written.")
PARAM_OPTION = typer.Option(
    [], "--param", help="Extra request field KEY=JSON (e.g. temperature=0); repeatable."
)


def run(
    schedule: Path | None = SCHEDULE_ARGUMENT,
    agent: str | None = typer.Option(None, "--agent", help="reference:NAME"),
    model: str | None = typer.Option(None, "--model", help="openai:MODEL"),
    base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible base URL."),
    api_key_env: str = typer.Option(
        DEFAULT_API_KEY_ENV, "--api-key-env", help="Environment variable holding the API key."
    ),
    concurrency: int = typer.Option(4, "--concurrency", min=1, help="Parallel requests."),
    resume: str | None = typer.Option(None, "--resume", help="Run id or run directory."),
    out: Path = OUT_OPTION,
    limit: int | None = typer.Option(None, "--limit", min=1, help="Use the first N cells."),
    max_cells: int | None = typer.Option(
        None, "--max-cells", min=1, help="Stop after N cells this session (resume later)."
    ),
    max_attempts: int = typer.Option(
        4, "--max-attempts", min=1, help="Attempts per cell (fixed when the run is created)."
    ),
    backoff: str = typer.Option(
        "2,8,30",
        "--backoff",
        help="Waits before attempt 2, 3, … in seconds (last repeats; fixed at creation).",
    ),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds per request."),
    seed: int = typer.Option(0, "--seed", help="Seed of randomized reference agents."),
    nodes: int = typer.Option(20_000, "--nodes", help="Node budget of reference:engine."),
    param: list[str] = PARAM_OPTION,
    usd_in: float = typer.Option(0.0, "--usd-per-mtok-in", help="Price per 1M prompt tokens."),
    usd_out: float = typer.Option(0.0, "--usd-per-mtok-out", help="Price per 1M output tokens."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Execute a frozen schedule of cells against an agent; resumable and crash-safe."""
    from rungbench.agents.openai_provider import Pricing
    from rungbench.execute.policy import RetryPolicy


    def make_agent(task: str, causal_dir: Path | None) -> Agent:
        return build_agent(
            task,
            agent=agent,
            model=model,
            base_url=base_url,
            api_key_env=api_key_env,
            timeout_s=timeout,
            seed=seed,
            nodes=nodes,
            pricing=Pricing(usd_in, usd_out),
            params=parse_params(param),
            causal_dir=causal_dir,
        )

    summary = guarded(
        lambda: start_or_resume(
            source=schedule,
            out=out,
            resume=resume,
            make_agent=make_agent,
            limit=limit,
            concurrency=concurrency,
            policy=RetryPolicy(max_attempts=max_attempts, backoff_s=seconds(backoff)),
            max_cells=max_cells,
            quiet=as_json,
        ),
        as_json=as_json,
    )
    if as_json:
        emit_json(summary)
    else:
        _print_summary(summary)


def parse_params(items: list[str]) -> dict[str, Any]:
    """Parse ``KEY=JSON`` items (a bare word value is taken as a string)."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise InputError(f"--param must be KEY=VALUE, got {item!r}", field="param")
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


def _print_summary(summary: Mapping[str, Any]) -> None:
    table = Table(title=f"run {summary['run_id']} (session {summary['session']})")
    table.add_column("final outcome")
    table.add_column("cells", justify="right")
    for outcome, count in sorted(summary["outcomes"].items()):
        table.add_row(outcome, str(count))
    console.print(table)
    console.print(
        f"{summary['cells_final']}/{summary['cells']} cells final · sent {summary['sent']} · "
        f"skipped {summary['skipped']} · {summary['cells_per_s']} cells/s · "
        f"{summary['tokens_in']}+{summary['tokens_out']} tokens · ${summary['cost_usd']}"
    )
    console.print(f"run directory: {summary['run_dir']}")


# ---------------------------------------------------------------- demo


def demo_stage(workdir: Path, as_json: bool) -> dict[str, Any]:
    """Run 12 puzzles through the real openai client against a loopback server, resume once."""
    from rungbench.agents.loopback import Fault, LoopbackServer
    from rungbench.agents.openai_provider import OpenAIProvider
    from rungbench.chess import reference_agents as chess_agents
    from rungbench.chess.studies.move_choice import puzzle_schedule
    from rungbench.execute.policy import RetryPolicy
    from rungbench.execute.runner import create_run, describe_agent, execute_run, verify_run

    schedule = puzzle_schedule(_puzzles(), limit=12)
    key = "sk-demo-" + os.urandom(8).hex()
    digests = [c.request.payload_digest() for c in schedule]
    faults = {
        digests[1]: [Fault.RATE_LIMIT],
        digests[2]: [Fault.SERVER_ERROR],
        digests[3]: [Fault.GARBAGE_ARGUMENTS],
        digests[4]: [Fault.REFUSAL],
        digests[8]: [Fault.NOT_JSON],
    }
    engine = chess_agents.EngineAgent(nodes=2_000)
    try:
        with LoopbackServer(
            engine,
            api_key=key,
            requests=[c.request for c in schedule],
            faults=faults,
            retry_after_s=0.2,
        ) as server:
            provider = OpenAIProvider(
                "loopback-engine",
                base_url=server.base_url,
                api_key_env="RUNGBENCH_DEMO_KEY",
                timeout_s=10.0,
                environ={"RUNGBENCH_DEMO_KEY": key},
            )
            policy = RetryPolicy(max_attempts=3, backoff_s=(0.1,))
            run_dir = create_run(
                workdir / "run-demo", schedule, describe_agent(provider), policy=policy
            )
            first = execute_run(
                run_dir, provider, validator=chess_agents.validate_move, concurrency=4, max_cells=6
            )
            before = dict(server.counts)
            done_first = _final_cells(run_dir)
            second = execute_run(
                run_dir, provider, validator=chess_agents.validate_move, concurrency=4
            )
            provider.close()
        resent = sum(
            server.counts[c.request.payload_digest()] - before.get(c.request.payload_digest(), 0)
            for c in schedule
            if c.cell_id in done_first
        )
    finally:
        engine.close()
    check = verify_run(run_dir)
    leaked = [str(p) for p in run_dir.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    result = _demo_result(first, second, check.ok, resent, leaked, server.served)
    if not as_json:
        _print_summary({**second.to_json(), "cells_final": check.final})
        console.print(
            f"session 1 finalized {first.finalized} cells; resume finalized {second.finalized}; "
            f"completed cells re-sent: {resent}; key found in files: {len(leaked)}"
        )
    return result


def _demo_result(
    first: RunSummary,
    second: RunSummary,
    ok: bool,
    resent: int,
    leaked: list[str],
    served: list[tuple[str, str]],
) -> dict[str, Any]:
    return {
        "run_dir": second.run_dir,
        "cells": second.cells,
        "session1_finalized": first.finalized,
        "session2_finalized": second.finalized,
        "session2_skipped": second.skipped,
        "outcomes": second.outcomes,
        "http_requests": len(served),
        "faults_injected": sorted(v for _, v in served if v != "ok"),
        "every_cell_one_final": ok,
        "completed_cells_resent": resent,
        "api_key_in_files": len(leaked),
    }


def _final_cells(run_dir: Path) -> set[str]:
    from rungbench.execute.events import read_events

    return {str(e["cell"]) for e in read_events(run_dir / "events.jsonl") if e["kind"] == "final"}


def _puzzles() -> Path:
    from rungbench.evidence.paths import shared_data_dir

    path = shared_data_dir() / "lichess_puzzles" / "puzzles.csv"
    if not path.exists():
        raise InputError("bundled puzzle file is missing", path=str(path))
    return path
