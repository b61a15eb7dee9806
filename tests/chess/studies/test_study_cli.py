"""`rungbench chess study …` through a typer app built around ``register``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from tests.chess.studies import study_fixtures as fx  # one label stage per process
from typer.testing import CliRunner

from rungbench.chess.studies import study as st
from rungbench.cli.chess_study import register

APP = typer.Typer()
register(APP)
RUNNER = CliRunner()


def _invoke(*args: str) -> tuple[int, dict[str, object]]:
    result = RUNNER.invoke(APP, ["study", *args])
    out = result.stdout.strip()
    return result.exit_code, json.loads(out) if out.startswith("{") else {"text": out}


def test_registered_freeze_on_small_data_prints_quota_short(tmp_path: Path) -> None:
    """The registered 600-position freeze on a small stage exits 3 naming short cells."""
    code, doc = _invoke("freeze", "--study", str(tmp_path / "s"), "--stage",
                        str(fx.small_stage()), "--json")
    assert code == 3
    assert doc["error"] == "refusal"
    reasons = doc["reasons"]
    assert {r["code"] for r in reasons} == {"quota_short"}  # type: ignore[attr-defined]
    assert all("quota" in r["data"] for r in reasons)  # type: ignore[attr-defined]


def test_authorize_run_planted_and_status(tmp_path: Path) -> None:
    """authorize → run a planted agent under a registered label → status: every A105 cell
    final through the loopback."""
    root, stage = tmp_path / "s", fx.small_stage()
    st.freeze(root, stage, fx.small_preset())
    binding = st.bind(root, fx.a105_small(), stage)["binding"]
    code, auth = _invoke("authorize", "--study", str(root), "--max-cells", "500",
                         "--max-tokens", "100000000", "--max-cost", "10", "--model", "luna",
                         "--route", "loop-a", "--by", "tester", "--json")
    assert code == 0
    code, out = _invoke("run", "--study", str(root), "--stage", str(stage), "--binding",
                        str(binding), "--model", "planted:a105:null", "--label", "luna",
                        "--route", "loop-a", "--authorization", str(auth["authorization"]),
                        "--json")
    assert code == 0 and out["complete"] and out["final"] == 96
    code, status = _invoke("status", "--study", str(root), "--json")
    assert code == 0
    assert status["runs"][0]["final"] == 96  # type: ignore[index]
    assert status["authorizations"][0]["spend"]["cells"] == 96  # type: ignore[index]


@pytest.mark.parametrize("args", [["run", "--study", "x", "--stage", "y", "--binding", "b",
                                   "--model", "m", "--authorization", "a"],
                                  ["run", "--study", "x", "--stage", "y", "--binding", "b",
                                   "--model", "openai:m", "--authorization", "a"],
                                  ["run", "--study", "x", "--stage", "y", "--binding", "b",
                                   "--authorization", "a"]])
def test_usage_errors_exit_2(args: list[str]) -> None:
    """A label without its models file, an endpoint without its URL, or no agent at all is a
    usage error naming the option."""
    result = RUNNER.invoke(APP, ["study", *args])
    assert result.exit_code == 2
