"""`rungbench evidence ...` commands."""

from __future__ import annotations

import typer

app = typer.Typer(help="evidence commands.", no_args_is_help=True)
