"""`rungbench causal ...` commands."""

from __future__ import annotations

import typer

app = typer.Typer(help="causal commands.", no_args_is_help=True)
