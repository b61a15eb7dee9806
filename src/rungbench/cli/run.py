"""``rungbench run``: execute a frozen schedule of cells against an agent, resumably.

What a SCHEDULE may be, and how the agent is chosen, is :mod:`rungbench.jobs.runs`;
this module parses the options, calls :func:`~rungbench.jobs.runs.start_or_resume` and
prints the summary.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from rungbench.cli._agents import (
    BackoffOpt,
    BaseUrlOpt,
    KeyEnvOpt,
    LabelOpt,
    MaxAttemptsOpt,
    ModelOpt,
    ModelsOpt,
    NoKeyOpt,
    ParamOpt,
    PriceInOpt,
    PriceOutOpt,
    ProcessesOpt,
    StopAfterOpt,
    TimeoutOpt,
    agent_spec,
    incomplete_message,
    retry_policy,
)
from rungbench.cli._common import (
    EXIT_ERROR,
    JSON_OPTION,
    SEED_MAX,
    console,
    emit_json,
    err_console,
    interruptible,
    resume_command,
)
from rungbench.cli._executor import EXECUTOR_OPTION, RAY_ADDRESS_OPTION, executor_kind

SCHEDULE_ARGUMENT = typer.Argument(
    None, help="Puzzle CSV, FEN JSONL, or causal bench directory (omit with --resume)."
)
OUT_OPTION = typer.Option(Path("rungbench-runs"), "--out", help="Where runs/ is written.")


def run(
    schedule: Path | None = SCHEDULE_ARGUMENT,
    model: ModelOpt = None,
    models: ModelsOpt = None,
    base_url: BaseUrlOpt = None,
    api_key_env: KeyEnvOpt = None,
    no_api_key: NoKeyOpt = False,
    label: LabelOpt = None,
    concurrency: int = typer.Option(4, "--concurrency", min=1, help="Parallel requests."),
    client_processes: ProcessesOpt = 0,
    resume: str | None = typer.Option(None, "--resume", help="Run id or run directory."),
    out: Path = OUT_OPTION,
    limit: int | None = typer.Option(None, "--limit", min=1, help="Use the first N cells."),
    max_cells: int | None = typer.Option(
        None, "--max-cells", min=1, help="Stop after N cells this session (resume later)."
    ),
    max_attempts: MaxAttemptsOpt = 4,
    backoff: BackoffOpt = "2,8,30",
    stop_after: StopAfterOpt = None,
    timeout: TimeoutOpt = 120.0,
    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX,
                            help="Seed of randomized reference agents."),
    nodes: int = typer.Option(20_000, "--nodes", min=1, help="Node budget of reference:engine."),
    param: ParamOpt = None,
    usd_in: PriceInOpt = 0.0,
    usd_out: PriceOutOpt = 0.0,
    executor: str = EXECUTOR_OPTION,
    ray_address: str | None = RAY_ADDRESS_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Execute a frozen schedule of cells against an agent; resumable and crash-safe."""
    from rungbench.execute.executors import executor_for
    from rungbench.jobs.runs import start_or_resume

    kind = executor_kind(executor, ray_address)
    spec = agent_spec(model, models, base_url=base_url, api_key_env=api_key_env,
                      no_api_key=no_api_key, params=param, client_processes=client_processes,
                      timeout=timeout, usd_in=usd_in, usd_out=usd_out, label=label, seed=seed,
                      reference_params={"nodes": nodes}, as_json=as_json)

    def action() -> dict[str, Any]:
        with executor_for(kind, address=ray_address, workers=concurrency) as pool:
            return start_or_resume(
                source=schedule,
                out=out,
                resume=resume,
                spec=spec,
                limit=limit,
                concurrency=concurrency,
                policy=retry_policy(max_attempts=max_attempts, backoff=backoff,
                                    stop_after=stop_after),
                max_cells=max_cells,
                quiet=as_json,
                executor=pool,
            )

    summary = interruptible(action, as_json=as_json, option="--resume")
    complete = bool(summary["complete"])
    message = incomplete_message(summary, spec, resume_command("--resume", summary["run_id"]))
    if as_json:
        emit_json(summary if complete else {**summary, "ok": False, "error": "incomplete",
                                            "message": message})
    else:
        print_summary(summary)
        if not complete:
            err_console.print(f"[bold red]error[/] {escape(message)}",
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
