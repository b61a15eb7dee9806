"""`rungbench stats ...` commands: binomial intervals, MDE envelope, McNemar sample size.

Each command parses, calls one ``rungbench.stats`` function and prints a Rich
table, or one JSON document under ``--json``. Bad input exits 1 with one line.
"""

from __future__ import annotations

import typer
from rich.table import Table

from rungbench.cli._common import JSON_OPTION, console, emit_json, run
from rungbench.stats.intervals import binomial_intervals
from rungbench.stats.power import mcnemar_sample_size, mde
from rungbench.stats.seeds import SeedFigure, seed_figure_list

app = typer.Typer(
    help="Intervals, multiplicity-aware MDE and McNemar sample size.", no_args_is_help=True
)

ALPHA_OPTION = typer.Option(0.05, "--alpha", help="Two-sided error rate.")
POWER_OPTION = typer.Option(0.8, "--power", help="Target power.")


def _table(title: str, rows: list[tuple[str, str]]) -> Table:
    table = Table(title=title, show_header=False)
    table.add_column("quantity", style="bold")
    table.add_column("value", justify="right")
    for name, value in rows:
        table.add_row(name, value)
    return table


@app.command("binom")
def binom(
    k: int = typer.Argument(..., help="Successes."),
    n: int = typer.Argument(..., help="Trials."),
    alpha: float = ALPHA_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Clopper–Pearson and Wilson intervals for K successes in N trials."""
    result = run(lambda: binomial_intervals(k, n, alpha), as_json=as_json)
    if as_json:
        emit_json(result.to_json())
        return
    cp_low, cp_high = result.clopper_pearson
    w_low, w_high = result.wilson
    console.print(_table(f"{k}/{n}, {100 * (1 - alpha):g}% two-sided", [
        ("k/n", f"{result.proportion:.4f}"),
        ("Clopper–Pearson", f"{cp_low:.4f} – {cp_high:.4f}"),
        ("Wilson", f"{w_low:.4f} – {w_high:.4f}"),
    ]))


@app.command("mde")
def mde_command(
    n: int = typer.Option(..., "--n", help="Paired units (e.g. held-out positions)."),
    sd: float = typer.Option(..., "--sd", help="SD of the paired differences."),
    tests: int = typer.Option(..., "--tests", help="Tests in the Holm-controlled family."),
    power: float = POWER_OPTION,
    alpha: float = ALPHA_OPTION,
    clusters: int | None = typer.Option(
        None, "--clusters", help="Independent clusters; replaces N as the denominator."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Normal-approximation MDE at Holm's first-step alpha (seed 000)."""
    result = run(
        lambda: mde(n, sd, tests=tests, power=power, alpha=alpha, clusters=clusters),
        as_json=as_json,
    )
    if as_json:
        emit_json(result.to_json())
        return
    console.print(_table("minimum detectable effect", [
        ("MDE", f"{result.mde:.4f}"),
        ("denominator", f"{result.denominator} ({'clusters' if clusters else 'n'})"),
        ("alpha per test", f"{result.alpha_per_test:.5g} = {alpha:g}/{tests}"),
        ("z_(1-alpha'/2) + z_power", f"{result.z_alpha:.4f} + {result.z_power:.4f}"),
    ]))


@app.command("mcnemar-n")
def mcnemar_n(
    effect: float = typer.Option(..., "--effect", help="Paired difference p10 − p01."),
    discordance: float = typer.Option(..., "--discordance", help="Discordant share p10 + p01."),
    alpha: float = ALPHA_OPTION,
    power: float = POWER_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Pairs needed for a two-sided McNemar test (Connor 1987; seed 003)."""
    result = run(
        lambda: mcnemar_sample_size(effect, discordance, alpha=alpha, power=power),
        as_json=as_json,
    )
    if as_json:
        emit_json(result.to_json())
        return
    console.print(_table("McNemar sample size (Connor 1987)", [
        ("pairs needed", str(result.n)),
        ("before rounding", f"{result.n_exact:.2f}"),
    ]))


def figure_table(figures: list[SeedFigure]) -> Table:
    table = Table(title="seed figures: seed value vs computed")
    for column in ("seed", "quantity", "seed value", "computed", "match"):
        table.add_column(column, justify="left" if column in ("seed", "quantity") else "right")
    for f in figures:
        table.add_row(f.seed, f.quantity, f"{f.printed:g}", f"{f.computed:.6g}",
                      "[green]✓[/]" if f.match else "[bold red]✗[/]")
    return table


@app.command("seeds")
def seeds(as_json: bool = JSON_OPTION) -> None:
    """Recompute every statistical figure the seeds print and compare."""
    figures = seed_figure_list()
    if as_json:
        emit_json({f.key: f.to_json() for f in figures})
    else:
        console.print(figure_table(figures))
    if not all(f.match for f in figures):
        raise typer.Exit(1)
