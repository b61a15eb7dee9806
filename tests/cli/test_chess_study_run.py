"""`rungbench chess study run --probe` then `--shortlist-from RUN_ID`: the two-call arm."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from tests.chess.studies import study_fixtures as fx  # one label stage per process
from typer.testing import CliRunner

from rungbench.chess.studies import study as st
from rungbench.chess.studies.ladder import CHOICE, final_calls
from rungbench.cli.chess_study import register

APP = typer.Typer()
register(APP)


def _invoke(*args: str) -> tuple[int, dict[str, object]]:
    result = CliRunner().invoke(APP, ["study", *args])
    out = result.stdout.strip()
    return result.exit_code, json.loads(out) if out.startswith("{") else {"text": out}


def test_probe_then_choice_through_the_cli(tmp_path: Path) -> None:
    """run --probe, then run --shortlist-from: 24 choice cells showing the own shortlists."""
    root, stage = tmp_path / "s", fx.small_stage()
    st.freeze(root, stage, fx.small_preset())
    binding = str(st.bind(root, fx.small_preset(), stage)["binding"])
    code, auth = _invoke("authorize", "--study", str(root), "--max-cells", "500",
                         "--max-tokens", "100000000", "--max-cost", "10", "--model", "luna",
                         "--route", "loop-a", "--by", "tester", "--json")
    common = ["--study", str(root), "--stage", str(stage), "--binding", binding, "--model",
              "planted:e020:ideas_limited", "--label", "luna", "--route", "loop-a",
              "--authorization", str(auth["authorization"]), "--json"]
    code, probe = _invoke("run", *common, "--probe")
    assert code == 0 and probe["complete"] and probe["final"] == 24
    code, choice = _invoke("run", *common, "--shortlist-from", str(probe["run_id"]))
    assert code == 0 and choice["complete"] and choice["final"] == 24, choice
    metas = [m for m, _, _ in final_calls(Path(str(choice["run"])))]
    assert {m["condition"] for m in metas} == {CHOICE}
    assert all(len(m["candidates"]) == 5 for m in metas)
    code, again = _invoke("run", *common, "--shortlist-from", str(probe["run_id"]))
    assert code == 0 and again["run_id"] == choice["run_id"]  # same probe, same schedule
    code, wrong = _invoke("run", *common, "--shortlist-from", str(choice["run_id"]))
    assert code == 3 and wrong["reasons"][0]["code"] == "probe_mismatch"  # type: ignore[index]


def test_probe_and_shortlist_from_together_is_a_usage_error() -> None:
    """--probe with --shortlist-from exits 2 naming --shortlist-from."""
    result = CliRunner().invoke(APP, ["study", "run", "--study", "x", "--stage", "y",
                                      "--binding", "b", "--model", "planted:e020:ideas_limited",
                                      "--authorization", "a", "--probe",
                                      "--shortlist-from", "r"])
    assert result.exit_code == 2 and "--shortlist-from" in result.output
