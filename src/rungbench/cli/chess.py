"""`rungbench chess ...` commands."""

from __future__ import annotations

import typer

app = typer.Typer(help="chess commands.", no_args_is_help=True)
