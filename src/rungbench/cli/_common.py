"""Shared plumbing for the thin CLI: output, JSON mode and exit codes.

Exit codes (DESIGN.md): 0 ok, 1 error, 2 usage, 3 refusal.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from rungbench.errors import InputError, IntegrityError, Refusal, RungbenchError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_REFUSAL = 3

console = Console()
err_console = Console(stderr=True)

T = TypeVar("T")

JSON_OPTION = typer.Option(False, "--json", help="Print one JSON document instead of tables.")


def emit_json(document: Any) -> None:
    """Print one JSON document on stdout (sorted keys, stable for diffing)."""
    sys.stdout.write(json.dumps(document, sort_keys=True, indent=2, allow_nan=False) + "\n")


def fail(exc: RungbenchError, *, as_json: bool) -> NoReturn:
    """Report ``exc`` in one clear line (or one JSON document) and exit with its code."""
    if isinstance(exc, Refusal):
        if as_json:
            emit_json({"ok": False, "error": "refusal", **exc.to_json()})
        else:
            head = f"[bold red]refused[/] {escape(str(exc))}"
            err_console.print(head, highlight=False, soft_wrap=True)
            for reason in exc.reasons:
                subject = f" [{reason.subject}]" if reason.subject else ""
                line = f"  {reason.code}{subject}: {reason.detail}"
                err_console.print(escape(line), highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_REFUSAL)
    kind = (
        "input_error" if isinstance(exc, InputError)
        else "integrity_error" if isinstance(exc, IntegrityError)
        else "error"
    )
    if as_json:
        emit_json({"ok": False, "error": kind, "message": str(exc)})
    else:
        err_console.print(f"[bold red]error[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_ERROR)


def run(action: Callable[[], T], *, as_json: bool) -> T:
    """Call ``action``; map rungbench errors to their exit codes and messages."""
    try:
        return action()
    except RungbenchError as exc:
        fail(exc, as_json=as_json)
