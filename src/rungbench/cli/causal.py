"""`rungbench causal ...` commands: validation of the exact causal oracle.

``rungbench causal validate`` prints seed 003's validation table (hand cases,
oracle vs the independent checker, back-door from the observed table,
witnesses); the last line is ``ALL PASS`` or the list of failures, and the exit
code is 0 only when every check passes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from rungbench.cli._common import EXIT_ERROR, JSON_OPTION, console, emit_json, run
from rungbench.errors import RungbenchError

if TYPE_CHECKING:  # the oracle stack (networkx) is imported only when a command runs
    from rungbench.causal.checks.validate import ValidationReport

app = typer.Typer(help="causal commands.", no_args_is_help=True)


def _report_table(report: ValidationReport) -> Table:
    table = Table(title=f"causal oracle validation ({report.seconds:.2f} s)")
    table.add_column("check", style="bold")
    table.add_column("method")
    table.add_column("result")
    table.add_column("pass")
    for row in report.rows:
        table.add_row(row.check, row.method, row.result,
                      "[green]yes[/]" if row.passed else "[bold red]NO[/]")
    return table


def _verdict_line(report: ValidationReport) -> str:
    return "ALL PASS" if report.all_pass else "FAILED: " + "; ".join(report.failures)


def _validate(draws: int, seed: int, as_json: bool) -> ValidationReport:
    from rungbench.causal.checks.validate import run_validation

    if as_json:
        return run_validation(draws=draws, seed=seed)
    with console.status("validating the causal oracle…"):
        return run_validation(draws=draws, seed=seed)


@app.command("validate")
def validate(
    draws: int = typer.Option(200_000, "--draws", help="Monte Carlo draws per world."),
    seed: int = typer.Option(3, "--seed", help="Seed of the validation worlds and draws."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Print the seed's validation table; exit 0 only when every check passes."""
    report = run(lambda: _validate(draws, seed, as_json), as_json=as_json)
    if as_json:
        emit_json(report.to_json())
    else:
        console.print(_report_table(report))
        console.print(_verdict_line(report), highlight=False)
    if not report.all_pass:
        raise typer.Exit(EXIT_ERROR)


def demo_stage(workdir: Path, as_json: bool) -> dict[str, Any]:
    """Run the full validation (≈ 2–3 s); write it to ``causal_validation.json``.

    Raises RungbenchError when a check fails.
    """
    report = _validate(200_000, 3, as_json)
    out = workdir / "causal_validation.json"
    out.write_text(json.dumps(report.to_json(), indent=2, sort_keys=True) + "\n")
    if not as_json:
        console.print(_report_table(report))
        console.print(_verdict_line(report), highlight=False)
    if not report.all_pass:
        raise RungbenchError("causal validation failed: " + "; ".join(report.failures))
    return {"validation": report.to_json(), "written": str(out)}
