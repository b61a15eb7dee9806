"""`rungbench chess pool/cohort/label` commands and the demo stage, through Typer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from rungbench.cli.chess import app

RUNNER = CliRunner()


def invoke(*args: str) -> tuple[int, Any]:
    """Run a command with --json and return (exit code, parsed document)."""
    result = RUNNER.invoke(app, [*args, "--json"])
    return result.exit_code, json.loads(result.stdout)


def test_cli_flow_refuses_then_qualifies(tmp_path: Path, label_data: Any) -> None:
    """Freeze, refuse preflight (exit 3, cohort_absent), freeze cohorts, qualify, pass preflight."""
    work = str(tmp_path / "ws")
    code, pool = invoke("pool", "freeze", "--work", work, "--puzzle-limit", "2",
                        "--games-limit", "2", "--reserve", "0")
    assert code == 0 and pool["positions"] > 0 and pool["digest"].startswith("sha256:")
    code, doc = invoke("label", "preflight", "--work", work)
    assert code == 3 and doc["refused"] is True
    assert {r["code"] for r in doc["reasons"]} == {"cohort_absent", "qualification_absent"}
    code, _ = invoke("cohort", "freeze", "pilot", *map(str, label_data.pilot), "--work", work,
                     "--terminal")
    assert code == 0
    code, live = invoke("cohort", "freeze", "replication", str(label_data.replication[0]),
                        "--work", work)
    assert code == 0 and live["terminal"] is False
    code, doc = invoke("label", "qualify", "--work", work)
    assert code == 3 and [r["code"] for r in doc["reasons"]] == ["cohort_not_terminal"]
    invoke("cohort", "freeze", "replication", str(label_data.replication[0]), "--work", work,
           "--terminal")
    code, qual = invoke("label", "qualify", "--work", work)
    assert code == 0 and qual["cleared"] is True
    code, ok = invoke("label", "preflight", "--work", work)
    assert code == 0 and ok["ok"] is True and ok["engine_opened"] is False


def test_bad_input_exits_1_with_one_json_document(tmp_path: Path) -> None:
    """A missing pool source is an input error: exit 1 and one JSON error document."""
    code, doc = invoke("pool", "freeze", "--work", str(tmp_path),
                       "--puzzles", str(tmp_path / "none.csv"))
    assert code == 1 and doc["error"] == "input_error" and "none.csv" in doc["message"]


def test_label_run_refuses_with_exit_3_before_any_engine(tmp_path: Path) -> None:
    """`label run --workers 2` on an empty workspace refuses (exit 3) with reason codes."""
    code, doc = invoke("label", "run", "--work", str(tmp_path), "--workers", "2",
                       "--max-load", "1000000")
    assert code == 3 and doc["error"] == "refusal"
    assert {r["code"] for r in doc["reasons"]} == {
        "pool_absent", "cohort_absent", "qualification_absent"}


def test_label_run_bad_engine_is_one_line_exit_1(tmp_path: Path,
                                                 make_workspace: Any) -> None:
    """A missing engine binary: exit 1 and exactly one error line on stderr (no --json)."""
    ws = make_workspace(tmp_path / "ws")
    result = RUNNER.invoke(app, ["label", "run", "--work", str(ws.root), "--engine",
                                 str(tmp_path / "no-engine"), "--max-load", "1000000"])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "no-engine" in lines[0] and lines[0].startswith("error")
    assert result.stdout == ""


def test_every_command_takes_json() -> None:
    """pool freeze, cohort freeze, label qualify/preflight/run all accept --json."""
    for args in (["pool", "freeze"], ["cohort", "freeze"], ["label", "qualify"],
                 ["label", "preflight"], ["label", "run"]):
        result = RUNNER.invoke(app, [*args, "--help"])
        assert result.exit_code == 0 and "--json" in result.stdout, args


def test_hash_above_engine_maximum_exits_1_naming_the_option(tmp_path: Path,
                                                             make_workspace: Any) -> None:
    """`label run --hash-mb` above Stockfish's declared maximum: exit 1 within seconds, one
    line naming --hash-mb, no traceback, no stage (it used to print one and hang)."""
    import subprocess
    import sys

    ws = make_workspace(tmp_path / "ws")
    done = subprocess.run(
        [sys.executable, "-c", "from rungbench.cli import main; main()", "chess", "label", "run",
         "--work", str(ws.root), "--hash-mb", "33554433", "--max-load", "1000000"],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--hash-mb" in lines[0] and "Traceback" not in done.stderr
    assert not ws.stage.exists()
