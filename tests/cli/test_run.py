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
from rungbench.agents.protocol import Agent, Request, Response
from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.evaluate import score_run
from rungbench.chess.studies.move_choice import fen_schedule
from rungbench.cli.run import run
from rungbench.errors import InputError, Refusal
from rungbench.evidence.paths import shared_data_dir
from rungbench.execute.policy import RetryPolicy
from rungbench.execute.runner import verify_run
from rungbench.jobs.runs import build_agent, build_schedule, parse_params, start_or_resume

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


def test_cli_import_leaves_the_sdk_and_the_domains_unloaded() -> None:
    """Importing the CLI (``rungbench --version``) loads neither openai nor the causal library."""
    import subprocess
    import sys

    heavy = ["openai", "rungbench.agents.openai_provider", "rungbench.causal.bench.requests",
             "rungbench.causal.bench.build", "rungbench.causal.bench.evaluate",
             "rungbench.execute.runner"]
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

    run_module = importlib.import_module("rungbench.jobs.runs")
    assert run_module.DEFAULT_API_KEY_ENV == openai_provider.DEFAULT_API_KEY_ENV


def _bad_inputs(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    """Name → (arguments, fragment of the one error line) for inputs `run` must refuse."""
    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text('{"fen": "8/8/8/4k3/8/8/4P3/4K3 w - - 0 1"}\nnot json\n')
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b'{"fen": "8/8/8/4k3/8/8/4P3/4K3 w - - 0 1"}\n\xff\xfe\n')
    bad_fen = tmp_path / "fen.jsonl"
    bad_fen.write_text('{"fen": "garbage w - - 0 1"}\n')
    bad_best = tmp_path / "best.csv"
    bad_best.write_text("PuzzleId,FEN,Moves\nx,8/8/8/4k3/8/8/4P3/4K3 w - - 0 1,e2e4 e5e3\n")
    puzzles = str(PUZZLES)
    return {
        "missing schedule file": ([str(tmp_path / "nope.csv"), "--agent", "reference:random"],
                                  "schedule source does not exist"),
        "no schedule at all": (["--agent", "reference:random"], "give a SCHEDULE"),
        "unknown reference agent": ([puzzles, "--agent", "reference:grandmaster"],
                                    "unknown reference agent 'grandmaster'"),
        "agent of another kind": ([puzzles, "--agent", "human:me"], "reference:NAME"),
        "model without provider": ([puzzles, "--model", "gpt-4o", "--base-url", "http://x"],
                                   "--model must be openai:MODEL"),
        "model without name": ([puzzles, "--model", "openai:", "--base-url", "http://x"],
                               "--model must be openai:MODEL"),
        "model without base url": ([puzzles, "--model", "openai:m"], "--base-url"),
        "unset key variable": ([puzzles, "--model", "openai:m", "--base-url",
                                "http://127.0.0.1:9/v1", "--api-key-env", "RB_UNSET_KEY_VAR"],
                               "'RB_UNSET_KEY_VAR'"),
        "line that is not JSON": ([str(bad_json), "--agent", "reference:random"],
                                  "bad.jsonl:2: not a position record"),
        "bytes that are not UTF-8": ([str(binary), "--agent", "reference:random"],
                                     "binary.jsonl:2: not UTF-8"),
        "invalid FEN": ([str(bad_fen), "--agent", "reference:random"], "fen.jsonl:1: invalid FEN"),
        "illegal best move": ([str(bad_best), "--agent", "reference:random"],
                              "best.csv:2: best move 'e5e3' is not legal"),
        "unknown run to resume": (["--resume", "no-such-run", "--agent", "reference:random"],
                                  "no run 'no-such-run'"),
        "bad backoff": ([puzzles, "--agent", "reference:random", "--backoff", "soon"],
                        "--backoff"),
    }


def test_bad_input_is_one_clear_line_and_exit_one(tmp_path: Path) -> None:
    """Every bad input exits 1 with one error line on stderr (nothing on stdout, no run
    written), and under --json with one JSON document naming the problem."""
    for name, (args, fragment) in _bad_inputs(tmp_path).items():
        out = tmp_path / "out"
        plain = CliRunner().invoke(_app(), [*args, "--out", str(out)])
        assert plain.exit_code == 1, (name, plain.output)
        assert plain.stdout == "", (name, plain.stdout)
        lines = plain.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error ") and fragment in lines[0], (
            name, plain.stderr)
        as_json = CliRunner().invoke(_app(), [*args, "--out", str(out), "--json"])
        document = json.loads(as_json.stdout)
        assert as_json.exit_code == 1 and document["ok"] is False, name
        assert fragment in document["message"], (name, document)
        assert not (out / "runs").exists() or not any((out / "runs").iterdir()), name


def test_resume_refusals_exit_three_with_reason_codes(tmp_path: Path) -> None:
    """Resuming with another agent or another schedule is a refusal: exit 3, code 'different'."""
    first = CliRunner().invoke(_app(), [str(PUZZLES), "--limit", "3", "--agent",
                                        "reference:random", "--out", str(tmp_path), "--json"])
    run_id = json.loads(first.stdout)["run_id"]
    for args in (["--agent", "reference:ideas-limited"],
                 [str(PUZZLES), "--limit", "4", "--agent", "reference:random"]):
        refused = CliRunner().invoke(
            _app(), [*args, "--resume", run_id, "--out", str(tmp_path), "--json"]
        )
        assert refused.exit_code == 3, refused.output
        document = json.loads(refused.stdout)
        assert document["refused"] is True and document["gate"] == "resume"
        assert [r["code"] for r in document["reasons"]] == ["different"]
        plain = CliRunner().invoke(_app(), [*args, "--resume", run_id, "--out", str(tmp_path)])
        assert plain.exit_code == 3 and plain.stderr.startswith("refused")
        assert "different" in plain.stderr


def test_causal_bench_built_by_the_cli_runs_through_the_cli(tmp_path: Path) -> None:
    """`rungbench causal build` writes a split; `rungbench run DIR --agent reference:oracle
    --json` answers every public case as one cell and the answers all score correct."""
    from rungbench.cli import app

    bench = tmp_path / "bench"
    built = CliRunner().invoke(app, ["causal", "build", "--split", "dev", "--seed", "5",
                                     "--worlds", "1", "--out", str(bench), "--json"])
    assert built.exit_code == 0, built.output
    cases = json.loads(built.stdout)["n_cases"]
    ran = CliRunner().invoke(app, ["run", str(bench), "--agent", "reference:oracle",
                                   "--out", str(tmp_path / "out"), "--json"])
    assert ran.exit_code == 0, ran.output
    summary = json.loads(ran.stdout)
    assert summary["task"] == "causal.public_case/1" and summary["complete"]
    assert summary["cells"] == cases and summary["outcomes"] == {"answered": cases}
    assert summary["agent_responses"] == {"responses": cases, "invalid": 0, "missing": 0}
    scored = score_run(bench, Path(summary["run_dir"]), "reference:oracle")
    assert scored["outcomes"]["correct"] + scored["outcomes"]["correct_non_id"] == cases


class _LeakyBackend:
    """Fails every request with an error whose text quotes the key (the 500 body echoes it)."""

    name = "leaky"

    def respond(self, request: Request) -> Response:
        raise RuntimeError(f"upstream rejected credentials {KEY}")


def test_failing_provider_run_with_a_progress_bar_writes_no_key(tmp_path: Path) -> None:
    """A run whose every call fails with the key echoed in the error body, on a terminal: the
    bar draws, every cell ends provider_error, and the key is in no file and no output."""
    import os
    import pty
    import subprocess
    import sys
    import threading

    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items()
           if k not in ("NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "CI")}
    env.update({"RB_LEAK_KEY": KEY, "TERM": "xterm", "COLUMNS": "150"})
    master, slave = pty.openpty()
    captured: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                return
            if not chunk:
                return
            captured.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    with LoopbackServer(_LeakyBackend(), api_key=KEY) as server:
        done = subprocess.run(
            [sys.executable, "-c", "import typer; from rungbench.cli.run import run; "
             "typer.run(run)", str(PUZZLES), "--limit", "4", "--model", "openai:loopback",
             "--base-url", server.base_url, "--api-key-env", "RB_LEAK_KEY", "--out", str(out),
             "--max-attempts", "2", "--backoff", "0", "--concurrency", "2"],
            env=env, stdout=subprocess.PIPE, stderr=slave, timeout=60, check=False,
        )
        served = len(server.served)
    os.close(slave)
    reader.join(timeout=5)
    os.close(master)
    terminal = b"".join(captured)
    assert done.returncode == 0, terminal.decode(errors="replace")
    assert served == 8  # four cells, two identical attempts each
    assert b"4/4" in terminal and b"ETA" in terminal  # the Rich bar was drawn
    assert b"provider_error" in done.stdout and b"4/4 cells final" in done.stdout
    written = [p for p in out.rglob("*") if p.is_file()]
    events = next(p for p in written if p.name == "events.jsonl").read_bytes()
    assert events.count(b'"outcome":"provider_error"') == 8 + 4  # tool_events and finals
    assert b"[redacted]" in events  # the echoed key reached the run, scrubbed
    for path in written:
        assert KEY.encode() not in path.read_bytes(), path
    assert KEY.encode() not in done.stdout and KEY.encode() not in terminal
