"""`rungbench causal ...` commands: validation of the exact causal oracle.

``rungbench causal validate`` prints seed 003's validation table (hand cases,
oracle vs the independent checker, back-door from the observed table,
witnesses, the checker again on categorical generated worlds); the last line
is ``ALL PASS`` or the list of failures, and the exit code is 0 only when every
check passes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.table import Table

from rungbench.cli import causal_ablations, causal_instrument
from rungbench.cli._common import (
    EXIT_ERROR,
    JSON_OPTION,
    SEED_MAX,
    command_group,
    console,
    emit_json,
    run,
)

if TYPE_CHECKING:  # the oracle stack (networkx) is imported only when a command runs
    from rungbench.causal.checks.validate import ValidationReport

app = command_group(
    "Causal reasoning (seed 003): validate the exact oracle; build, run, score, audit the "
    "benchmark.")


def report_table(report: ValidationReport) -> Table:
    table = Table(title=f"causal oracle validation ({report.seconds:.2f} s)")
    table.add_column("check", style="bold")
    table.add_column("method")
    table.add_column("result")
    table.add_column("pass")
    for row in report.rows:
        table.add_row(row.check, row.method, row.result,
                      "[green]yes[/]" if row.passed else "[bold red]NO[/]")
    return table


def verdict_line(report: ValidationReport) -> str:
    return "ALL PASS" if report.all_pass else "FAILED: " + "; ".join(report.failures)


def _validate(draws: int, seed: int, categorical_worlds: int,
              as_json: bool) -> ValidationReport:
    from rungbench.causal.checks.validate import run_validation

    if as_json:
        return run_validation(draws=draws, seed=seed, categorical_worlds=categorical_worlds)
    with console.status("validating the causal oracle…"):
        return run_validation(draws=draws, seed=seed, categorical_worlds=categorical_worlds)


@app.command("validate")
def validate(
    draws: int = typer.Option(200_000, "--draws", help="Monte Carlo draws per world."),
    seed: int = typer.Option(3, "--seed", min=0, max=SEED_MAX,
                             help="Seed of the validation worlds and draws."),
    categorical_worlds: int = typer.Option(
        48, "--categorical-worlds", min=1, max=1000,
        help="Categorical generated worlds (2-4 named states per variable) the checker "
             "row covers."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Print the seed's validation table; exit 0 only when every check passes."""
    report = run(lambda: _validate(draws, seed, categorical_worlds, as_json), as_json=as_json)
    if as_json:
        emit_json(report.to_json())
    else:
        console.print(report_table(report))
        console.print(verdict_line(report), highlight=False)
    if not report.all_pass:
        raise typer.Exit(EXIT_ERROR)


causal_instrument.register(app)
causal_ablations.register(app)
