"""The task seam: each domain registers its tasks once; the runner and ``jobs`` dispatch
through the registry and never name a domain (docs/ARCHITECTURE.md, "The task seam").

A :class:`Task` says, for one kind of cell (the ``task`` field of a schedule):

* how a schedule is built from a source a user names (``schedule_from``: a puzzle CSV, a
  causal bench directory, ...; it returns None for a source it does not claim);
* how an answer is validated (``validator``), and the toolbox of a tool-use episode;
* which planted and reference agents it has (``agent``: a spec of kind ``planted`` or
  ``reference`` to the agent);
* what happens after a run (``after_run``: the causal benchmark writes its
  ``agent_responses.jsonl``).

Domains register through the ``rungbench.tasks`` entry-point group (``pyproject.toml``),
each naming a sequence of tasks, so a third party's package can add its own tasks without
touching rungbench. :func:`open_agent` turns any :class:`~rungbench.agents.spec.AgentSpec`
into the agent a run sends to: an endpoint's provider, or a domain's agent (served on
loopback when ``serve`` is set, so its answers cross the real HTTP path).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from rungbench.agents.outcomes import Validator
from rungbench.agents.protocol import Agent, Request, close_agent
from rungbench.agents.spec import AgentSpec
from rungbench.errors import InputError
from rungbench.execute.schedule import Schedule
from rungbench.execute.tools import ToolboxFactory

ENTRY_POINTS = "rungbench.tasks"
"""The entry-point group under which packages register their tasks."""

ScheduleSource = Callable[[Path, int | None, int], Schedule | None]
"""``(source, limit, offset) -> schedule``, or None when the source is not this task's."""
AgentFactory = Callable[[AgentSpec, Path | None], Agent]
"""``(planted or reference spec, the run's source) -> agent``; raises InputError naming an
unknown agent."""
AfterRun = Callable[[Path], Mapping[str, Any]]
"""``run directory -> what to add to the run's summary``."""


@dataclass(frozen=True)
class Task:
    """One kind of cell, as its domain registers it."""

    name: str
    """The task id a schedule carries (``chess.move_choice/1``)."""
    description: str
    """One line: what a cell of this task asks."""
    validator: Validator | None = None
    """Checks an answer's tool call (None: any answer is taken)."""
    agent: AgentFactory | None = None
    """The domain's planted and reference agents (None: it has none)."""
    schedule_from: ScheduleSource | None = None
    """Builds a schedule from a source a user names (None: schedules come from elsewhere,
    a study binding say)."""
    after_run: AfterRun | None = None
    """Run after a run of this task completes its session."""
    toolbox: ToolboxFactory | None = None
    """Each attempt is a tool-use episode with this toolbox (None: one call per attempt)."""
    sources: str = ""
    """What ``schedule_from`` accepts, for messages."""


@functools.cache
def registered() -> dict[str, Task]:
    """Every registered task by name (loaded once from the entry points)."""
    found: dict[str, Task] = {}
    for point in sorted(metadata.entry_points(group=ENTRY_POINTS), key=lambda p: p.name):
        for task in point.load():
            if not isinstance(task, Task):
                raise InputError(f"entry point {point.name!r} registers {task!r}, not a Task",
                                 field=ENTRY_POINTS)
            if task.name in found:
                raise InputError(f"task {task.name!r} is registered twice",
                                 field=ENTRY_POINTS)
            found[task.name] = task
    if not found:
        raise InputError("no task is registered: rungbench's entry points are missing "
                         "(install the package: make setup)", field=ENTRY_POINTS)
    return found


def task_named(name: str) -> Task:
    """The task ``name``; an unknown one is refused listing the registered tasks."""
    tasks = registered()
    if name not in tasks:
        raise InputError(f"unknown task {name!r}; registered: {', '.join(sorted(tasks))}",
                         field="task")
    return tasks[name]


def schedule_from(source: Path, *, limit: int | None = None, offset: int = 0) -> Schedule:
    """The schedule the first task claiming ``source`` builds from it."""
    if not source.exists():
        raise InputError("schedule source does not exist", path=str(source))
    accepted = []
    for task in registered().values():
        if task.schedule_from is None:
            continue
        built = task.schedule_from(source, limit, offset)
        if built is not None:
            return built
        accepted.append(task.sources)
    raise InputError(f"no task reads this source; expected {', or '.join(accepted)}",
                     path=str(source))


def validator_for(task: str) -> Validator | None:
    """The answer validator of ``task`` cells (None for a task without one)."""
    return task_named(task).validator


def after_run(task: str, run_dir: Path) -> dict[str, Any]:
    """What ``task``'s after-run step adds to a run's summary (nothing without one)."""
    step = task_named(task).after_run
    return {} if step is None else dict(step(run_dir))


def domain_agent(spec: AgentSpec, task: str, source: Path | None = None) -> Agent:
    """The planted or reference agent ``spec`` names, as ``task``'s domain builds it."""
    factory = task_named(task).agent
    if factory is None:
        raise InputError(f"task {task} has no planted or reference agents; give an "
                         "endpoint (openai:MODEL or a models-file label)", field="model")
    return factory(spec, source)


def build_agent(spec: AgentSpec, task: str, source: Path | None = None,
                environ: Mapping[str, str] | None = None) -> Agent:
    """The agent ``spec`` names for ``task`` cells, built in this process (what a worker
    process rebuilds it with): an endpoint's provider, or the domain's agent."""
    from rungbench.agents.providers import open_provider

    if spec.kind == "openai":
        return open_provider(spec, environ=environ)
    return domain_agent(spec, task, source)


@contextmanager
def open_agent(spec: AgentSpec, task: str, *, source: Path | None = None,
               requests: Iterable[Request] = (), serve: bool = False,
               environ: Mapping[str, str] | None = None,
               **server: Any) -> Iterator[Agent]:
    """The agent ``spec`` names for ``task`` cells, closed on exit.

    An ``openai`` spec opens its provider. A planted or reference spec is built by the
    task's domain; with ``serve`` it is served on loopback (``requests`` registered so it
    sees their metadata; ``server`` options go to
    :func:`~rungbench.agents.providers.serve_on_loopback`) and the provider pointed at it
    is yielded, labelled with the spec's label and carrying the spec's prices (so a
    reference agent standing in for a priced model records them in its run manifest).
    """
    from rungbench.agents.providers import serve_on_loopback

    agent = build_agent(spec, task, source, environ)
    try:
        if serve and spec.kind != "openai":
            with serve_on_loopback(agent, label=spec.label, requests=requests,
                                   pricing=spec.pricing, **server) as provider:
                yield provider
        else:
            yield agent
    finally:
        close_agent(agent)
