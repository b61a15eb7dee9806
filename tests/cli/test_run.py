"""``rungbench run`` schedules (chess puzzles, FEN lists, causal benches) and the command."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import chess
from rungbench.agents.loopback import Fault, LoopbackServer
from rungbench.agents.openai_provider import OpenAIProvider
from rungbench.agents.protocol import Agent
from rungbench.causal.build import build_split
from rungbench.causal.evaluate import score_run
from rungbench.cli.run import (
    CAUSAL_TASK,
    build_agent,
    build_schedule,
    demo_stage,
    fen_schedule,
    parse_params,
    puzzle_schedule,
    run,
    start_or_resume,
    validate_causal_answer,
)
from rungbench.errors import InputError, Refusal
from rungbench.evidence.paths import shared_data_dir
from rungbench.execute.policy import RetryPolicy
from rungbench.execute.runner import verify_run

PUZZLES = shared_data_dir() / "lichess_puzzles" / "puzzles.csv"
KAGGLE = shared_data_dir() / "kaggle_chess_positions" / "filtered_chess_positions.jsonl"
KEY = "sk-cli-test-0c7e55d2"


def test_puzzle_cell_is_the_position_after_the_setup_move() -> None:
    """Puzzle tewjc: the cell shows the board after a2a7, and e5e3 is the hidden best move."""
    cell = puzzle_schedule(PUZZLES, limit=3).cells[0]
    board = chess.Board("r5k1/pp3p1p/2b2qp1/3pr3/8/4P2P/R1PN1PP1/Q3K2R w K - 0 19")
    board.push_uci("a2a7")
    assert cell.cell_id == "puzzle-tewjc"
    assert cell.request.metadata["fen"] == board.fen()
    assert cell.request.metadata["best_move"] == "e5e3"
    assert board.fen() in cell.request.messages[-1].content


def test_schedules_rebuild_to_the_same_digest() -> None:
    """Building twice from the same file gives the same frozen schedule digest."""
    assert puzzle_schedule(PUZZLES, limit=5).digest() == puzzle_schedule(PUZZLES, limit=5).digest()
    kaggle = fen_schedule(KAGGLE, limit=4)
    assert [c.cell_id for c in kaggle] == ["fen-00001", "fen-00002", "fen-00003", "fen-00004"]
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


def test_causal_validator_names_inadmissible_fields() -> None:
    """Confidence outside [0, 1] and reversed bounds are illegal answers."""
    from rungbench.agents.protocol import Message, Request

    request = Request("c", (Message("user", "q"),))
    assert "confidence" in str(
        validate_causal_answer(request, "submit_answer", {"status": "answer", "confidence": 1.5})
    )
    assert "bounds" in str(
        validate_causal_answer(request, "submit_answer", {"status": "answer", "bounds": [0.6, 0.2]})
    )
    assert validate_causal_answer(request, "submit_answer", {"status": "abstain"}) is None


def test_adapter_needs_the_public_case_in_metadata(tmp_path: Path) -> None:
    """The causal adapter refuses a request that does not carry its public case."""
    from rungbench.agents.protocol import Message, Request

    bench = tmp_path / "bench"
    build_split("dev", 1, 3, bench, None)
    adapter = build_agent(
        CAUSAL_TASK, agent="reference:oracle", model=None, base_url=None, causal_dir=bench
    )
    with pytest.raises(InputError, match="public case"):
        adapter.respond(Request("c", (Message("user", "q"),)))


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
