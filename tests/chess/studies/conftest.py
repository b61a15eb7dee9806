"""Fixtures of the evaluator tests: a small published label stage and real runs over it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rungbench.agents.outcomes import CallFailure, Outcome
from rungbench.agents.protocol import Request, Response, ToolCall
from rungbench.chess.engine import EngineConfig
from rungbench.chess.labels.cohort import freeze_cohort
from rungbench.chess.labels.config import LabelConfig
from rungbench.chess.labels.idle import IdleGate
from rungbench.chess.labels.label import run_label_stage
from rungbench.chess.labels.pool import PoolConfig, freeze_pool
from rungbench.chess.labels.stage_records import read_stage
from rungbench.chess.reference_agents import RandomMover, answer, legal_moves, validate_move
from rungbench.chess.studies.move_choice import fen_schedule
from rungbench.chess.workspace import Workspace
from rungbench.execute.policy import RetryPolicy
from rungbench.execute.runner import create_run, execute_run

OPEN = IdleGate(max_load=1e9)
"""An idle gate that never refuses."""
DEPTH = 6
"""Small evaluator depth for tests (the registered one is 12)."""


@pytest.fixture(scope="session")
def label_stage(tmp_path_factory: pytest.TempPathFactory, label_data: Any) -> Path:
    """A published label stage over a small bundled-data pool (Stockfish, 2,000 nodes)."""
    from rungbench.chess.labels.qualify import qualify

    ws = Workspace(tmp_path_factory.mktemp("labels") / "ws")
    freeze_pool(ws, label_data.sources(2, 1), PoolConfig(reserve=0))
    freeze_cohort(ws, "pilot", label_data.pilot, terminal=True)
    freeze_cohort(ws, "replication", label_data.replication, terminal=True)
    qualify(ws)
    run_label_stage(ws, LabelConfig(engine=EngineConfig(nodes=2_000, hash_mb=16)), OPEN)
    return ws.stage


def stage_fens(stage: Path) -> list[str]:
    """The FENs of the stage's labelled positions, manifest order."""
    manifest, lists = read_stage(stage)
    return [lists[key].fen for key, _ in manifest.entries]


class ScriptedMover:
    """Answers per cell index: a random legal move, or a registered fault."""

    name = "test:scripted"

    def __init__(self, script: dict[str, str], other_fen: str) -> None:
        self.script = script
        self.other_fen = other_fen
        self.inner = RandomMover(seed=3)

    def describe(self) -> dict[str, Any]:
        """Manifest description."""
        return {"kind": "test", "name": self.name, "script": dict(sorted(self.script.items()))}

    def respond(self, request: Request) -> Response:
        """Answer ``request`` as scripted for its case id."""
        action = self.script.get(request.case_id, "random")
        fen = str(request.metadata["fen"])
        if action == "illegal":
            return answer(request, _illegal(fen))
        if action == "not_uci":
            return answer(request, "Nf3!!")
        if action == "wrong_position":
            own = set(legal_moves(fen))
            return answer(request, next(m for m in legal_moves(self.other_fen) if m not in own))
        if action == "malformed":
            return Response(text=None, tool_calls=(ToolCall("submit_move", '{"move": e2,,'),))
        if action == "refusal":
            return Response(text=None, refusal="I won't play chess.")
        if action == "network":
            raise CallFailure(Outcome.NETWORK_ERROR, "connection reset (scripted)")
        return self.inner.respond(request)


def _illegal(fen: str) -> str:
    legal = set(legal_moves(fen))
    return next(f"{a}{b}" for a in ("a1", "h8", "e4") for b in ("a8", "h1", "d5")
                if f"{a}{b}" not in legal)


MakeRun = Callable[..., Path]


@pytest.fixture
def make_run(label_stage: Path) -> MakeRun:
    """Return a builder of a finished run over the stage's positions with scripted answers."""

    def build(root: Path, script: dict[str, str] | None = None, *,
              validator: bool = True, repeat: int = 1) -> Path:
        fens = stage_fens(label_stage)
        source = root / "positions.jsonl"
        root.mkdir(parents=True, exist_ok=True)
        rows = [{"fen": fen, "id": f"c{r}-{i}"} for r in range(repeat)
                for i, fen in enumerate(fens)]
        source.write_text("".join(json.dumps(row) + "\n" for row in rows))
        schedule = fen_schedule(source)
        agent = ScriptedMover(script or {}, other_fen=fens[-1] if len(fens) > 1 else
                              "4k3/8/8/8/8/8/8/R3K3 w Q - 0 1")
        run_dir = create_run(root / "out", schedule, agent.describe(),
                             policy=RetryPolicy(max_attempts=1, backoff_s=(0.0,)),
                             run_id="run-test")
        execute_run(run_dir, agent, validator=validate_move if validator else None)
        return run_dir

    return build
