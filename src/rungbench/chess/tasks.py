"""The chess domain's tasks, registered once (``pyproject.toml``, entry-point group
``rungbench.tasks``; docs/ARCHITECTURE.md, "The task seam").

One task, ``chess.move_choice/1``: a position, one ``submit_move`` tool, a legal UCI move
back. Its schedules come from a Lichess puzzle CSV, a FEN JSONL, or a study binding
(:mod:`rungbench.chess.studies.ladder`); its reference agents are
:data:`~rungbench.chess.reference_agents.REFERENCE_NAMES` (``reference:engine`` takes a
``nodes`` parameter) and its planted agents
:data:`~rungbench.chess.studies.planted.PLANTED_NAMES`.
"""

from __future__ import annotations

from pathlib import Path

from rungbench.agents.protocol import Agent
from rungbench.agents.spec import AgentSpec
from rungbench.chess.reference_agents import TASK, reference_move_agent, validate_move
from rungbench.chess.studies.move_choice import fen_schedule, puzzle_schedule
from rungbench.chess.studies.planted import planted_agent
from rungbench.errors import InputError
from rungbench.execute.schedule import Schedule
from rungbench.execute.tasks import Task

DEFAULT_NODES = 20_000
"""Node budget of ``reference:engine`` when its spec sets no ``nodes`` parameter."""


def move_agent(spec: AgentSpec, source: Path | None) -> Agent:
    """The reference or planted move-choice agent ``spec`` names."""
    if spec.kind == "reference":
        nodes = spec.params.get("nodes", DEFAULT_NODES)
        if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
            raise InputError(f"nodes must be an integer >= 1, got {nodes!r}",
                             field="params.nodes")
        return reference_move_agent(spec.model, seed=spec.seed, nodes=nodes)
    return planted_agent(spec.model, seed=spec.seed)


def move_schedule(source: Path, limit: int | None, offset: int) -> Schedule | None:
    """A puzzle CSV's or a FEN JSONL's move-choice schedule (None for any other source)."""
    if source.is_file() and source.suffix == ".csv":
        return puzzle_schedule(source, limit=limit, offset=offset)
    if source.is_file() and source.suffix == ".jsonl":
        return fen_schedule(source, limit=limit, offset=offset)
    return None


MOVE_CHOICE = Task(
    name=TASK,
    description="choose a move in a chess position through the submit_move tool",
    validator=validate_move,
    agent=move_agent,
    schedule_from=move_schedule,
    sources="a puzzle .csv or a FEN .jsonl",
)
"""Move choice: a legal UCI move per position."""

TASKS = (MOVE_CHOICE,)
"""What the chess domain registers."""
