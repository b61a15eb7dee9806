"""The designs demo stage (rungbench.demo.designs) on the bundled data."""

from __future__ import annotations

import json
from pathlib import Path

from rungbench.demo.designs import run


def test_stage_writes_reports(tmp_path: Path) -> None:
    """The stage runs both audits, writes their JSON, and reports them ok."""
    summary = run(tmp_path).summary
    assert summary["a105"]["ok"] and summary["e023"]["ok"]
    saved = json.loads((tmp_path / "design" / "e023_audit.json").read_text(encoding="utf-8"))
    assert saved["digest"] == summary["e023"]["digest"]
    assert summary["a105"]["figures"]["audit_blocks"]["ours"] == 600
