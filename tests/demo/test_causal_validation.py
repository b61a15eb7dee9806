"""The causal_validation demo stage (rungbench.demo.causal_validation) on the bundled data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rungbench.causal.checks.validate import CheckRow, ValidationReport
from rungbench.demo import causal_validation
from rungbench.demo.causal_validation import run


def test_stage_runs_validation(tmp_path: Path) -> None:
    """The stage runs the full validation, writes it, and returns the table as JSON."""
    summary = run(tmp_path).summary
    assert summary["validation"]["all_pass"] is True
    written = json.loads((tmp_path / "causal_validation.json").read_text())
    assert written["rows"] == summary["validation"]["rows"]


def _failing(**_: object) -> ValidationReport:
    return ValidationReport((CheckRow("hand cases", "m", "10/11", False),
                             CheckRow("witnesses", "m", "ok", True)), 0.1)


def test_stage_reports_a_failed_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed validation row makes the stage's failure name the failed check."""
    monkeypatch.setattr(causal_validation, "run_validation", _failing)
    result = run(tmp_path)
    assert result.failure is not None and "hand cases" in result.failure
