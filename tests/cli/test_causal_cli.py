"""`rungbench causal validate` and the causal demo stage."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from rungbench.causal.checks import validate as validate_module
from rungbench.causal.checks.validate import CheckRow, ValidationReport
from rungbench.cli import app as root_app


def test_validate_json_prints_one_document_and_exits_zero() -> None:
    """--json prints exactly one JSON document with all_pass true, and exit code 0."""
    result = CliRunner().invoke(root_app, ["causal", "validate", "--json", "--draws", "20000",
                                           "--categorical-worlds", "3"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["all_pass"] is True and doc["failures"] == []
    assert [r["check"] for r in doc["rows"]] == [
        "hand cases", "oracle vs independent checker",
        "back-door adjustment from observed joint", "non-identifiability witnesses",
        "categorical worlds vs independent checker", "categorical back-door adjustment",
        "categorical non-identifiability witnesses"]
    assert doc["rows"][4]["figures"]["worlds"] == 3


def test_validate_table_ends_with_all_pass() -> None:
    """The human table's last line is ALL PASS."""
    result = CliRunner().invoke(root_app, ["causal", "validate", "--draws", "20000",
                                           "--categorical-worlds", "2"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().splitlines()[-1] == "ALL PASS"


def _failing(**_: object) -> ValidationReport:
    return ValidationReport((CheckRow("hand cases", "m", "10/11", False),
                             CheckRow("witnesses", "m", "ok", True)), 0.1)


def test_failed_check_lists_failures_and_exits_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed row makes the last line list the failures and the exit code 1."""
    monkeypatch.setattr(validate_module, "run_validation", _failing)
    result = CliRunner().invoke(root_app, ["causal", "validate"])
    assert result.exit_code == 1
    assert result.stdout.strip().splitlines()[-1] == "FAILED: hand cases"
    result = CliRunner().invoke(root_app, ["causal", "validate", "--json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["failures"] == ["hand cases"]
