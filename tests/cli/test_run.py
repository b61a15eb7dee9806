"""``rungbench run``: schedule and agent dispatch, start/resume, and the command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from rungbench.agents.loopback import Fault, LoopbackServer
from rungbench.agents.protocol import Request, Response
from rungbench.agents.providers import loopback_spec
from rungbench.agents.spec import AgentSpec, parse_agent
from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.evaluate import score_run
from rungbench.chess.studies.move_choice import fen_schedule
from rungbench.cli.run import run
from rungbench.errors import InputError, Refusal
from rungbench.evidence.paths import shared_data_dir
from rungbench.execute.policy import RetryPolicy
from rungbench.execute.runner import verify_run
from rungbench.execute.tasks import build_agent
from rungbench.jobs.runs import build_schedule, parse_params, start_or_resume

PUZZLES = shared_data_dir() / "lichess_puzzles" / "puzzles.csv"
KAGGLE = shared_data_dir() / "kaggle_chess_positions" / "filtered_chess_positions.jsonl"
KEY = "sk-cli-test-0c7e55d2"


def test_schedule_source_dispatches_a_fen_jsonl() -> None:
    """A .jsonl SCHEDULE builds the same frozen schedule as the FEN-JSONL builder."""
    kaggle = fen_schedule(KAGGLE, limit=4)
    assert build_schedule(KAGGLE, limit=4).digest() == kaggle.digest()


def _reference(name: str) -> AgentSpec:
    return parse_agent(name)


def test_resume_with_another_schedule_is_refused(tmp_path: Path) -> None:
    """Resuming with a SCHEDULE that does not rebuild the frozen one is a refusal."""
    first = start_or_resume(
        source=PUZZLES,
        out=tmp_path,
        resume=None,
        spec=_reference("reference:random"),
        limit=4,
        quiet=True,
    )
    assert first["complete"] and first["outcomes"] == {"answered": 4}
    with pytest.raises(Refusal) as caught:
        start_or_resume(
            source=PUZZLES,
            out=tmp_path,
            resume=first["run_id"],
            spec=_reference("reference:random"),
            limit=5,
            quiet=True,
        )
    assert caught.value.codes == ("different",)


def test_causal_bench_runs_through_the_real_client_and_scores(tmp_path: Path) -> None:
    """Public cases become submit_answer cells; the run's answers score with the bench scorer.

    The oracle answers every case correctly; one case gets garbage arguments (a model
    failure: scored invalid) and one fails with HTTP 500 on every attempt (a reliability
    outcome: no final outcome, the run incomplete, the case reported missing). No case
    disappears.
    """
    bench = tmp_path / "bench"
    build_split("dev", 1, 3, bench, None)
    schedule = build_schedule(bench)
    oracle = build_agent(parse_agent("reference:oracle"), schedule.task, bench)
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
            spec=loopback_spec(server.base_url, KEY, "bench")[0],
            environ=loopback_spec(server.base_url, KEY, "bench")[1],
        )
    n = len(schedule)
    assert not summary["complete"] and summary["unresolved"] == 1
    assert summary["outcomes"] == {"answered": n - 2, "malformed": 1}
    assert summary["unresolved_outcomes"] == {"provider_error": 1}
    assert summary["agent_responses"] == {"responses": n - 2, "invalid": 1, "missing": 1}
    scored = score_run(bench, Path(summary["run_dir"]), "bench")
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
    """--agent together with --model (one option, two spellings) is a usage error: exit 2,
    one JSON document."""
    from rungbench.cli import app

    result = CliRunner().invoke(app, ["run", str(PUZZLES), "--agent", "reference:random",
                                      "--model", "openai:x", "--json", "--out", str(tmp_path)])
    assert result.exit_code == 2
    document = json.loads(result.stdout)
    assert document["ok"] is False and "give one agent" in document["message"]
    assert not (tmp_path / "runs").exists()


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


def test_a_model_run_through_helper_processes_completes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`run --model ... --client-processes 2` against the loopback server: every cell final
    and answered, the run verifies, one JSON document."""
    from rungbench.chess.reference_agents import RandomMover, fen_metadata, validate_move

    monkeypatch.setenv("RB_HELPER_KEY", KEY)
    with LoopbackServer(RandomMover(seed=1), api_key=KEY, metadata_fn=fen_metadata) as server:
        result = CliRunner().invoke(_app(), [
            str(PUZZLES), "--model", "openai:loopback", "--base-url", server.base_url,
            "--api-key-env", "RB_HELPER_KEY", "--client-processes", "2", "--limit", "8",
            "--concurrency", "4", "--max-attempts", "1", "--json", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["complete"] and summary["outcomes"] == {"answered": 8}
    assert verify_run(Path(summary["run_dir"]), validate_move).ok
    assert KEY not in result.output


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
    """A spec that names no key variable reads the provider's default variable."""
    from rungbench.agents import openai_provider

    spec = parse_agent("openai:m", base_url="http://127.0.0.1:1/v1")
    assert spec.api_key_env == openai_provider.DEFAULT_API_KEY_ENV


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
        "no schedule at all": (["--agent", "reference:random"],
                               "give a schedule source, or a run to resume (argument SCHEDULE)"),
        "unknown reference agent": ([puzzles, "--agent", "reference:grandmaster"],
                                    "unknown reference agent 'grandmaster'"),
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


def _usage_inputs() -> dict[str, tuple[list[str], str]]:
    """Name → (arguments, fragment of the one usage line) for agents `run` cannot name."""
    puzzles = str(PUZZLES)
    return {
        "agent of another kind": ([puzzles, "--agent", "human:me"], "planted:NAME or "
                                  "reference:NAME"),
        "label without a models file": ([puzzles, "--model", "gpt-4o", "--base-url",
                                         "http://x"], "--base-url shapes a --model spec"),
        "label alone": ([puzzles, "--model", "gpt-4o"], "give the models file"),
        "model without name": ([puzzles, "--model", "openai:", "--base-url", "http://x"],
                               "openai:MODEL"),
        "model without base url": ([puzzles, "--model", "openai:m"], "needs a base URL"),
        "helpers for a reference agent": ([puzzles, "--agent", "reference:random",
                                           "--client-processes", "1"],
                                          "--client-processes is for openai:MODEL agents"),
        "key variable and no key": ([puzzles, "--model", "openai:m", "--base-url",
                                     "http://127.0.0.1:9/v1", "--api-key-env", "K",
                                     "--no-api-key"], "not both"),
    }


def test_an_agent_the_options_cannot_name_is_one_usage_line(tmp_path: Path) -> None:
    """Options that name no agent exit 2 with one usage line naming the option (one JSON
    document under --json), before anything is written."""
    from rungbench.cli import app

    for name, (args, fragment) in _usage_inputs().items():
        out = tmp_path / "out"
        plain = CliRunner().invoke(app, ["run", *args, "--out", str(out)])
        assert plain.exit_code == 2, (name, plain.output)
        lines = plain.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("usage error") and fragment in lines[0], (
            name, plain.stderr)
        as_json = CliRunner().invoke(app, ["run", *args, "--out", str(out), "--json"])
        document = json.loads(as_json.stdout)
        assert as_json.exit_code == 2 and fragment in document["message"], (name, document)
        assert not out.exists(), name


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
    bar draws, no cell gets a final outcome (exit 1), and the key is in no file and no output."""
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
    assert done.returncode == 1, terminal.decode(errors="replace")
    assert served == 8  # four cells, two identical attempts each
    assert b"4/4" in terminal and b"ETA" in terminal  # the Rich bar was drawn
    assert b"4 of 4 cells have no final outcome" in terminal
    assert b"provider_error" in done.stdout and b"0/4 cells final" in done.stdout
    written = [p for p in out.rglob("*") if p.is_file()]
    events = next(p for p in written if p.name == "events.jsonl").read_bytes()
    assert events.count(b'"outcome":"provider_error"') == 8 + 4  # tool_events, unresolved
    assert b"[redacted]" in events  # the echoed key reached the run, scrubbed
    for path in written:
        assert KEY.encode() not in path.read_bytes(), path
    assert KEY.encode() not in done.stdout and KEY.encode() not in terminal


# ---------------------------------------------------------------- hardening (issue 11)


def _fens(tmp_path: Path, fens: list[str]) -> Path:
    path = tmp_path / "cells.jsonl"
    path.write_text("".join(json.dumps({"fen": f, "id": f"p{i}"}) + "\n"
                            for i, f in enumerate(fens)))
    return path


def test_checkmate_fen_is_refused_at_schedule_build(tmp_path: Path) -> None:
    """`run` on a JSONL holding a checkmate exits 1 naming the file, line and field 'fen';
    no run is created."""
    path = _fens(tmp_path, ["8/8/8/4k3/8/8/4P3/4K3 w - - 0 1", "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1"])
    result = CliRunner().invoke(_app(), [str(path), "--agent", "reference:random", "--out",
                                         str(tmp_path / "out"), "--json"])
    assert result.exit_code == 1, result.output
    message = json.loads(result.stdout)["message"]
    assert f"{path}:2:" in message and "(field 'fen')" in message
    assert not (tmp_path / "out" / "runs").exists()


@pytest.mark.parametrize("key", ["messages", "tools", "tool_choice", "model"])
def test_param_owned_by_the_frozen_request_is_a_usage_error(tmp_path: Path, key: str) -> None:
    """--param KEY=… for a key the frozen request owns exits 2 naming --param and the key."""
    result = CliRunner().invoke(_app(), [
        str(PUZZLES), "--model", "openai:m", "--base-url", "http://127.0.0.1:9/v1",
        "--param", f'{key}=[{{"role":"user","content":"hi"}}]', "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "--param" in result.stderr and f"'{key}'" in result.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(("args", "option"), [
    (["--base-url", "file:///etc/passwd"], "--base-url"),
    (["--base-url", "http://"], "--base-url"),
    (["--backoff", "soon"], "--backoff"),
    (["--backoff", "-1"], "--backoff"),
    (["--timeout", "0"], "--timeout"),
    (["--timeout", "nan"], "--timeout"),
    (["--usd-per-mtok-in", "nan"], "--usd-per-mtok-in"),
    (["--client-processes", "-1"], "--client-processes"),
    (["--client-processes", "17"], "--client-processes"),
])
def test_coerced_options_are_usage_errors(tmp_path: Path, args: list[str], option: str) -> None:
    """A non-HTTP base URL, bad backoff, non-positive timeout or NaN price exits 2 naming it."""
    result = CliRunner().invoke(_app(), [str(PUZZLES), "--model", "openai:m", "--base-url",
                                         "http://127.0.0.1:9/v1", *args, "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert option in result.stderr
    assert not (tmp_path / "runs").exists()


def test_out_that_is_a_file_is_one_line_naming_it(tmp_path: Path) -> None:
    """`run SCHEDULE --out FILE` exits 1 with one line saying a file is where the folder
    should be, naming the path."""
    target = tmp_path / "afile"
    target.write_text("x")
    result = CliRunner().invoke(_app(), [str(PUZZLES), "--agent", "reference:random",
                                         "--limit", "2", "--out", str(target)])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    expected = f"{target}: the output folder is a file (option --out)"
    assert len(lines) == 1 and expected in lines[0], result.stderr


def _resume(tmp_path: Path, run_id: str, *extra: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(_app(), ["--agent", "reference:random", "--resume", run_id,
                                         "--out", str(tmp_path), *extra])
    return result.exit_code, result.stdout, result.stderr


def _finished_run(tmp_path: Path) -> tuple[str, Path]:
    first = CliRunner().invoke(_app(), [str(PUZZLES), "--limit", "4", "--agent",
                                        "reference:random", "--out", str(tmp_path), "--json"])
    assert first.exit_code == 0, first.output
    summary = json.loads(first.stdout)
    return summary["run_id"], Path(summary["run_dir"]) / "events.jsonl"


@pytest.mark.parametrize("mode", [[], ["--json"]])
def test_edited_final_outcome_is_refused_on_resume(tmp_path: Path, mode: list[str]) -> None:
    """A final outcome edited in events.jsonl (answered → illegal) makes a resume exit 1
    naming the file and line, in table and JSON mode."""
    run_id, events = _finished_run(tmp_path)
    data = events.read_bytes()
    at = data.rindex(b'"outcome":"answered"')
    events.write_bytes(data[:at] + b'"outcome":"illegal"' + data[at + 20:])
    code, stdout, stderr = _resume(tmp_path, run_id, *mode)
    assert code == 1
    message = json.loads(stdout)["message"] if mode else stderr
    assert f"{events}:" in message and "chain broken" in message


@pytest.mark.parametrize("mode", [[], ["--json"]])
def test_duplicated_final_is_refused_in_both_modes(tmp_path: Path, mode: list[str]) -> None:
    """A final line duplicated in events.jsonl makes the resume (and its summary) exit 1
    naming the file, whatever the output mode; no table of 5 outcomes for 4 cells is shown."""
    run_id, events = _finished_run(tmp_path)
    lines = events.read_bytes().splitlines(keepends=True)
    final = next(ln for ln in lines if b'"kind":"final"' in ln)
    events.write_bytes(b"".join(lines) + final)
    code, stdout, stderr = _resume(tmp_path, run_id, *mode)
    assert code == 1
    message = json.loads(stdout)["message"] if mode else stderr
    assert f"{events}:" in message
    assert "final outcome" not in (stdout if not mode else "")


def test_all_network_errors_exit_one_and_resume_retries(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every request of a session dropped (network errors): exit 1 and a summary saying 3 of 3
    cells have no final outcome; --resume sends them again (a fresh per-session limit) and
    finishes the run with exit 0."""
    monkeypatch.setenv("RB_NET_KEY", KEY)
    down = [True]
    schedule = build_schedule(PUZZLES, limit=3)
    server = LoopbackServer(build_agent(_reference("reference:random"), schedule.task), api_key=KEY,
                            requests=[c.request for c in schedule],
                            fault_plan=lambda key, index: Fault.DROP if down[0] else None)
    with server:
        common = ["--model", "openai:loopback", "--base-url", server.base_url, "--api-key-env",
                  "RB_NET_KEY", "--max-attempts", "2", "--backoff", "0", "--out",
                  str(tmp_path), "--json"]
        first = CliRunner().invoke(_app(), [str(PUZZLES), "--limit", "3", *common])
        assert first.exit_code == 1, first.output
        summary = json.loads(first.stdout)
        assert summary["ok"] is False and summary["error"] == "incomplete"
        assert "3 of 3 cells have no final outcome" in summary["message"]
        assert summary["unresolved_outcomes"] == {"network_error": 3}
        assert len(server.served) == 6
        down[0] = False
        second = CliRunner().invoke(_app(), ["--resume", summary["run_id"], *common])
    assert second.exit_code == 0, second.output
    done = json.loads(second.stdout)
    assert done["complete"] and done["outcomes"] == {"answered": 3} and done["sent"] == 3


def test_resume_refusal_names_the_differing_agent_setting(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Resuming with the same model but another --timeout is refused (exit 3) with a detail
    naming agent.timeout_s and both values."""
    monkeypatch.setenv("RB_DIFF_KEY", KEY)
    schedule = build_schedule(PUZZLES, limit=2)
    with LoopbackServer(build_agent(_reference("reference:random"), schedule.task), api_key=KEY,
                        requests=[c.request for c in schedule]) as server:
        common = ["--model", "openai:fake-1", "--base-url", server.base_url, "--api-key-env",
                  "RB_DIFF_KEY", "--out", str(tmp_path), "--json"]
        first = CliRunner().invoke(_app(), [str(PUZZLES), "--limit", "2", "--max-cells", "1",
                                            "--timeout", "5", *common])
        run_id = json.loads(first.stdout)["run_id"]
        again = CliRunner().invoke(_app(), ["--resume", run_id, "--timeout", "6", *common])
    assert again.exit_code == 3, again.output
    detail = json.loads(again.stdout)["reasons"][0]["detail"]
    assert "agent.timeout_s: 5.0 (run) vs 6.0 (now)" in detail


def test_a_library_field_is_shown_as_the_commands_option(tmp_path: Path) -> None:
    """The library names a field (``api_key_env``); the command's one error line names the
    option that sets it (``--api-key-env``), and a positional argument by its name."""
    from rungbench.cli import app

    unset = CliRunner().invoke(app, ["run", str(PUZZLES), "--model", "openai:m", "--base-url",
                                     "http://127.0.0.1:9/v1", "--api-key-env", "RB_UNSET_VAR_X",
                                     "--out", str(tmp_path)])
    assert unset.exit_code == 1 and unset.stderr.strip().endswith("(option --api-key-env)")
    assert "(field" not in unset.stderr
    none = CliRunner().invoke(app, ["run", "--agent", "reference:random", "--out",
                                    str(tmp_path)])
    assert none.exit_code == 1 and none.stderr.strip().endswith("(argument SCHEDULE)")
