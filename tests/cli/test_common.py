"""Shared CLI plumbing: the progress bar every long command uses."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from rungbench.cli import _common
from rungbench.cli._common import progress_bar


def test_progress_bar_is_absent_under_json_and_off_a_terminal() -> None:
    """--json (quiet) and a non-terminal stdout both yield no tick, so nothing is drawn."""
    with progress_bar("x", quiet=True, total=3) as tick:
        assert tick is None
    with progress_bar("x", quiet=False) as tick:  # pytest captures stdout: not a terminal
        assert tick is None


def test_progress_bar_draws_done_and_learned_total_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a terminal the tick moves the bar; a total given later replaces the unknown one."""
    screen = io.StringIO()
    monkeypatch.setattr(_common, "console", Console(file=screen, force_terminal=True, width=80))
    with progress_bar("verifying", quiet=False) as tick:
        assert tick is not None
        tick(3, 4)
        tick(4)
    assert "verifying" in screen.getvalue() and "100%" in screen.getvalue()
