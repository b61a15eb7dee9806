"""`rungbench causal episodes`: a reference policy's tool-use episodes from the CLI, and resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from rungbench.causal.bench.build import build_split
from rungbench.cli.causal_bench import register

app = typer.Typer()
register(app)


def _run(args: list[str]) -> Any:
    return CliRunner().invoke(app, [*args, "--json"])


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-world dev bench with the incident and revision families."""
    root = tmp_path_factory.mktemp("cbe") / "bench"
    build_split("dev", 2, 4, root, None, families="incident,revision")
    return root


def test_episodes_run_scores_and_resumes(bench: Path, tmp_path: Path) -> None:
    """The command runs every episode, scores each stage (with seed 003's sub-capability
    table over the stage rows: Recall@1 and collateral retractions measured — none, as the
    protocol keeps every supported answer — revision exercised, the rung-2/3 metrics not
    exercised), and a resume sends nothing again."""
    result = _run(["episodes", "--bench", str(bench), "--agent", "reference:p2_protocol", "--out",
                   str(tmp_path)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    fams = doc["scored"]["families"]
    assert set(fams) == {"root_cause_debugging", "sequential_revision"}
    episodes = doc["cells"] - fams["root_cause_debugging"]["n"]
    assert episodes > 0 and fams["sequential_revision"]["n"] == 3 * episodes
    metrics = {m["metric"]: m for r in doc["subcapabilities"] for m in r["metrics"]}
    status = {key: m["status"] for key, m in metrics.items()}
    assert status["recall_at_1"] == status["collateral_retraction"] == "measured"
    assert metrics["collateral_retraction"]["k"] == 0 and metrics["recall_at_1"]["n"] > 0
    assert status["revision_accuracy"] != "not exercised"
    assert status["effect_abs_error"] == status["consistency_violations"] == "not exercised"
    report = _run(["report", "--run", doc["published"]])
    assert report.exit_code == 0, report.output
    rep = json.loads(report.stdout)
    rows = fams["root_cause_debugging"]["outcomes"]
    assert rep["next_stage"]["families"]["root_cause_debugging"]["outcomes"] == rows
    assert "revision_accuracy" in rep["next_stage"]["revision"]
    again = _run(["episodes", "--bench", str(bench), "--agent", "reference:p2_protocol", "--out",
                  str(tmp_path), "--resume", doc["run"]])
    assert again.exit_code == 0, again.output
    redo = json.loads(again.stdout)
    assert redo["session"]["sent"] == 0 and redo["scored"] == doc["scored"]


def test_resume_with_another_policy_is_refused(bench: Path, tmp_path: Path) -> None:
    """Resuming a run under a different policy is a refusal (exit 3): no mixed agents."""
    first = json.loads(_run(["episodes", "--bench", str(bench), "--agent", "reference:p2_protocol",
                             "--out", str(tmp_path), "--worlds", "1",
                             "--families", "incident"]).stdout)
    other = _run(["episodes", "--bench", str(bench), "--agent", "reference:premature_commitment",
                  "--out", str(tmp_path), "--resume", first["run"]])
    assert other.exit_code == 3 and json.loads(other.stdout)["ok"] is False


def test_a_bench_without_records_2_is_an_input_error(tmp_path: Path) -> None:
    """A bench built without --families has no episodes: exit 1 naming it, no run made."""
    plain = tmp_path / "plain"
    build_split("dev", 1, 4, plain, None)
    result = _run(["episodes", "--bench", str(plain), "--agent", "reference:p2_protocol", "--out",
                   str(tmp_path / "out")])
    assert result.exit_code == 1 and "records/2" in json.loads(result.stdout)["message"]
    assert not (tmp_path / "out" / "runs").exists() or not any(
        (tmp_path / "out" / "runs").iterdir())


def test_an_openai_model_at_a_base_url_runs_the_same_episodes(
        bench: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--agent openai:MODEL --base-url`` drives an external endpoint (here a loopback server
    serving the P2 policy) and scores exactly what the served reference run scores."""
    from rungbench.agents.loopback import LoopbackServer
    from rungbench.causal.bench.episode_agents import EpisodePolicyAgent

    monkeypatch.setenv("OPENAI_API_KEY", "x" * 24)
    with LoopbackServer(EpisodePolicyAgent("p2_protocol"), api_key="x" * 24) as server:
        ext = _run(["episodes", "--bench", str(bench), "--agent", "openai:m", "--base-url",
                    server.base_url, "--out", str(tmp_path / "ext"), "--worlds", "1"])
    assert ext.exit_code == 0, ext.output
    ref = _run(["episodes", "--bench", str(bench), "--agent", "reference:p2_protocol",
                "--out", str(tmp_path / "ref"), "--worlds", "1"])
    assert json.loads(ext.stdout)["scored"] == json.loads(ref.stdout)["scored"]
    from rungbench.cli import app as root

    bad = CliRunner().invoke(root, ["causal", "episodes", "--bench", str(bench), "--agent",
                                    "openai:m", "--out", str(tmp_path / "bad"), "--json"])
    assert bad.exit_code == 2 and "base URL" in json.loads(bad.stdout)["message"]
