"""Every reader of a run's log goes through one verified read: chain, order, consistency,
and every final outcome re-derived from the stored response it names."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rungbench.chess.reference_agents import RandomMover, move_choice_request, validate_move
from rungbench.errors import IntegrityError
from rungbench.execute.events import CHAIN, chained_lines, read_events
from rungbench.execute.policy import RetryPolicy
from rungbench.execute.runner import create_run, describe_agent, execute_run, verify_run
from rungbench.execute.schedule import Schedule

FEN = "8/8/8/4k3/8/8/4P3/4K3 w - - 0 1"


def _finished(tmp_path: Path, n: int = 3) -> Path:
    schedule = Schedule.of("chess.move_choice/1", "t",
                           [move_choice_request(f"c{i}", FEN) for i in range(n)])
    agent = RandomMover(seed=2)
    run_dir = create_run(tmp_path, schedule, describe_agent(agent),
                         policy=RetryPolicy(max_attempts=2, backoff_s=(0.0,)))
    execute_run(run_dir, agent, validator=validate_move)
    return run_dir


def _forge(run_dir: Path, edit: Any) -> None:
    """Rewrite the log through ``edit`` and recompute the whole chain (a keyless forgery)."""
    records = [{k: v for k, v in r.items() if k != CHAIN}
               for r in read_events(run_dir / "events.jsonl")]
    (run_dir / "events.jsonl").write_bytes(chained_lines(edit(records))[0])


def test_forged_final_and_tool_event_are_refused_by_the_stored_response(tmp_path: Path) -> None:
    """Outcome answered → illegal in both the tool_event and the final, chain recomputed: the
    stored response still classifies as answered, so verify_run and resume refuse."""
    run_dir = _finished(tmp_path)

    def edit(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**r, "outcome": "illegal"} if r.get("cell") == "c1" and "outcome" in r else r
                for r in records]

    _forge(run_dir, edit)
    with pytest.raises(IntegrityError, match=r"'c1' says 'illegal'.*classifies as 'answered'"):
        verify_run(run_dir, validate_move)
    with pytest.raises(IntegrityError, match=r"events\.jsonl"):
        execute_run(run_dir, RandomMover(seed=2), validator=validate_move)


def test_forged_duplicate_final_is_refused_with_its_line(tmp_path: Path) -> None:
    """A second final for a cell, even with a recomputed chain, is refused naming its line."""
    run_dir = _finished(tmp_path)
    _forge(run_dir, lambda rs: [*rs, next(r for r in rs if r["kind"] == "final")])
    with pytest.raises(IntegrityError, match=r"events.jsonl:\d+: final for cell .* after its"):
        verify_run(run_dir)


def test_final_that_differs_from_its_tool_event_is_refused(tmp_path: Path) -> None:
    """A final whose arguments differ from the tool_event that decided it is refused."""
    run_dir = _finished(tmp_path)

    def edit(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**r, "arguments": {"move": "e1d1"}} if r["kind"] == "final" else r
                for r in records]

    _forge(run_dir, edit)
    with pytest.raises(IntegrityError, match="differs from its tool_event in arguments"):
        verify_run(run_dir)


def test_reordered_lines_are_refused(tmp_path: Path) -> None:
    """Two log lines swapped break the chain at the first of them."""
    run_dir = _finished(tmp_path)
    path = run_dir / "events.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2], lines[3] = lines[3], lines[2]
    path.write_bytes(b"".join(lines))
    with pytest.raises(IntegrityError, match=re.escape(f"{path}:3: event chain broken")):
        verify_run(run_dir)


def test_edited_manifest_is_refused(tmp_path: Path) -> None:
    """A manifest edited after creation (a larger retry limit) no longer matches the digest
    the log's first record names."""
    run_dir = _finished(tmp_path)
    path = run_dir / "manifest.json"
    manifest = json.loads(path.read_bytes())
    manifest["policy"]["max_attempts"] = 9
    path.write_bytes(json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode() + b"\n")
    expected = re.escape(f"{path}: changed since the run was created")
    with pytest.raises(IntegrityError, match=expected):
        execute_run(run_dir, RandomMover(seed=2), validator=validate_move)


def test_log_of_another_run_is_refused(tmp_path: Path) -> None:
    """events.jsonl copied from another run does not open with this run's manifest digest."""
    one, two = _finished(tmp_path / "a"), _finished(tmp_path / "b", n=2)
    (one / "events.jsonl").write_bytes((two / "events.jsonl").read_bytes())
    with pytest.raises(IntegrityError, match=r"manifest\.json: changed since"):
        verify_run(one)


def test_a_forged_terminal_failure_before_the_cap_is_refused(tmp_path: Path) -> None:
    """A provider_error final is admitted only at the run's retry cap: forging one onto a
    cell that was answered at attempt 1 (chain recomputed) is refused, in a run without a cap
    and in a run whose cap is 3 retries alike."""
    for cap in (None, 3):
        schedule = Schedule.of("chess.move_choice/1", "t",
                               [move_choice_request(f"c{i}", FEN) for i in range(2)])
        agent = RandomMover(seed=2)
        run_dir = create_run(tmp_path / str(cap), schedule, describe_agent(agent),
                             policy=RetryPolicy(max_attempts=2, backoff_s=(0.0,),
                                                max_retries=cap))
        execute_run(run_dir, agent, validator=validate_move)

        def edit(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [{**r, "outcome": "provider_error", "response": None}
                    if r.get("cell") == "c0" and r["kind"] in ("tool_event", "final") else r
                    for r in records]

        _forge(run_dir, edit)
        with pytest.raises(IntegrityError, match="reliability outcome after 1 attempts"):
            verify_run(run_dir, validate_move)
