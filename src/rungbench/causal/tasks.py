"""The causal domain's tasks, registered once (``pyproject.toml``, entry-point group
``rungbench.tasks``; docs/ARCHITECTURE.md, "The task seam").

* ``causal.public_case/1``: one benchmark case answered through ``submit_answer``
  (docs/CONTRACTS.md §3); schedules from a built bench directory; reference agents read
  the bench's private oracle; after a run, ``responses.jsonl`` is written for the scorer;
* ``causal.ablation_case/1``: an arm × case × sample cell of the ablation matrix, a tool-use
  episode with ``causal``, ``counterfactual``, ``calc`` and ``identify``; planted agents
  ``reader``, ``graph_only``, ``bare``, ``counterfactual``, ``invalid``;
* ``causal.episode/2``: a records/2 case as a tool-use episode (``logs``, ``metrics``,
  ``run_experiment``); its toolbox holds the bench's private oracles, so the episode
  runner (:mod:`rungbench.causal.bench.episode_runs`) sets it; reference agents are the
  episode policies.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rungbench.agents.protocol import Agent
from rungbench.agents.spec import AgentSpec
from rungbench.causal.ablations.cells import ABLATION_TASK, validate_ablation_answer
from rungbench.causal.ablations.planted import planted_agent
from rungbench.causal.ablations.tools import causal_toolbox
from rungbench.causal.bench.episode_agents import EpisodePolicyAgent
from rungbench.causal.bench.episode_tools import EPISODE_TASK
from rungbench.causal.bench.requests import (
    CAUSAL_TASK,
    causal_schedule,
    reference_case_agent,
    validate_causal_answer,
    write_agent_responses,
)
from rungbench.errors import InputError
from rungbench.execute.schedule import Schedule
from rungbench.execute.tasks import Task


def _no_planted(spec: AgentSpec, what: str) -> None:
    if spec.kind != "reference":
        raise InputError(f"{what} has reference agents only, not {spec.kind}:{spec.model}",
                         field="model")


def case_agent(spec: AgentSpec, source: Path | None) -> Agent:
    """A causal reference agent (reads the bench's private oracle records)."""
    _no_planted(spec, "the causal benchmark")
    return reference_case_agent(spec.model, source)


def case_schedule(source: Path, limit: int | None, offset: int) -> Schedule | None:
    """A built bench directory's schedule, one cell per public case (None otherwise)."""
    if source.is_dir() and (source / "public").is_dir():
        return causal_schedule(source, limit=limit, offset=offset)
    return None


def write_responses(run_dir: Path) -> Mapping[str, Any]:
    """The run's answers as agent_response records, for the scorer."""
    return {"agent_responses": write_agent_responses(run_dir)}


def ablation_agent(spec: AgentSpec, source: Path | None) -> Agent:
    """A planted ablation agent (:data:`~rungbench.causal.ablations.planted.PLANTED`)."""
    if spec.kind != "planted":
        raise InputError(f"the ablation arms have planted agents only, not "
                         f"{spec.kind}:{spec.model}", field="model")
    return planted_agent(spec.model)


def episode_agent(spec: AgentSpec, source: Path | None) -> Agent:
    """An episode policy (``p2_protocol``, ``premature_commitment``, ``fabricating``)."""
    _no_planted(spec, "the episode families")
    return EpisodePolicyAgent(spec.model)


TASKS = (
    Task(CAUSAL_TASK, "answer one causal benchmark case through submit_answer",
         validator=validate_causal_answer, agent=case_agent, schedule_from=case_schedule,
         after_run=write_responses, sources="a causal bench directory (DIR/public/)"),
    Task(ABLATION_TASK, "answer an ablation-arm case with the causal, calc and identify tools",
         validator=validate_ablation_answer, agent=ablation_agent, toolbox=causal_toolbox),
    Task(EPISODE_TASK, "diagnose a records/2 case with the logs, metrics and run_experiment "
         "tools", agent=episode_agent),
)
"""What the causal domain registers."""
