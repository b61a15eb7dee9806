"""SIGKILL mid-run, then resume: the CLI against the real openai client on loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from rungbench.agents.loopback import Fault, LoopbackServer
from rungbench.chess.reference_agents import RandomMover
from rungbench.chess.studies.move_choice import puzzle_schedule
from rungbench.evidence.paths import shared_data_dir
from rungbench.execute.events import read_events
from rungbench.execute.runner import load_run, verify_run

KEY = "sk-resume-test-4b1d9e0c77aa5310"
CELLS = 24
CLI = "import typer; from rungbench.cli.run import run; typer.run(run)"


def _cli(args: list[str]) -> subprocess.Popen[bytes]:
    env = {**os.environ, "RB_TEST_KEY": KEY}
    return subprocess.Popen(
        [sys.executable, "-c", CLI, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _finals(events_path: Path) -> set[str]:
    return {str(e["cell"]) for e in read_events(events_path) if e["kind"] == "final"}


def _wait_for_finals(out: Path, at_least: int, proc: subprocess.Popen[bytes]) -> Path:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        runs = list((out / "runs").glob("*/events.jsonl")) if (out / "runs").exists() else []
        if runs and len(_finals(runs[0])) >= at_least:
            return runs[0].parent
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    raise AssertionError("the run made no progress")


def test_sigkill_then_resume_finishes_every_cell_once(tmp_path: Path) -> None:
    """After kill -9 and a resume: one final per cell, one tool_event per call (calls cut off
    by the kill closed as interrupted), digests unchanged, no completed cell re-sent."""
    puzzles = shared_data_dir() / "lichess_puzzles" / "puzzles.csv"
    schedule = puzzle_schedule(puzzles, limit=CELLS)
    digests = [c.request.payload_digest() for c in schedule]
    faults = {
        digests[3]: [Fault.SERVER_ERROR],
        digests[5]: [Fault.GARBAGE_ARGUMENTS],
        digests[20]: [Fault.RATE_LIMIT],
        digests[21]: [Fault.REFUSAL],
    }
    out = tmp_path / "out"
    common = [
        "--model",
        "openai:loopback",
        "--api-key-env",
        "RB_TEST_KEY",
        "--out",
        str(out),
        "--concurrency",
        "2",
        "--backoff",
        "0.05",
        "--json",
    ]
    with LoopbackServer(
        RandomMover(seed=11),
        api_key=KEY,
        requests=[c.request for c in schedule],
        faults=faults,
        delay_s=0.1,
        retry_after_s=0.1,
    ) as server:
        first = _cli([str(puzzles), "--limit", str(CELLS), "--base-url", server.base_url, *common])
        run_dir = _wait_for_finals(out, 8, first)
        os.kill(first.pid, signal.SIGKILL)
        first_out, first_err = first.communicate()
        assert first.returncode == -signal.SIGKILL
        time.sleep(0.3)  # let the server finish requests that were in flight
        done_before = _finals(run_dir / "events.jsonl")
        sent_before = dict(server.counts)
        assert 8 <= len(done_before) < CELLS

        second = _cli(
            [
                str(puzzles),
                "--limit",
                str(CELLS),
                "--resume",
                run_dir.name,
                "--base-url",
                server.base_url,
                *common,
            ]
        )
        second_out, second_err = second.communicate(timeout=120)
        assert second.returncode == 0, second_err.decode()
        summary = json.loads(second_out)

    assert summary["complete"] and summary["cells_final"] == CELLS
    assert summary["session"] == 2 and summary["skipped"] == len(done_before)
    check = verify_run(run_dir)
    assert check.ok, check.problems
    frozen = load_run(run_dir)[1]  # every stored request still hashes to its name
    assert frozen.digest() == schedule.digest()
    assert [c.request_digest for c in frozen] == [c.request_digest for c in schedule]
    by_cell = {c.cell_id: c for c in schedule}
    for cell_id in done_before:
        payload = by_cell[cell_id].request.payload_digest()
        assert server.counts[payload] == sent_before[payload], f"{cell_id} was sent again"
    events = read_events(run_dir / "events.jsonl")
    for event in events:
        if "request_digest" in event:
            assert event["request_digest"] == by_cell[event["cell"]].request_digest
    calls = [(e["cell"], e["attempt"]) for e in events if e["kind"] == "attempt"]
    tool_events = [(e["cell"], e["attempt"]) for e in events if e["kind"] == "tool_event"]
    assert sorted(calls) == sorted(tool_events) and len(set(calls)) == len(calls)
    finals = [e for e in events if e["kind"] == "final"]
    assert sorted(e["cell"] for e in finals) == sorted(by_cell)
    outcomes = {e["cell"]: e["outcome"] for e in finals}
    assert outcomes[schedule.cells[5].cell_id] == "malformed"
    assert outcomes[schedule.cells[21].cell_id] == "refusal"
    assert outcomes[schedule.cells[3].cell_id] == "answered"

    written = [p for p in out.rglob("*") if p.is_file()]
    assert len(written) > CELLS  # manifest, log, schedule, requests and responses were written
    for path in written:
        assert KEY.encode() not in path.read_bytes(), f"API key found in {path}"
    for stream in (first_out, first_err, second_out, second_err):
        assert KEY.encode() not in stream


def test_sigkill_mid_batch_under_group_commit_loses_and_repeats_nothing(tmp_path: Path) -> None:
    """kill -9 while 12 cells are in flight and batches are being committed: the log verifies,
    no cell has two finals, every attempt left open is closed as interrupted on resume, and no
    cell whose final was on disk at the kill is sent again."""
    cells = 60
    puzzles = shared_data_dir() / "lichess_puzzles" / "puzzles.csv"
    schedule = puzzle_schedule(puzzles, limit=cells)
    out = tmp_path / "out"
    common = ["--model", "openai:loopback", "--api-key-env", "RB_TEST_KEY", "--out", str(out),
              "--concurrency", "12", "--json"]
    with LoopbackServer(RandomMover(seed=5), api_key=KEY, requests=[c.request for c in schedule],
                        delay_s=0.03) as server:
        first = _cli([str(puzzles), "--limit", str(cells), "--base-url", server.base_url, *common])
        run_dir = _wait_for_finals(out, 15, first)
        os.kill(first.pid, signal.SIGKILL)
        first.communicate()
        assert first.returncode == -signal.SIGKILL
        time.sleep(0.2)
        killed = read_events(run_dir / "events.jsonl")  # verifies the chain and one final a cell
        done_before = {str(e["cell"]) for e in killed if e["kind"] == "final"}
        answered = {(e["cell"], e["attempt"]) for e in killed if e["kind"] == "tool_event"}
        open_at_kill = [(e["cell"], e["attempt"]) for e in killed
                        if e["kind"] == "attempt" and (e["cell"], e["attempt"]) not in answered]
        sent_before = dict(server.counts)
        assert 15 <= len(done_before) < cells and open_at_kill
        second = _cli([str(puzzles), "--limit", str(cells), "--resume", run_dir.name,
                       "--base-url", server.base_url, *common])
        second_out, second_err = second.communicate(timeout=120)
        assert second.returncode == 0, second_err.decode()
    summary = json.loads(second_out)
    assert summary["complete"] and summary["skipped"] == len(done_before)
    assert verify_run(run_dir).ok
    events = read_events(run_dir / "events.jsonl")
    finals = [str(e["cell"]) for e in events if e["kind"] == "final"]
    assert sorted(finals) == sorted(c.cell_id for c in schedule)
    closed = {(e["cell"], e["attempt"]) for e in events
              if e["kind"] == "tool_event" and e["outcome"] == "interrupted"}
    assert set(open_at_kill) <= closed
    attempts = [(e["cell"], e["attempt"]) for e in events if e["kind"] == "attempt"]
    tool_events = [(e["cell"], e["attempt"]) for e in events if e["kind"] == "tool_event"]
    assert sorted(attempts) == sorted(tool_events) and len(set(attempts)) == len(attempts)
    by_cell = {c.cell_id: c.request.payload_digest() for c in schedule}
    for cell_id in done_before:
        assert server.counts[by_cell[cell_id]] == sent_before[by_cell[cell_id]], cell_id
