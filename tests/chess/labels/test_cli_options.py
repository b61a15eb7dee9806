"""Items 15 and 21: bad option values are usage errors; bad paths are one line, exit 1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rungbench.chess.workspace import Workspace
from rungbench.cli.chess import app

RUNNER = CliRunner()
CLI = [sys.executable, "-c", "from rungbench.cli import main; main()"]

POOL = ["pool", "freeze", "--puzzle-limit", "2", "--games-limit", "2", "--reserve", "0"]
RUN = ["label", "run"]


@pytest.mark.parametrize(("base", "option", "value"), [
    (POOL, "--puzzle-limit", "-1"), (POOL, "--puzzle-limit", "0"),
    (POOL, "--games-limit", "-1"), (POOL, "--reserve", "-1"),
    (POOL, "--min-width", "9"), (POOL, "--min-width", "219"),
    (RUN, "--max-load", "nan"), (RUN, "--max-load", "inf"), (RUN, "--max-load", "-1"),
    (RUN, "--workers", "100000"), (RUN, "--nodes", "100000000000000"),
    (RUN, "--hash-mb", "100000000000000"), (RUN, "--engine-build", "stockfish-17"),
])
def test_out_of_range_option_is_a_usage_error(tmp_path: Path, base: list[str], option: str,
                                              value: str) -> None:
    """An out-of-range value exits 2 naming the option, before any file is written."""
    args = [*base, "--work", str(tmp_path / "ws")]
    if option in args:
        at = args.index(option)
        del args[at:at + 2]
    result = RUNNER.invoke(app, [*args, option, value])
    assert result.exit_code == 2, result.output
    assert option in result.output
    assert not (tmp_path / "ws").exists()


@pytest.mark.parametrize("args", [
    POOL, ["cohort", "freeze", "pilot", "GAMES"], ["label", "qualify"], ["label", "preflight"],
    ["label", "run", "--max-load", "1000000000"],
])
def test_work_that_is_a_file_is_one_line_exit_1(tmp_path: Path, label_data: object,
                                                args: list[str]) -> None:
    """--work naming a file: exit 1, one line on stderr naming the path, no traceback."""
    work = tmp_path / "file"
    work.write_text("not a workspace")
    games = str(label_data.pilot[0])  # type: ignore[attr-defined]
    argv = [a if a != "GAMES" else games for a in args]
    done = subprocess.run([*CLI, "chess", *argv, "--work", str(work)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(work) in lines[0] and "directory" in lines[0]
    assert work.read_text() == "not a workspace"


def test_missing_or_binary_cohort_source_is_one_line_naming_it(tmp_path: Path) -> None:
    """`cohort freeze pilot MISSING` or a binary file: exit 1, one line naming the path."""
    binary = tmp_path / "games.txt"
    binary.write_bytes(b"\xf8\xff\x00make_move")
    for path, says in ((tmp_path / "nonexistent", "cohort source file does not exist"),
                       (binary, "UTF-8")):
        done = subprocess.run([*CLI, "chess", "cohort", "freeze", "pilot", str(path),
                               "--work", str(tmp_path / "ws")], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 1
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and str(path) in lines[0] and says in lines[0], lines
        assert "internal error" not in lines[0]


def test_workspace_under_a_file_is_an_input_error(tmp_path: Path) -> None:
    """A Workspace whose root (or an ancestor) is a file is refused when it is made."""
    from rungbench.errors import InputError

    (tmp_path / "f").write_text("x")
    for root in (tmp_path / "f", tmp_path / "f" / "sub"):
        with pytest.raises(InputError, match="directory"):
            Workspace(root)
