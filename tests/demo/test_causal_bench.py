"""The causal_bench demo stage (rungbench.demo.causal_bench) on the bundled data."""

from __future__ import annotations

from pathlib import Path

from rungbench.demo.causal_bench import run


def test_stage_runs_for_real(tmp_path: Path) -> None:
    """The demo stage builds, evaluates two reference agents and reports real figures; a
    second run reuses the sealed bench and counts the same generated worlds (twins are
    public worlds of their own but not generated ones)."""
    summary = run(tmp_path).summary
    again = run(tmp_path).summary
    assert summary["worlds"] == again["worlds"] == 26
    assert summary["cases"] == again["cases"] and again["reused"]["bench"]
    assert summary["oracle_accuracy"] == 1.0
    assert summary["rung1_accuracy"] < 1.0
    assert summary["rung1_signature"]["rate"] >= 0.95
    assert summary["leak_scan_ok"] and summary["skin_pairs_mismatched"] == 0
