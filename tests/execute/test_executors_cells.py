"""Cells on the local Ray cluster: agent calls run as Ray tasks, the driver keeps the log, and
the run's objects and per-cell records equal the local executor's."""

from __future__ import annotations

import json
import pickle
from collections import defaultdict
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rungbench.agents.loopback import Fault, LoopbackServer
from rungbench.agents.openai_provider import OpenAIProvider
from rungbench.chess.reference_agents import RandomMover, move_choice_request, validate_move
from rungbench.cli import app
from rungbench.execute.events import read_events
from rungbench.execute.executors import RayExecutor, WorkerAgent
from rungbench.execute.policy import RetryPolicy
from rungbench.execute.runner import create_run, describe_agent, execute_run
from rungbench.execute.schedule import Schedule

pytestmark = pytest.mark.xdist_group("ray")

FENS = [
    "r5k1/pp3p1p/2b2qp1/3pr3/8/4P2P/R1PN1PP1/Q3K2R w K - 0 19",
    "1r6/1PN5/3p4/4kpp1/1R6/P3n3/K1P5/8 b - - 0 49",
    "8/8/8/4k3/8/8/4P3/4K3 w - - 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
]
VARYING = {"t", "chain", "latency_s", "run_id"}
"""Fields of a log record that name the moment or the run, not what happened."""
KEY_ENV = "RUNGBENCH_TEST_LOOPBACK_KEY"


def per_cell(run_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """Every cell's records in log order, without times, chain links and latencies."""
    cells: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in read_events(run_dir / "events.jsonl"):
        if "cell" in event:
            cells[event["cell"]].append({k: v for k, v in event.items() if k not in VARYING})
    return dict(cells)


def objects(run_dir: Path) -> dict[str, bytes]:
    """Every stored object (schedule, requests, responses) by path."""
    root = run_dir / "objects"
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_cli_run_on_ray_stores_the_local_runs_objects_and_records(
        ray_cluster: Any, tmp_path: Path) -> None:
    """``rungbench run --executor ray`` (reference agent, rebuilt in the workers): the same
    objects byte for byte, the same records per cell and the same outcomes as local."""
    source = tmp_path / "positions.jsonl"
    source.write_text("".join(json.dumps({"fen": f, "id": f"p{i}"}) + "\n"
                              for i, f in enumerate(FENS * 2)))
    runs = {}
    for kind in ("local", "ray"):
        result = CliRunner().invoke(app, ["run", str(source), "--agent", "reference:random",
                                          "--seed", "5", "--concurrency", "3", "--out",
                                          str(tmp_path / kind), "--executor", kind, "--json"])
        assert result.exit_code == 0, result.output
        runs[kind] = json.loads(result.stdout)
    local, remote = (Path(runs[k]["run_dir"]) for k in ("local", "ray"))
    assert runs["ray"]["outcomes"] == runs["local"]["outcomes"] == {"answered": 8}
    assert objects(remote) == objects(local)
    assert per_cell(remote) == per_cell(local)


SIX_FENS = [*FENS, "4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1", "8/5k2/8/8/8/8/1q6/K7 w - - 0 1"]
"""Six distinct positions: each cell's request (and so the fault keyed by it) is its own."""


def _schedule() -> Schedule:
    return Schedule.of("chess.move_choice/1", "ray-test",
                       [move_choice_request(f"c{i}", fen) for i, fen in enumerate(SIX_FENS)])


def test_provider_calls_on_ray_repeat_the_local_run_with_faults_and_a_global_bound(
        ray_cluster: Any, tmp_path: Path) -> None:
    """The real OpenAI client against loopback, a 500 on one cell's first arrival: on Ray the
    per-cell records (retry included) and stored objects equal local, and at most 2
    calls were in flight at once although the cluster runs them in other processes."""
    schedule = _schedule()
    flaky = schedule.cells[1].request.payload_digest()
    faults = {flaky: [Fault.SERVER_ERROR]}
    policy = RetryPolicy(max_attempts=3, backoff_s=(0.0,))
    dirs: dict[str, Path] = {}
    for kind in ("local", "ray"):
        with LoopbackServer(RandomMover(seed=4), api_key="k", faults=faults,
                            requests=[c.request for c in schedule]) as server:
            recipe = partial(OpenAIProvider, "m", base_url=server.base_url, api_key_env=KEY_ENV,
                             environ={KEY_ENV: "k"})
            provider = recipe()
            agent = provider if kind == "local" else WorkerAgent(provider, recipe)
            run_dir = create_run(tmp_path / kind, schedule, describe_agent(agent), policy=policy,
                                 run_id="r")
            summary = execute_run(run_dir, agent, validator=validate_move, concurrency=2,
                                  executor=None if kind == "local" else RayExecutor())
            provider.close()
            assert summary.outcomes == {"answered": 6} and server.max_in_flight <= 2
            dirs[kind] = run_dir
    records = per_cell(dirs["ray"])
    assert records == per_cell(dirs["local"])
    assert [r["outcome"] for r in records["c1"] if r["kind"] == "tool_event"] == [
        "provider_error", "answered"]
    assert objects(dirs["ray"]) == objects(dirs["local"])


def test_a_worker_agent_carries_its_recipe_not_the_api_key(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Pickled, a WorkerAgent holds the recipe and name only: the driver's key stays behind."""
    monkeypatch.setenv(KEY_ENV, "sk-driver-secret-0123456789")
    recipe = partial(OpenAIProvider, "m", base_url="http://127.0.0.1:9/v1", api_key_env=KEY_ENV)
    provider = recipe()
    data = pickle.dumps(WorkerAgent(provider, recipe))
    provider.close()
    assert b"sk-driver-secret" not in data
    clone = pickle.loads(data)
    assert clone.name == "openai:m" and clone.recipe.keywords["api_key_env"] == KEY_ENV
