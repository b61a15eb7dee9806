"""A Rich progress bar for runs: cells done, rate and ETA; silent off a terminal or under --json."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from rungbench.execute.runner import ProgressHook


@contextmanager
def run_progress(
    label: str, *, quiet: bool = False, console: Console | None = None
) -> Iterator[ProgressHook]:
    """Yield a :data:`ProgressHook` that drives a Rich bar (a no-op when quiet or not a tty)."""
    out = console or Console(stderr=True)
    if quiet or not out.is_terminal:
        yield lambda done, total: None
        return
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=out, transient=False) as bar:
        task = bar.add_task(label, total=None, rate="")

        def hook(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)
            speed = bar.tasks[task].speed
            bar.update(task, rate=f"{speed:.1f} cells/s" if speed else "")

        yield hook
