"""Item 7: a frozen pool is replaced only with --force; a terminal cohort never is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from rungbench.cli.chess import app

RUNNER = CliRunner()


def invoke(*args: str) -> tuple[int, Any]:
    """Run a command with --json; return (exit code, parsed document)."""
    result = RUNNER.invoke(app, [*args, "--json"])
    return result.exit_code, json.loads(result.stdout)


def freeze(work: Path, *extra: str) -> tuple[int, Any]:
    """`chess pool freeze` of a small pool into ``work``."""
    return invoke("pool", "freeze", "--work", str(work), "--puzzle-limit", "2",
                  "--games-limit", "2", "--reserve", "0", *extra)


def test_pool_freeze_refuses_an_existing_pool_unless_forced(tmp_path: Path) -> None:
    """A second pool freeze refuses (exit 3, exists) and leaves the pool; --force replaces it."""
    work = tmp_path / "ws"
    assert freeze(work)[0] == 0
    before = (work / "pool.json").read_bytes()
    code, doc = freeze(work, "--seed", "7")
    assert code == 3 and [r["code"] for r in doc["reasons"]] == ["exists"]
    assert str(work / "pool.json") in doc["reasons"][0]["subject"]
    assert (work / "pool.json").read_bytes() == before
    code, _ = freeze(work, "--seed", "7", "--force")
    assert code == 0 and (work / "pool.json").read_bytes() != before


def test_terminal_cohort_is_never_replaced(tmp_path: Path, label_data: Any) -> None:
    """Re-freezing a terminal cohort refuses (exit 3, exists), saying that even --force would
    not replace it; a live cohort may still be re-frozen (it is provisional by definition)."""
    work = str(tmp_path / "ws")
    live = str(label_data.replication[0])
    assert invoke("cohort", "freeze", "replication", live, "--work", work)[0] == 0
    assert invoke("cohort", "freeze", "replication", live, "--work", work, "--terminal")[0] == 0
    before = (tmp_path / "ws" / "cohorts" / "replication.json").read_bytes()
    for flag in ("--terminal", "--live"):
        code, doc = invoke("cohort", "freeze", "replication", *map(str, label_data.pilot),
                           "--work", work, flag)
        assert code == 3 and [r["code"] for r in doc["reasons"]] == ["exists"], flag
        assert "never replaced" in doc["reasons"][0]["detail"]
        assert "--force" in doc["reasons"][0]["detail"]
    assert (tmp_path / "ws" / "cohorts" / "replication.json").read_bytes() == before
