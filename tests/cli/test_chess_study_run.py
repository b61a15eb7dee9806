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


def test_a_stopped_endpoint_stops_the_study_run_and_says_how_to_resume(tmp_path: Path) -> None:
    """Nothing listening at the endpoint: `chess study run` stops within seconds after its
    first cells (not after every cell's retry ladder), exit 1, naming the network error, the
    endpoint model id and URL, and the command that resumes the run."""
    import socket
    import time

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    root, stage = tmp_path / "s", fx.small_stage()
    st.freeze(root, stage, fx.small_preset())
    binding = str(st.bind(root, fx.small_preset(), stage)["binding"])
    code, auth = _invoke("authorize", "--study", str(root), "--max-cells", "500",
                         "--max-tokens", "100000000", "--max-cost", "10", "--model", "luna",
                         "--route", "loop-a", "--by", "tester", "--json")
    assert code == 0
    import shlex

    from rungbench.cli import app

    args = ["chess", "study", "run", "--study", str(root), "--stage", str(stage), "--binding",
            binding, "--model", "openai:vendor/luna-2", "--label", "luna", "--base-url", url,
            "--api-key-env", "RB_STUDY_KEY", "--route", "loop-a", "--authorization",
            str(auth["authorization"]), "--json"]
    started = time.monotonic()
    result = CliRunner().invoke(app, args, env={"RB_STUDY_KEY": "sk-study-000000000000"})
    assert time.monotonic() - started < 30 and result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["stopped"] == "systematic_failure" and doc["final"] == 0
    message = doc["message"]
    assert "network_error" in message and "'vendor/luna-2'" in message and url in message
    assert message.endswith("resume: " + shlex.join(["rungbench", *args]))  # run it again
    assert doc["run_spend"]["cells"] < 20  # of 120 cells: the first few, then the stop
