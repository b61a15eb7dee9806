"""The root command: version and help."""

from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from rungbench import __version__
from rungbench.cli import app


def test_version_flag_prints_package_version() -> None:
    """`rungbench --version` prints the installed package version and exits 0."""
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"rungbench {__version__}"
    assert __version__ != "0.0.0+unknown"


def test_console_script_runs_as_module() -> None:
    """The CLI runs in a fresh interpreter (no import-time side effects) and exits 0 on --help."""
    proc = subprocess.run(
        [sys.executable, "-c", "from rungbench.cli import main; main()", "--help"],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "evidence" in proc.stdout and "stats" in proc.stdout


def test_unknown_command_is_usage_error() -> None:
    """An unknown subcommand exits with the usage code 2."""
    result = CliRunner().invoke(app, ["no-such-command"])
    assert result.exit_code == 2


def test_group_help_texts_say_what_each_group_holds() -> None:
    """Every command group's help is a real description, not a placeholder."""
    from typer.testing import CliRunner

    from rungbench.cli import app

    for group, word in (("causal", "oracle"), ("chess", "census"), ("evidence", "ledger"),
                        ("design", "audit"), ("stats", "")):
        result = CliRunner().invoke(app, [group, "--help"])
        assert result.exit_code == 0
        assert f"{group} commands." not in result.stdout
        assert word in result.stdout.lower()
