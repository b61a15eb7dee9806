"""`rungbench models check FILE`: reach every endpoint of a models file once.

Thin: read the file, call :func:`rungbench.agents.models_check.check_models`, print a table
(or one JSON document); exit 1 when any agent cannot be reached as configured.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from rungbench.cli._common import (
    EXIT_ERROR,
    JSON_OPTION,
    command_group,
    console,
    emit_json,
    run,
)

app = command_group("Models files: the agents a study names, by label.")


@app.command("check")
def check(
    file: Annotated[Path, typer.Argument(help="Models file (TOML).")],
    as_json: bool = JSON_OPTION,
) -> None:
    """Send one tiny request (one required tool call) to every endpoint; print label,
    endpoint model, latency, tokens, cost, or the problem."""
    from rungbench.agents.models_check import check_models
    from rungbench.agents.models_file import load_models

    def action() -> dict[str, Any]:
        return check_models(load_models(file))

    doc = run(action, as_json=as_json)
    if as_json:
        emit_json(doc)
    else:
        table = Table(title=f"{file} ({doc['digest'][:19]}…)")
        for column in ("label", "endpoint model", "URL", "status", "latency s", "tokens",
                       "cost $", "detail"):
            table.add_column(column)
        for row in doc["agents"]:
            tokens = (f"{row['tokens_in']}+{row['tokens_out']}" if "tokens_in" in row
                      else "—")
            cells = (row["label"], row["model"], row["base_url"] or "—", row["status"],
                     str(row.get("latency_s", "—")), tokens, str(row.get("cost_usd", "—")),
                     row["detail"])
            table.add_row(*(escape(str(c)) for c in cells))
        console.print(table)
    if not doc["ok"]:
        raise typer.Exit(EXIT_ERROR)
