"""The labels demo stage (rungbench.demo.labels) on the bundled data."""

from __future__ import annotations

from pathlib import Path

from rungbench.demo.labels import run


def test_stage_labels_and_publishes(tmp_path: Path) -> None:
    """The demo refuses without the replication cohort, then qualifies, labels and publishes."""
    summary = run(tmp_path).summary
    assert "cohort_absent" in summary["refused_without_cohort"]
    assert summary["preflight_cleared"] is True
    assert summary["labelled"] + summary["excluded"] == summary["pool_positions"]
    assert summary["manifest"].startswith("sha256:")
    assert Path(summary["stage"], "manifest.json").is_file()
