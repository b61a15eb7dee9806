"""Item 1: every reader of a published label stage verifies it before using it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rungbench.chess.labels.publish import verify_stage
from rungbench.chess.labels.stage_records import read_stage
from rungbench.chess.workspace import Workspace
from rungbench.cli.chess import app
from rungbench.errors import Refusal
from rungbench.evidence.canonical import canonical_bytes, loads_canonical

RUNNER = CliRunner()


def rerun(ws: Workspace) -> tuple[int, Any]:
    """Re-run `chess label run --json` on ``ws`` with the published contract."""
    result = RUNNER.invoke(app, ["label", "run", "--work", str(ws.root), "--nodes", "2000",
                                 "--hash-mb", "16", "--max-load", "1000000000", "--json"])
    return result.exit_code, json.loads(result.stdout)


def _rewrite(path: Path, edit: Any) -> None:
    path.write_bytes(canonical_bytes(edit(loads_canonical(path.read_bytes()))))


def test_rerun_refuses_tampered_manifest_and_flow_report(published: Workspace) -> None:
    """Dropping a manifest entry and setting labelled to 999 makes the re-run refuse
    (exit 3, stage_file_changed naming manifest.json), never report the tampered count."""
    _rewrite(published.stage / "manifest.json",
             lambda m: {**m, "entries": m["entries"][1:]})
    _rewrite(published.stage / "flow_report.json", lambda r: {**r, "labelled": 999})
    code, doc = rerun(published)
    assert code == 3 and doc["error"] == "refusal"
    assert "stage_file_changed" in [r["code"] for r in doc["reasons"]]
    subjects = {r.get("subject") for r in doc["reasons"]}
    assert "manifest.json" in subjects and "flow_report.json" in subjects
    assert "999" not in json.dumps(doc)


def test_rerun_refuses_a_stage_missing_a_file(published: Workspace) -> None:
    """A stage directory that lost labels.json refuses (exit 3) naming the missing file."""
    (published.stage / "labels.json").unlink()
    code, doc = rerun(published)
    assert code == 3
    assert [(r["code"], r.get("subject")) for r in doc["reasons"]] == [
        ("stage_file_missing", "labels.json")]


def test_read_stage_refuses_an_edited_stage_record(published: Workspace) -> None:
    """read_stage verifies stage.json too: an edited stage record refuses, naming it."""
    _rewrite(published.stage / "stage.json", lambda s: {**s, "role": "audit"})
    with pytest.raises(Refusal) as caught:
        read_stage(published.stage)
    assert ("stage_file_changed", "stage.json") in [
        (r.code, r.subject) for r in caught.value.reasons]


def test_malformed_stage_record_with_a_fresh_seal_refuses(published: Workspace) -> None:
    """A stage record lacking a field refuses as stage_record_malformed even when resealed."""
    from rungbench.evidence.sealed import write_seal

    _rewrite(published.stage / "stage.json", lambda s: {k: v for k, v in s.items()
                                                        if k != "manifest"})
    write_seal(published.stage, kind="rungbench.chess.label-stage")
    with pytest.raises(Refusal) as caught:
        verify_stage(published)
    assert caught.value.codes == ("stage_record_malformed",)
    assert caught.value.reasons[0].subject == "stage.json"


def test_forged_stage_with_recomputed_digests_is_not_reported(published: Workspace) -> None:
    """A consistent forgery (flow report edited, stage record and seal recomputed) refuses
    on re-run as stage_exists_different: the re-run reports its own numbers or none."""
    from rungbench.evidence.canonical import bytes_digest
    from rungbench.evidence.sealed import write_seal

    _rewrite(published.stage / "flow_report.json", lambda r: {**r, "labelled": 999})
    report = bytes_digest((published.stage / "flow_report.json").read_bytes())
    _rewrite(published.stage / "stage.json", lambda s: {**s, "flow_report": report})
    write_seal(published.stage, kind="rungbench.chess.label-stage")
    code, doc = rerun(published)
    assert code == 3 and [r["code"] for r in doc["reasons"]] == ["stage_exists_different"]
    assert doc["reasons"][0]["subject"] == "flow_report.json"
