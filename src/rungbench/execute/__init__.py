"""Resumable cell runner: frozen schedule → requests → responses, retries, tool events."""

from rungbench.execute.policy import RetryPolicy
from rungbench.execute.runner import RunSummary, create_run, execute_run, verify_run
from rungbench.execute.schedule import Cell, Schedule

__all__ = [
    "Cell",
    "RetryPolicy",
    "RunSummary",
    "Schedule",
    "create_run",
    "events",
    "execute_run",
    "executors",
    "policy",
    "progress",
    "run_dir",
    "runner",
    "schedule",
    "tasks",
    "tools",
    "verify_run",
]
