"""The runner demo stage (rungbench.demo.runner) on the bundled data."""

from __future__ import annotations

from pathlib import Path

from rungbench.demo.runner import run


def test_stage_resumes_without_resending(tmp_path: Path) -> None:
    """The demo's resume finishes every cell, re-sends nothing, and writes no key."""
    result = run(tmp_path).summary
    assert result["every_cell_one_final"] and result["cells"] == 12
    assert result["completed_cells_resent"] == 0 and result["api_key_in_files"] == 0
    assert result["session1_finalized"] + result["session2_finalized"] == 12
    assert result["outcomes"]["malformed"] == 1 and result["outcomes"]["refusal"] == 1


def test_second_run_verifies_and_reuses_the_run(tmp_path: Path) -> None:
    """A re-run sends nothing: it verifies the finished run and returns the first summary."""
    first = run(tmp_path).summary
    again = run(tmp_path).summary
    assert again["reused"] is True and again["run_dir"] == first["run_dir"]
    assert {k: v for k, v in again.items() if k != "reused"} == first
