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


def test_resumed_bar_shows_the_session_rate_and_an_eta() -> None:
    """A resumed run starts the bar at the skipped count; the rate counts only this session's
    cells (ten cells at >= 10 ms each: at most 100 cells/s, not thousands), and an ETA shows."""
    import re
    import time

    sink = io.StringIO()
    console = Console(file=sink, force_terminal=True, width=140)
    with run_progress("run x", console=console) as hook:
        hook(900, 1000)
        for done in range(901, 911):
            time.sleep(0.01)
            hook(done, 1000)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", sink.getvalue())
    rates = [float(r) for r in re.findall(r"([0-9.]+) cells/s", text)]
    assert rates and 0 < rates[-1] <= 101
    assert "910/1000" in text and re.search(r"ETA \d+:\d\d:\d\d", text)
