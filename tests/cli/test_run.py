"""``rungbench run``: schedule and agent dispatch, start/resume, and the command."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from rungbench.agents.loopback import Fault, LoopbackServer
from rungbench.agents.openai_provider import OpenAIProvider
from rungbench.agents.protocol import Agent
from rungbench.causal.build import build_split
from rungbench.causal.evaluate import score_run
from rungbench.chess.move_choice import fen_schedule
from rungbench.cli.run import (
    build_agent,
    build_schedule,
    demo_stage,
    parse_params,
    run,
    start_or_resume,
)
from rungbench.errors import InputError, Refusal
from rungbench.evidence.paths import shared_data_dir
from rungbench.execute.policy import RetryPolicy
from rungbench.execute.runner import verify_run

PUZZLES = shared_data_dir() / "lichess_puzzles" / "puzzles.csv"
KAGGLE = shared_data_dir() / "kaggle_chess_positions" / "filtered_chess_positions.jsonl"
KEY = "sk-cli-test-0c7e55d2"


def test_schedule_source_dispatches_a_fen_jsonl() -> None:
    """A .jsonl SCHEDULE builds the same frozen schedule as the FEN-JSONL builder."""
    kaggle = fen_schedule(KAGGLE, limit=4)
    assert build_schedule(KAGGLE, limit=4).digest() == kaggle.digest()


def _reference(name: str) -> Callable[[str, Path | None], Agent]:
    return lambda task, causal_dir: build_agent(
        task, agent=name, model=None, base_url=None, causal_dir=causal_dir
    )


def test_resume_with_another_schedule_is_refused(tmp_path: Path) -> None:
    """Resuming with a SCHEDULE that does not rebuild the frozen one is a refusal."""
    first = start_or_resume(
        source=PUZZLES,
        out=tmp_path,
        resume=None,
        make_agent=_reference("reference:random"),
        limit=4,
        quiet=True,
    )
    assert first["complete"] and first["outcomes"] == {"answered": 4}
    with pytest.raises(Refusal) as caught:
        start_or_resume(
            source=PUZZLES,
            out=tmp_path,
            resume=first["run_id"],
            make_agent=_reference("reference:random"),
            limit=5,
            quiet=True,
        )
    assert caught.value.codes == ("different",)


def test_causal_bench_runs_through_the_real_client_and_scores(tmp_path: Path) -> None:
    """Public cases become submit_answer cells; the run's answers score with the bench scorer.

    The oracle answers every case correctly; one case gets garbage arguments (a model
    failure: scored invalid) and one fails with HTTP 500 on every attempt (a reliability
    outcome: reported missing). No case disappears.
    """
    bench = tmp_path / "bench"
    build_split("dev", 1, 3, bench, None)
    schedule = build_schedule(bench)
    oracle = build_agent(
        schedule.task, agent="reference:oracle", model=None, base_url=None, causal_dir=bench
    )
    payloads = [c.request.payload_digest() for c in schedule]
    faults = {payloads[0]: [Fault.GARBAGE_ARGUMENTS], payloads[1]: [Fault.SERVER_ERROR] * 2}
    requests = [c.request for c in schedule]
    with LoopbackServer(oracle, api_key=KEY, requests=requests, faults=faults) as server:
        summary = start_or_resume(
            source=bench,
            out=tmp_path / "out",
            resume=None,
            quiet=True,
            concurrency=4,
            policy=RetryPolicy(max_attempts=2, backoff_s=(0.0,)),
            make_agent=lambda task, d: OpenAIProvider(
                "bench", base_url=server.base_url, api_key_env="K", environ={"K": KEY}
            ),
        )
    n = len(schedule)
    assert summary["complete"]
    assert summary["outcomes"] == {"answered": n - 2, "malformed": 1, "provider_error": 1}
    assert summary["agent_responses"] == {"responses": n - 2, "invalid": 1, "missing": 1}
    scored = score_run(bench, Path(summary["run_dir"]), "openai:bench")
    assert scored["missing"] == 1 and scored["outcomes"]["invalid"] == 1
    correct = scored["outcomes"]["correct"] + scored["outcomes"]["correct_non_id"]
    assert correct == n - 2


def test_params_parse_json_values_and_bare_words() -> None:
    """--param KEY=VALUE takes JSON values, bare words as strings, and refuses no '='."""
    assert parse_params(["temperature=0", 'stop=["x"]', "effort=low"]) == {
        "temperature": 0,
        "stop": ["x"],
        "effort": "low",
    }
    with pytest.raises(InputError, match="KEY=VALUE"):
        parse_params(["temperature"])


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command()(run)
    return app


def test_command_rejects_two_agents_with_one_json_document(tmp_path: Path) -> None:
    """--agent together with --model is an error: exit 1, one JSON document."""
    result = CliRunner().invoke(
        _app(),
        [
            str(PUZZLES),
            "--agent",
            "reference:random",
            "--model",
            "openai:x",
            "--json",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["ok"] is False and "exactly one" in document["message"]


def test_command_runs_and_prints_one_json_document(tmp_path: Path) -> None:
    """A reference run prints one JSON summary with every cell final."""
    result = CliRunner().invoke(
        _app(),
        [
            str(PUZZLES),
            "--agent",
            "reference:vision-limited",
            "--limit",
            "6",
            "--json",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.stdout
    summary = json.loads(result.stdout)
    assert summary["cells_final"] == 6 and summary["complete"]
    assert verify_run(Path(summary["run_dir"])).ok


def test_demo_stage_resumes_without_resending(tmp_path: Path) -> None:
    """The demo's resume finishes every cell, re-sends nothing, and writes no key."""
    result = demo_stage(tmp_path, as_json=True)
    assert result["every_cell_one_final"] and result["cells"] == 12
    assert result["completed_cells_resent"] == 0 and result["api_key_in_files"] == 0
    assert result["session1_finalized"] + result["session2_finalized"] == 12
    assert result["outcomes"]["malformed"] == 1 and result["outcomes"]["refusal"] == 1


def test_cli_import_leaves_the_sdk_and_the_domains_unloaded() -> None:
    """Importing the CLI (``rungbench --version``) loads neither openai nor the causal library."""
    import subprocess
    import sys

    heavy = ["openai", "rungbench.agents.openai_provider", "rungbench.causal.requests",
             "rungbench.causal.build", "rungbench.causal.evaluate", "rungbench.execute.runner"]
    code = (
        "import sys, rungbench.cli.run, rungbench.cli.causal_bench; "
        f"print([m for m in {heavy!r} if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_default_key_variable_matches_the_provider() -> None:
    """The CLI's --api-key-env default is the provider's default variable name."""
    import importlib

    from rungbench.agents import openai_provider

    run_module = importlib.import_module("rungbench.cli.run")  # the package re-exports `run`
    assert run_module.DEFAULT_API_KEY_ENV == openai_provider.DEFAULT_API_KEY_ENV
