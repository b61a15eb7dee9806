"""A run against an endpoint that cannot answer stops fast and says why; Ctrl-C stops it cleanly.

Against a stopped server, a 401 or an unknown model every cell would otherwise run its whole
retry ladder (2, 8, 30 s waits) and an 880-cell run would go on for hours; the runner stops
after the policy's count of systematically failing cells in a row, keeps what finished, and
the command prints the status, the body's first line, the endpoint and the resume command.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from rungbench.agents.loopback import LoopbackServer
from rungbench.agents.providers import loopback_key
from rungbench.agents.spec import parse_agent
from rungbench.chess import reference_agents as chess_agents
from rungbench.cli import app
from rungbench.evidence.paths import shared_data_dir
from rungbench.execute.events import read_events
from rungbench.execute.policy import RetryPolicy
from rungbench.jobs.runs import build_schedule, start_or_resume

PUZZLES = shared_data_dir() / "lichess_puzzles" / "puzzles.csv"
RUNGBENCH = Path(sys.executable).with_name("rungbench")


def _closed_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def _mover(limit: int) -> tuple[LoopbackServer, str]:
    schedule = build_schedule(PUZZLES, limit=limit)
    key = loopback_key()
    server = LoopbackServer(chess_agents.RandomMover(seed=1), api_key=key,
                            requests=[c.request for c in schedule])
    return server, key


def test_a_stopped_server_stops_the_run_after_three_cells(tmp_path: Path) -> None:
    """Nothing listening: three cells in a row fail once each (no retry ladder) and the
    session stops; the cells already taken by a worker are sent at most (one call slot, two
    workers: at most four sends), the rest never are; a resume against a live server
    finishes every cell once."""
    spec = parse_agent("openai:m", base_url=_closed_url(), api_key_env="K", timeout_s=5)
    started = time.monotonic()
    summary = start_or_resume(source=PUZZLES, out=tmp_path, resume=None, spec=spec, limit=40,
                              concurrency=1, quiet=True, environ={"K": "k" * 16},
                              policy=RetryPolicy(max_attempts=4, backoff_s=(2.0, 8.0, 30.0)))
    assert time.monotonic() - started < 20
    stopped = summary["stopped"]
    assert stopped["reason"] == "systematic_failure" and stopped["cells"] == 3
    assert stopped["outcome"] == "network_error" and 3 <= summary["sent"] <= 4
    assert not summary["complete"] and summary["cells_final"] == 0
    events = read_events(Path(summary["run_dir"]) / "events.jsonl")
    assert sum(e["kind"] == "unresolved" for e in events) == summary["sent"]
    server, key = _mover(40)
    with server:  # the endpoint moved (another URL): the same agent, so the run resumes
        live = parse_agent("openai:m", base_url=server.base_url, api_key_env="K", timeout_s=5)
        done = start_or_resume(source=PUZZLES, out=tmp_path, resume=summary["run_id"],
                               spec=live, limit=40, quiet=True, environ={"K": key},
                               concurrency=4)
    assert done["complete"] and done["cells_final"] == 40


def test_a_refused_key_is_reported_with_status_body_endpoint_and_resume(tmp_path: Path) -> None:
    """`rungbench run` against a 401: exit 1 within seconds, one line naming HTTP 401, the
    body's first line, the endpoint model id and URL, and the exact resume command."""
    server, _ = _mover(30)
    env = {**os.environ, "RB_WRONG_KEY": "sk-not-the-right-key-0000"}
    with server:
        started = time.monotonic()
        result = CliRunner().invoke(app, ["run", str(PUZZLES), "--limit", "30", "--model",
                                          "openai:vendor/m-1", "--base-url", server.base_url,
                                          "--api-key-env", "RB_WRONG_KEY", "--out",
                                          str(tmp_path), "--json"], env=env)
        elapsed = time.monotonic() - started
    assert result.exit_code == 1 and elapsed < 20, result.output
    doc = json.loads(result.stdout)
    message = doc["message"]
    assert "HTTP 401" in message and "invalid api key" in message
    assert "'vendor/m-1'" in message and server.base_url in message
    assert f"--resume {doc['run_id']}" in message and message.count("\n") == 0
    # four calls in flight and four cells prepared: at most eight more than the three
    assert 3 <= doc["sent"] <= 11 and doc["stopped"]["status"] == 401


def test_stop_after_zero_runs_every_retry(tmp_path: Path) -> None:
    """``stop_after_systematic=0`` keeps the former behaviour: every cell runs its retries."""
    spec = parse_agent("openai:m", base_url=_closed_url(), api_key_env="K", timeout_s=5)
    summary = start_or_resume(source=PUZZLES, out=tmp_path, resume=None, spec=spec, limit=4,
                              concurrency=2, quiet=True, environ={"K": "k" * 16},
                              policy=RetryPolicy(max_attempts=2, backoff_s=(0.0,),
                                                 stop_after_systematic=0))
    assert summary["stopped"] is None and summary["sent"] == 8


def test_ctrl_c_stops_within_two_seconds_and_prints_the_resume_command(tmp_path: Path) -> None:
    """SIGINT to a running `rungbench run` (a slow endpoint, 200 cells): exit 130 within 2 s,
    one line naming the run id and the resume command; that command then finishes the run
    with every cell final exactly once."""
    schedule = build_schedule(PUZZLES, limit=200)
    key = loopback_key()
    env = {**os.environ, "RB_SLOW_KEY": key}
    with LoopbackServer(chess_agents.RandomMover(seed=2), api_key=key, delay_s=0.3,
                        requests=[c.request for c in schedule]) as server:
        args = [str(RUNGBENCH), "run", str(PUZZLES), "--limit", "200", "--model",
                "openai:m", "--base-url", server.base_url, "--api-key-env", "RB_SLOW_KEY",
                "--out", str(tmp_path), "--concurrency", "4"]
        child = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(server.served) < 12:
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        sent_at = time.monotonic()
        _, err = child.communicate(timeout=30)
        took = time.monotonic() - sent_at
        assert child.returncode == 130 and took < 2.0, (child.returncode, took, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error interrupted: run "), err
        resume = lines[0].split("resume: ", 1)[1]
        run_id = lines[0].split("run ", 1)[1].split(" ", 1)[0]
        assert resume.endswith(f"--resume {run_id}")
        command = shlex.split(resume)
        assert command[0] == "rungbench"
        again = subprocess.run([str(RUNGBENCH), *command[1:]], env=env, capture_output=True,
                               text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    events = read_events(tmp_path / "runs" / run_id / "events.jsonl")
    finals = [e["cell"] for e in events if e["kind"] == "final"]
    assert len(finals) == len(set(finals)) == 200
