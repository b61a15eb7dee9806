"""`rungbench stats ...` commands: binomial intervals, MDE envelope, McNemar sample size.

Each command parses, calls one ``rungbench.stats`` function and prints a Rich
table, or one JSON document under ``--json``. An option value the library would refuse
on its own (zero, negative, nan, inf, a power outside (0.5, 1)) is a usage error, exit 2,
naming the option: each option's callback runs the library's own check. Inputs that are
bad only together (k > n, clusters > n, discordance below the effect) and results no float
can hold exit 1 with one line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import typer
from rich.table import Table

from rungbench.cli._common import JSON_OPTION, command_group, console, emit_json, run
from rungbench.errors import InputError
from rungbench.stats import check_alpha, check_count, check_positive, check_power
from rungbench.stats.intervals import binomial_intervals
from rungbench.stats.power import mcnemar_sample_size, mde
from rungbench.stats.seeds import SeedFigure, seed_figure_list

app = command_group("Intervals, multiplicity-aware MDE and McNemar sample size.")

V = TypeVar("V", int, float)


def checked(check: Callable[[V, str], object]) -> Callable[[typer.CallbackParam, V | None],
                                                           V | None]:
    """A Typer callback running a library check: its InputError becomes a usage error (exit 2)."""

    def callback(param: typer.CallbackParam, value: V | None) -> V | None:
        if value is None:
            return None
        field = param.name or "value"
        try:
            check(value, field)
        except InputError as exc:
            raise typer.BadParameter(str(exc).removesuffix(f" (field {field!r})")) from None
        return value

    return callback


def _count(minimum: int) -> Callable[[int, str], object]:
    return lambda value, field: check_count(value, field=field, minimum=minimum)


def _positive(value: float, field: str) -> object:
    return check_positive(value, field=field)


def _share(value: float, field: str) -> object:
    if check_positive(value, field=field) > 1:
        raise InputError(f"{field} is a share and must be <= 1, got {value!r}", field=field)
    return value


def _alpha(value: float, field: str) -> object:
    return check_alpha(value, field=field)


def _power(value: float, field: str) -> object:
    return check_power(value, field=field)


ALPHA_OPTION = typer.Option(0.05, "--alpha", help="Two-sided error rate.",
                            callback=checked(_alpha))
POWER_OPTION = typer.Option(0.8, "--power", help="Target power, strictly between 0.5 and 1.",
                            callback=checked(_power))


def _table(title: str, rows: list[tuple[str, str]]) -> Table:
    table = Table(title=title, show_header=False)
    table.add_column("quantity", style="bold")
    table.add_column("value", justify="right")
    for name, value in rows:
        table.add_row(name, value)
    return table


@app.command("binom")
def binom(
    k: int = typer.Argument(..., help="Successes.", callback=checked(_count(0))),
    n: int = typer.Argument(..., help="Trials.", callback=checked(_count(1))),
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
    n: int = typer.Option(..., "--n", help="Paired units (e.g. held-out positions).",
                          callback=checked(_count(1))),
    sd: float = typer.Option(..., "--sd", help="SD of the paired differences.",
                             callback=checked(_positive)),
    tests: int = typer.Option(..., "--tests", help="Tests in the Holm-controlled family.",
                              callback=checked(_count(1))),
    power: float = POWER_OPTION,
    alpha: float = ALPHA_OPTION,
    clusters: int | None = typer.Option(
        None, "--clusters", help="Independent clusters; replaces N as the denominator.",
        callback=checked(_count(1))),
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
    effect: float = typer.Option(..., "--effect", help="Paired difference p10 − p01.",
                                 callback=checked(_share)),
    discordance: float = typer.Option(..., "--discordance", help="Discordant share p10 + p01.",
                                      callback=checked(_share)),
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
