"""The CLadder demo stage (rungbench.demo.cladder): SOURCES.md's counts reproduce."""

from __future__ import annotations

from pathlib import Path

from rungbench.demo.cladder import run


def test_stage_reproduces_the_recorded_counts(tmp_path: Path) -> None:
    """396 models, 4,164 questions, 578 stored quantities wrong: the stage passes."""
    result = run(tmp_path)
    assert result.failure is None
    assert (result.summary["models"], result.summary["questions"],
            result.summary["quantities_wrong"]) == (396, 4164, 578)
