"""Every CLI command under generated bad arguments and files: one clean line, never a traceback.

For each leaf command of ``rungbench`` the test generates argument vectors from hostile
values (negative, zero, NaN, infinite, huge and tiny numbers; missing paths, empty and
garbage files, a folder where a file belongs and a file where a folder belongs; bad
digests, agents, URLs and JSON) and checks, for every vector:

- no exception escapes the command (a traceback would reach the user);
- the exit code is 0 (the vector happened to be valid) or one of 1, 2, 3;
- a failure is one line on stderr, or exactly one JSON document on stdout under ``--json``;
- no file that existed before the call was changed or removed (nothing overwritten).

Examples are derandomized, so CI replays the same vectors; each call has a time limit,
so an input that makes a command run without bound fails the test instead of hanging it.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.core import TyperGroup
from typer.testing import CliRunner

from rungbench.cli import app

SECONDS_PER_CALL = 30
"""Wall-time limit of one generated call."""

NUMBERS = ("-1", "0", "nan", "inf", "-inf", "1e308", "1e-300", "99999999999", "abc", "")
"""Hostile values for numeric options."""

SKIPPED = {("demo",)}
"""Commands whose every valid call is long work: every option is given, with a path value
that cannot be a fresh output, so that no generated call starts the long work."""

DAEMONS = {("causal", "logger", "start")}
"""Commands that may start a background process: never in the foreground here, and every
daemon a call started is stopped after it."""


def _leaves(command: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(command, TyperGroup):
        for name, sub in sorted(command.commands.items()):
            yield from _leaves(sub, (*path, name))
    else:
        yield path, command


COMMANDS = dict(_leaves(typer.main.get_command(app), ()))


class Sandbox:
    """Files the generated calls point at, laid out fresh for each test."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.inputs = root / "inputs"
        self.inputs.mkdir()
        (root / "cwd").mkdir()
        (self.inputs / "empty.txt").write_bytes(b"")
        (self.inputs / "garbage.json").write_bytes(b'{"schema": "x", "truncated": [1, 2')
        (self.inputs / "garbage.csv").write_bytes(b"PuzzleId,FEN,Moves\nx,not a fen,e2e4\n")
        (self.inputs / "garbage.jsonl").write_bytes(b'{"fen": "8/8/8/8/8/8/8/8 w - - 0 1"}\n[')
        (self.inputs / "binary.bin").write_bytes(bytes(range(256)))
        folder = self.inputs / "folder"
        folder.mkdir()
        (folder / "manifest.json").write_bytes(b"not json")
        (folder / "public").mkdir()
        (folder / "public" / "cases.jsonl").write_bytes(b"{}\n")
        self.counter = 0

    def fresh(self) -> str:
        """A path that does not exist yet (a legitimate new output)."""
        self.counter += 1
        return str(self.root / "out" / f"new{self.counter}")

    def values(self) -> list[str]:
        """Path-like hostile values."""
        i = self.inputs
        return [str(i / "empty.txt"), str(i / "garbage.json"), str(i / "garbage.csv"),
                str(i / "garbage.jsonl"), str(i / "binary.bin"), str(i / "folder"),
                str(i / "missing" / "deeper.txt"), str(i / "empty.txt" / "child"), "/nonexistent"]

    def snapshot(self) -> dict[str, str]:
        """Digest of every file that existed before a call."""
        return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(self.inputs.rglob("*")) if p.is_file()}


TEXT = ("", "x", "sha256:" + "0" * 64, "sha256:zz", "reference:nonesuch", "openai:", "openai:m",
        "{not json", "[]", "KEY", "KEY=", "=1", "messages=[]", "file:///etc/passwd",
        "http://", "a" * 300, "dev", "-1", "nan")
"""Hostile values for text options and arguments."""


def _kinds(param: Any) -> set[Any]:
    annotation = param.type_descriptor.annotation
    return {annotation, *typing.get_args(annotation)}


def _value(draw: Any, param: Any, sandbox: Sandbox, path: tuple[str, ...]) -> str:
    if path in SKIPPED:  # files, or a path under a file: never a usable output folder
        i = sandbox.inputs
        return str(draw(st.sampled_from([i / "empty.txt", i / "garbage.json", i / "binary.bin",
                                         i / "empty.txt" / "child"])))
    if _kinds(param) & {int, float}:
        return str(draw(st.sampled_from(NUMBERS)))
    pool = [*sandbox.values(), *TEXT, sandbox.fresh()]
    return str(draw(st.sampled_from(pool)))


@st.composite
def argv_for(draw: Any, path: tuple[str, ...], sandbox: Sandbox) -> list[str]:
    """One argument vector for the command at ``path``."""
    command = COMMANDS[path]
    argv = list(path)
    for param in command.params:
        if param.param_type_name == "argument":
            if param.required or draw(st.booleans()):
                argv.append(_value(draw, param, sandbox, path))
            continue
        if param.param_type_name != "option" or "--help" in param.opts:
            continue
        name = param.opts[0]
        if name == "--force" or (path in DAEMONS and name == "--foreground"):
            continue  # --force licenses an overwrite; the test checks that none happens
        if param.is_flag:
            if draw(st.booleans()):
                argv.append(name)
            continue
        if param.required or path in SKIPPED or draw(st.integers(0, 2)) == 0:
            argv += [name, _value(draw, param, sandbox, path)]
    return argv


class CallTimedOut(Exception):
    """Raised inside a generated call that ran past :data:`SECONDS_PER_CALL`."""


def _alarm(signum: int, frame: Any) -> None:
    raise CallTimedOut(f"call ran past {SECONDS_PER_CALL} s")


def _check(argv: list[str], sandbox: Sandbox) -> None:
    before = sandbox.snapshot()
    previous = signal.signal(signal.SIGALRM, _alarm)
    cwd = os.getcwd()
    os.chdir(sandbox.root / "cwd")  # a relative path argument lands in the sandbox
    signal.alarm(SECONDS_PER_CALL)
    try:
        result = CliRunner().invoke(app, argv)
    finally:
        signal.alarm(0)
        os.chdir(cwd)
        signal.signal(signal.SIGALRM, previous)
    shown = f"rungbench {' '.join(argv)}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{shown}: raised {result.exception!r:.300}") from result.exception
    assert result.exit_code in (0, 1, 2, 3), f"{shown}: exit {result.exit_code}"
    assert "Traceback" not in result.output + result.stderr, shown
    assert "internal error" not in result.output + result.stderr, f"{shown}: {result.stderr}"
    if result.exit_code != 0:
        if "--json" in argv and result.stdout.strip():
            document = json.loads(result.stdout)
            assert document.get("ok") is False or document.get("refused"), shown
        else:
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1, f"{shown}: stderr {result.stderr!r:.600}"
    if tuple(argv[:3]) in DAEMONS:
        _stop_daemons(argv)
    after = sandbox.snapshot()
    changed = sorted(k for k in before if after.get(k) != before[k])
    assert not changed, f"{shown}: changed or removed {changed}"


def _stop_daemons(argv: list[str]) -> None:
    for i, arg in enumerate(argv[:-1]):
        if arg == "--state-dir":
            CliRunner().invoke(app, ["causal", "logger", "stop", "--state-dir", argv[i + 1]])


def test_every_command_is_generated() -> None:
    """The command tree is walked: every group's leaves are fuzzed (the list can fail)."""
    names = {" ".join(p) for p in COMMANDS}
    for expected in ("run", "demo", "evidence put", "stats mde", "causal build",
                     "chess label run", "chess play", "design audit"):
        assert expected in names


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_bad_arguments_fail_cleanly(path: tuple[str, ...], data: st.DataObject,
                                    tmp_path_factory: pytest.TempPathFactory) -> None:
    """Hostile arguments give exit 0-3, one line or one JSON document, and change no file."""
    sandbox = Sandbox(tmp_path_factory.mktemp("fuzz"))
    argv = data.draw(argv_for(path, sandbox))
    _check(argv, sandbox)
