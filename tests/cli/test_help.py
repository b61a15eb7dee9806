"""Every ``--help`` page of ``rungbench`` renders, and shows its help text as written.

The command tree is walked from the Typer app (no list kept by hand), so a command added
later is covered the day it is added.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from rungbench.cli import app


def _tree(command: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    if isinstance(command, TyperGroup):
        for name, sub in sorted(command.commands.items()):
            yield from _tree(sub, (*path, name))


ROOT = typer.main.get_command(app)
PAGES = dict(_tree(ROOT, ()))
"""Every group and command, by its words after ``rungbench`` (the root is ``()``)."""


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _bracketed_help(command: Any) -> list[str]:
    """The help strings of ``command`` and its options that hold a square bracket."""
    texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
    return [t for t in texts if "[" in t or "]" in t]


def test_the_walk_reaches_every_kind_of_command() -> None:
    """The walk finds nested groups and leaves, the page that used to crash among them (the
    list can fail: a walk that stops at the root finds none of these)."""
    names = {" ".join(p) for p in PAGES}
    for expected in ("", "causal", "causal controls", "chess label run", "chess study bind",
                     "evidence put", "design audit", "stats mde", "run", "demo", "report"):
        assert expected in names
    assert len(PAGES) > 80


@pytest.mark.parametrize("path", sorted(PAGES), ids=lambda p: " ".join(p) or "rungbench")
def test_every_help_page_renders_its_text_verbatim(path: tuple[str, ...]) -> None:
    """``rungbench … --help`` exits 0 with no internal error, and every help text holding a
    bracket (``PORT[/path]``, ``[default]``) appears in the page exactly as written: help is
    never read as Rich markup, where such text is a tag (a crash, or silently dropped)."""
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "100"})
    shown = result.output
    assert result.exit_code == 0, shown
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "internal error" not in shown and "Usage:" in shown
    for text in _bracketed_help(PAGES[path]):
        assert _flat(text) in _flat(shown)


def test_no_group_reads_help_as_markup() -> None:
    """Every Typer group and command has Rich markup parsing of help off, so a bracket in
    help text written later cannot crash its page either."""
    modes = {" ".join(p): getattr(c, "rich_markup_mode", "absent") for p, c in PAGES.items()}
    assert {name: mode for name, mode in modes.items() if mode is not None} == {}
