"""``rungbench run``: execute a frozen schedule of cells against an agent, resumably.

What a SCHEDULE may be, and how the agent is chosen, is :mod:`rungbench.jobs.runs`;
this module parses the options, calls :func:`~rungbench.jobs.runs.start_or_resume` and
prints the summary.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from rungbench.cli._common import JSON_OPTION, console, emit_json
from rungbench.cli._common import run as guarded
from rungbench.jobs.runs import DEFAULT_API_KEY_ENV

if TYPE_CHECKING:
    from rungbench.agents.protocol import Agent

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
    from rungbench.jobs.runs import build_agent, parse_params, seconds, start_or_resume


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
        print_summary(summary)


def print_summary(summary: Mapping[str, Any]) -> None:
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
