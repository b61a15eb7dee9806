"""``rungbench run``: execute a frozen schedule of cells against an agent, resumably.

What a SCHEDULE may be, and how the agent is chosen, is :mod:`rungbench.jobs.runs`;
this module parses the options, calls :func:`~rungbench.jobs.runs.start_or_resume` and
prints the summary.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table

from rungbench.agents.protocol import base_url_problem
from rungbench.cli._common import (
    EXIT_ERROR,
    JSON_OPTION,
    SEED_MAX,
    console,
    emit_json,
    err_console,
)
from rungbench.cli._common import run as guarded
from rungbench.cli._executor import EXECUTOR_OPTION, RAY_ADDRESS_OPTION, executor_kind
from rungbench.errors import InputError
from rungbench.jobs.runs import DEFAULT_API_KEY_ENV, incomplete_message, parse_params, seconds

if TYPE_CHECKING:
    from rungbench.agents.protocol import Agent

# ---------------------------------------------------------------- option checks (exit 2)


def check_params(items: list[str]) -> list[str]:
    """``--param`` callback: KEY=VALUE items whose keys the frozen request does not own."""
    try:
        parse_params(items)
    except InputError as exc:
        raise typer.BadParameter(str(exc).removesuffix(" (field '--param')")) from None
    return items


def check_base_url(value: str | None) -> str | None:
    """``--base-url`` callback: only http:// and https:// URLs with a host."""
    problem = base_url_problem(value) if value is not None else None
    if problem is not None:
        raise typer.BadParameter(problem)
    return value


def check_backoff(value: str) -> str:
    """``--backoff`` callback: comma-separated non-negative, finite seconds."""
    try:
        waits = seconds(value)
    except InputError as exc:
        raise typer.BadParameter(str(exc)) from None
    if any(not (math.isfinite(w) and w >= 0) for w in waits):
        raise typer.BadParameter(f"waits must be finite and non-negative, got {value!r}")
    return value


def positive_seconds(value: float) -> float:
    """``--timeout`` callback: a finite number of seconds above zero."""
    if not (math.isfinite(value) and value > 0):
        raise typer.BadParameter(f"must be a finite number of seconds above 0, got {value!r}")
    return value


def price(value: float) -> float:
    """Price callback: a finite, non-negative number of US dollars."""
    if not (math.isfinite(value) and value >= 0):
        raise typer.BadParameter(f"must be a finite price of at least 0, got {value!r}")
    return value


# ---------------------------------------------------------------- the command


SCHEDULE_ARGUMENT = typer.Argument(
    None, help="Puzzle CSV, FEN JSONL, or causal bench directory (omit with --resume)."
)
OUT_OPTION = typer.Option(Path("rungbench-runs"), "--out", help="Where runs/ is written.")
PARAM_OPTION = typer.Option(
    [], "--param", callback=check_params,
    help="Extra request field KEY=JSON (e.g. temperature=0); repeatable. Keys the frozen "
    "request owns (messages, tools, tool_choice, model) are refused.",
)
BASE_URL_OPTION = typer.Option(None, "--base-url", callback=check_base_url,
                               help="OpenAI-compatible base URL (http:// or https://).")
BACKOFF_HELP = "Waits before attempt 2, 3, … in seconds (last repeats)."
TIMEOUT_HELP = "Seconds per request."


def run(
    schedule: Path | None = SCHEDULE_ARGUMENT,
    agent: str | None = typer.Option(None, "--agent", help="reference:NAME"),
    model: str | None = typer.Option(None, "--model", help="openai:MODEL"),
    base_url: str | None = BASE_URL_OPTION,
    api_key_env: str = typer.Option(
        DEFAULT_API_KEY_ENV, "--api-key-env", help="Environment variable holding the API key."
    ),
    concurrency: int = typer.Option(4, "--concurrency", min=1, help="Parallel requests."),
    client_processes: int = typer.Option(
        0, "--client-processes", min=0, max=16,
        help="Helper processes that send --model's HTTP calls (0: this process). For a fast "
        "endpoint at high concurrency: the SDK's work leaves the runner's interpreter lock.",
    ),
    resume: str | None = typer.Option(None, "--resume", help="Run id or run directory."),
    out: Path = OUT_OPTION,
    limit: int | None = typer.Option(None, "--limit", min=1, help="Use the first N cells."),
    max_cells: int | None = typer.Option(
        None, "--max-cells", min=1, help="Stop after N cells this session (resume later)."
    ),
    max_attempts: int = typer.Option(
        4, "--max-attempts", min=1,
        help="Attempts per cell in each session (fixed when the run is created); a cell still "
        "failing has no final outcome and is retried by --resume.",
    ),
    backoff: str = typer.Option(
        "2,8,30", "--backoff", callback=check_backoff,
        help=BACKOFF_HELP.replace(").", "; fixed at creation)."),
    ),
    timeout: float = typer.Option(120.0, "--timeout", callback=positive_seconds,
                                  help=TIMEOUT_HELP),
    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX,
                            help="Seed of randomized reference agents."),
    nodes: int = typer.Option(20_000, "--nodes", help="Node budget of reference:engine."),
    param: list[str] = PARAM_OPTION,
    usd_in: float = typer.Option(0.0, "--usd-per-mtok-in", callback=price,
                                 help="Price per 1M prompt tokens."),
    usd_out: float = typer.Option(0.0, "--usd-per-mtok-out", callback=price,
                                  help="Price per 1M output tokens."),
    executor: str = EXECUTOR_OPTION,
    ray_address: str | None = RAY_ADDRESS_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Execute a frozen schedule of cells against an agent; resumable and crash-safe."""
    from functools import partial

    from rungbench.agents.openai_provider import Pricing
    from rungbench.execute.executors import WorkerAgent, executor_for
    from rungbench.execute.policy import RetryPolicy
    from rungbench.jobs.runs import build_agent, start_or_resume

    kind = executor_kind(executor, ray_address)
    options: dict[str, Any] = {
        "agent": agent, "model": model, "base_url": base_url, "api_key_env": api_key_env,
        "timeout_s": timeout, "seed": seed, "nodes": nodes, "pricing": Pricing(usd_in, usd_out),
        "params": parse_params(param), "client_processes": client_processes,
    }

    def make_agent(task: str, causal_dir: Path | None) -> Agent:
        recipe = partial(build_agent, task, causal_dir=causal_dir, **options)
        built = recipe()
        return built if kind == "local" else WorkerAgent(built, recipe)  # rebuilt in workers

    def action() -> dict[str, Any]:
        with executor_for(kind, address=ray_address, workers=concurrency) as pool:
            return start_or_resume(
                source=schedule,
                out=out,
                resume=resume,
                make_agent=make_agent,
                limit=limit,
                concurrency=concurrency,
                policy=RetryPolicy(max_attempts=max_attempts, backoff_s=seconds(backoff)),
                max_cells=max_cells,
                quiet=as_json,
                executor=pool,
            )

    summary = guarded(action, as_json=as_json)
    complete = bool(summary["complete"])
    if as_json:
        emit_json(summary if complete else {**summary, "ok": False, "error": "incomplete",
                                            "message": incomplete_message(summary)})
    else:
        print_summary(summary)
        if not complete:
            err_console.print(f"[bold red]error[/] {escape(incomplete_message(summary))}",
                              highlight=False, soft_wrap=True)
    if not complete:
        raise typer.Exit(EXIT_ERROR)


def print_summary(summary: Mapping[str, Any]) -> None:
    """Print a run summary: final outcomes, cells without one, throughput and cost."""
    table = Table(title=f"run {summary['run_id']} (session {summary['session']})")
    table.add_column("final outcome")
    table.add_column("cells", justify="right")
    for outcome, count in sorted(summary["outcomes"].items()):
        table.add_row(outcome, str(count))
    for outcome, count in sorted(summary.get("unresolved_outcomes", {}).items()):
        table.add_row(f"none yet (last {outcome})", str(count))
    console.print(table)
    console.print(
        f"{summary['cells_final']}/{summary['cells']} cells final · sent {summary['sent']} · "
        f"skipped {summary['skipped']} · {summary['cells_per_s']} cells/s · "
        f"{summary['tokens_in']}+{summary['tokens_out']} tokens · ${summary['cost_usd']}"
    )
    console.print(f"run directory: {summary['run_dir']}")
