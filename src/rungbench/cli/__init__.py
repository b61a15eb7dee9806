"""The ``rungbench`` command line: thin Typer commands over the library."""

from __future__ import annotations

import typer

from rungbench import __version__
from rungbench.cli import (
    causal,
    causal_bench,
    causal_interop,
    chess,
    chess_analyze,
    chess_census,
    chess_evaluate,
    chess_study,
    design,
    evidence,
    models,
    stats,
)
from rungbench.cli._common import HELP_MARKUP, OneLineErrors
from rungbench.cli.demo import demo
from rungbench.cli.report import report
from rungbench.cli.run import run

__all__ = ["app", "main"]

app = typer.Typer(
    name="rungbench",
    cls=OneLineErrors,
    help="Evaluate LLM agents by controlled intervention rather than by score alone.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=HELP_MARKUP,
)
app.add_typer(evidence.app, name="evidence")
app.add_typer(design.app, name="design")
app.add_typer(stats.app, name="stats")
app.add_typer(models.app, name="models")
causal_bench.register(causal.app)
causal_interop.register(causal.app)
app.add_typer(causal.app, name="causal")
chess_census.register(chess.app)
chess_evaluate.register(chess.app)
chess_analyze.register(chess.app)
chess_study.register(chess.app)
app.add_typer(chess.app, name="chess")
app.command("run")(run)
app.command("demo")(demo)
app.command("report")(report)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"rungbench {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Byte-matched ablations, paired interventions, exact oracles, fail-closed evidence."""


def main() -> None:
    """Console-script entry point: no traceback ever reaches the user."""
    import sys

    from rungbench.cli._common import fail, internal_error, os_error

    try:
        app()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        raise SystemExit(130) from None
    except OSError as exc:
        try:
            fail(os_error(exc), as_json="--json" in sys.argv)
        except typer.Exit as done:
            raise SystemExit(done.exit_code) from None
    except Exception as exc:
        internal_error(exc, as_json="--json" in sys.argv)
