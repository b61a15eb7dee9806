"""The evidence demo stage (rungbench.demo.evidence) on the bundled data."""

from __future__ import annotations

import json
from pathlib import Path

from rungbench.demo.evidence import run


def test_stage_on_bundled_data(tmp_path: Path) -> None:
    """The demo stage stores real files, refuses a stale source, and keeps a valid ledger."""
    summary = run(tmp_path).summary
    assert summary["files"] >= 3 and summary["bad_objects"] == 0
    assert summary["digests_matching_sources_md"] == summary["files"]
    assert summary["stale_check_refused_with"] == ["stale"]
    assert summary["ledger_ok"] is True
    assert summary["ledger_events"] == summary["files"] + 3
    assert summary["manifest_reread_matches"] is True
    run_json = "llm_chess/gpt-oss-20b-low_2025-08-12-15-06-46/_run.json"
    assert summary["input_digests"][run_json] == (
        "sha256:cfc0e9a3ee7093a01a5b2fc01c74a18fa36c5d70c4c88ebf5bd232a220af4e11"
    )
    again = run(tmp_path).summary
    assert again["frozen"] == summary["frozen"]
    assert again["ledger_events"] == 2 * summary["ledger_events"]


def test_stage_checks_inventory_and_self_checked_manifest(tmp_path: Path) -> None:
    """The stage reports no missing objects and writes a manifest carrying its own digest."""
    result = run(tmp_path)
    assert result.failure is None and result.summary["missing_objects"] == 0
    written = json.loads(Path(result.summary["manifest"]).read_bytes())
    assert written["manifest_digest"] == result.summary["manifest_digest"]
