"""The run progress bar."""

from __future__ import annotations

import io

from rich.console import Console

from rungbench.execute.progress import run_progress


def test_bar_draws_count_and_rate_on_a_terminal() -> None:
    """On a terminal the bar shows cells done of total."""
    sink = io.StringIO()
    console = Console(file=sink, force_terminal=True, width=120)
    with run_progress("run x", console=console) as hook:
        for done in range(0, 11):
            hook(done, 10)
    assert "10/10" in sink.getvalue()


def test_quiet_or_piped_output_stays_empty() -> None:
    """Under --json, or when not a terminal, nothing is drawn."""
    for console, quiet in (
        (Console(file=io.StringIO(), force_terminal=True), True),
        (Console(file=io.StringIO(), force_terminal=False), False),
    ):
        with run_progress("run x", quiet=quiet, console=console) as hook:
            hook(5, 10)
        assert console.file.getvalue() == ""  # type: ignore[attr-defined]
