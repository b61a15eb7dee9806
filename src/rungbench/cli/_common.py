"""Shared plumbing for the thin CLI: output, JSON mode and exit codes.

Exit codes (docs/CONTRACTS.md §9): 0 ok, 1 error, 2 usage, 3 refusal.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn, Protocol, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from typer import _click as click  # Typer 0.29 vendors its own copy of click
from typer.core import TyperGroup

from rungbench.errors import InputError, IntegrityError, Refusal, RungbenchError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_REFUSAL = 3
EXIT_INTERRUPTED = 130
"""An interrupt (Ctrl-C), as shells report SIGINT."""

SEED_MAX = 2**63 - 1
"""Largest seed an option accepts (NumPy seeds are non-negative)."""

console = Console()
err_console = Console(stderr=True)

T = TypeVar("T")

JSON_OPTION = typer.Option(False, "--json", help="Print one JSON document instead of tables.")

HELP_MARKUP = None
"""How Typer reads help text: not at all. Help is shown as written; with Rich markup on, text
such as ``http://127.0.0.1:PORT[/path]`` is parsed as a closing tag and ``--help`` crashes
(``tests/cli/test_help.py`` renders every page)."""


def command_group(help: str, **settings: Any) -> typer.Typer:
    """A group of sub-commands: help verbatim, and a bare group name prints its help."""
    return typer.Typer(help=help, no_args_is_help=True, rich_markup_mode=HELP_MARKUP, **settings)


def choice(values: tuple[str, ...]) -> Callable[[str], str]:
    """A Typer option callback that makes any value outside ``values`` a usage error (exit 2)."""

    def check(value: str) -> str:
        if value not in values:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(values)}")
        return value

    return check


def emit_json(document: Any) -> None:
    """Print one JSON document on stdout (sorted keys, stable for diffing)."""
    sys.stdout.write(json.dumps(document, sort_keys=True, indent=2, allow_nan=False) + "\n")


def fail(exc: RungbenchError, *, as_json: bool) -> NoReturn:
    """Report ``exc`` in one clear line (or one JSON document) and exit with its code."""
    if isinstance(exc, Refusal):
        if as_json:
            emit_json({"ok": False, "error": "refusal", **exc.to_json()})
        else:  # one line: the refusal's text names every reason code and its detail
            head = f"[bold red]refused[/] {escape(_one_line(str(exc)))}"
            err_console.print(head, highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_REFUSAL)
    kind = (
        "input_error" if isinstance(exc, InputError)
        else "integrity_error" if isinstance(exc, IntegrityError)
        else "error"
    )
    text = with_option(exc) if isinstance(exc, InputError) else str(exc)
    if as_json:
        emit_json({"ok": False, "error": kind, "message": text})
    else:
        err_console.print(f"[bold red]error[/] {escape(_one_line(text))}", highlight=False,
                          soft_wrap=True)
    raise typer.Exit(EXIT_ERROR)


def with_option(exc: InputError) -> str:
    """An input error's text naming the command's option where the library names a field:
    ``(field 'base_url')`` becomes ``(option --base-url)`` when the running command has that
    option (the library knows fields; only the CLI knows flags)."""
    text = str(exc)
    if not exc.field:
        return text
    flag = option_for(exc.field)
    suffix = f" (field {exc.field!r})"
    if flag is None or not text.endswith(suffix):
        return text
    kind = "option" if flag.startswith("--") else "argument"
    return f"{text.removesuffix(suffix)} ({kind} {flag})"


def option_for(field: str) -> str | None:
    """The running command's option (or positional argument, upper-cased) that sets library
    field ``field`` (its first part for a dotted field), or None. An option matches by its
    parameter name, by its long flag, or through :data:`rungbench.cli._agents.FLAGS` (agent
    spec fields)."""
    from typer._click.globals import get_current_context  # the vendored click of typer

    from rungbench.cli._agents import FLAGS

    ctx = get_current_context(silent=True)
    if ctx is None:
        return None
    head = field.split(".")[0].lstrip("-").replace("-", "_")
    wanted = FLAGS.get(head)
    for param in ctx.command.params:
        flags = [o for o in getattr(param, "opts", []) if o.startswith("--")]
        if not flags:  # a positional argument, named as its help shows it
            if param.name == head:
                return head.upper()
            continue
        names = {param.name, *(f.lstrip("-").replace("-", "_") for f in flags)}
        if head in names or wanted in flags:
            return max(flags, key=len) if wanted not in flags else wanted
    return None


def _one_line(text: str) -> str:
    """``text`` with its line breaks folded, so that an error is always one line."""
    return " ".join(text.split())


def run(action: Callable[[], T], *, as_json: bool) -> T:
    """Call ``action``; map rungbench errors to their exit codes and messages.

    An operating-system error (a missing file, a file where a folder is expected, no
    permission) becomes one line naming the path, exit 1.
    """
    try:
        return action()
    except RungbenchError as exc:
        fail(exc, as_json=as_json)
    except OSError as exc:
        fail(os_error(exc), as_json=as_json)


INVOKED: list[str] = []
"""The arguments the root command was invoked with (what a resume command repeats)."""


def resume_command(option: str | None = None, run_id: str | None = None) -> str:
    """The command that resumes what the user typed: the same command line, with
    ``option RUN_ID`` set when the command resumes by an option (``--resume``); a command
    whose run id is a function of its inputs resumes by running it again."""
    import shlex

    argv = list(INVOKED or sys.argv[1:])
    if option is not None and run_id is not None:
        if option in argv:
            at = argv.index(option)
            del argv[at:at + 2]
        argv += [option, run_id]
    return shlex.join(["rungbench", *argv])


def interruptible(action: Callable[[], T], *, as_json: bool,
                  option: str | None = None) -> T:
    """:func:`run`, and an interrupt (Ctrl-C) stopping a run ends in one line naming the run
    and the command that resumes it (exit 130)."""
    from rungbench.execute.runner import RunInterrupted

    try:
        return run(action, as_json=as_json)
    except RunInterrupted as exc:
        line = (f"interrupted: run {exc.run_id} stopped, everything finished is kept; "
                f"resume: {resume_command(option, exc.run_id)}")
        if as_json:
            emit_json({"ok": False, "error": "interrupted", "run_id": exc.run_id,
                       "run_dir": str(exc.run_dir), "message": line})
        else:
            err_console.print(f"[bold red]error[/] {escape(line)}", highlight=False,
                              soft_wrap=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None


def os_error(exc: OSError) -> InputError:
    """The one-line input error for an operating-system error, naming its path."""
    where = exc.filename if exc.filename is not None else None
    reason = exc.strerror or type(exc).__name__
    return InputError(reason.lower() if reason else str(exc), path=None if where is None
                      else str(where))


def internal_error(exc: BaseException, *, as_json: bool) -> NoReturn:
    """Last resort: report an unexpected exception in one line (never a traceback), exit 1.

    Reaching this is a rungbench bug; the line says so, so that tests can look for it.
    """
    message = f"internal error ({type(exc).__name__}): {exc}".strip()
    if as_json:
        emit_json({"ok": False, "error": "internal_error", "message": message})
    else:
        err_console.print(f"[bold red]error[/] {escape(message)}", highlight=False,
                          soft_wrap=True)
    raise SystemExit(EXIT_ERROR)


class OneLineErrors(TyperGroup):
    """The root command group: a usage error is one line (or one JSON document), exit 2.

    Click's own report of a bad option spans a usage line, a hint and a boxed message;
    rungbench's promise is one line naming the option. Help (``--help``, a group with no
    command) is still printed in full.
    """

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        """Run the command; report a usage error in one line and exit with its code."""
        argv = list(sys.argv[1:] if args is None else args)
        INVOKED[:] = argv
        if not standalone_mode:
            return super().main(argv, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(argv, prog_name, complete_var, False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            _usage_line(exc, as_json="--json" in argv)
            sys.exit(exc.exit_code)
        except typer.Abort:
            err_console.print("[bold red]error[/] aborted", highlight=False)
            sys.exit(EXIT_ERROR)
        sys.exit(code if isinstance(code, int) else EXIT_OK)


def _usage_line(exc: click.ClickException, *, as_json: bool) -> None:
    message = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    where = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    if as_json:
        emit_json({"ok": False, "error": "usage_error", "message": message})
    else:
        err_console.print(f"[bold red]usage error[/] {escape(message)}{escape(where)}",
                          highlight=False, soft_wrap=True)


class ProgressTick(Protocol):
    """Report progress: ``done`` so far, and ``total`` when the caller learns it."""

    def __call__(self, done: int, total: int | None = None) -> None: ...


@contextmanager
def progress_bar(
    label: str, *, quiet: bool, total: int | None = None
) -> Iterator[ProgressTick | None]:
    """Yield a tick driving a Rich bar on a terminal; None under ``--json`` or when piped."""
    if quiet or not console.is_terminal:
        yield None
        return
    from rich.progress import Progress  # loaded only when a bar is drawn (CLI start-up)

    with Progress(console=console, transient=True) as bar:
        task = bar.add_task(label, total=total)

        def tick(done: int, total: int | None = None) -> None:
            bar.update(task, completed=done, total=total)  # total None: left unchanged

        yield tick
