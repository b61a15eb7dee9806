"""Run arms through the resumable runner: one run per arm, one agent for every arm.

Each arm gets its own run directory (``OUT/runs/<run_id>``) whose frozen schedule records the
bench, the arm and its digest, and the matrix preset's digest; every cell is a tool-use
episode (:mod:`rungbench.execute.tools`) with the arm's budget. The same agent — the same
model behind the same endpoint — serves every arm, so arms differ only in what the preset
registers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rungbench.agents.protocol import Agent
from rungbench.causal.ablations.arms import Arm, Matrix
from rungbench.causal.ablations.cells import (
    arm_schedule,
    run_rows,
    select_cases,
    validate_ablation_answer,
)
from rungbench.causal.ablations.contamination import Needles
from rungbench.causal.ablations.tools import causal_toolbox
from rungbench.causal.bench.verified import CASES, bench_cases, bench_oracles, open_bench
from rungbench.execute.runner import RunSummary, create_run, describe_agent, execute_run


@dataclass(frozen=True)
class ArmRun:
    """One finished arm run."""

    arm: str
    """Arm name."""
    run_dir: Path
    """The run directory."""
    summary: RunSummary
    """What the runner did."""
    rows: list[dict[str, Any]]
    """Scored rows per cell (harness side; per-case values are private)."""


def run_arms(
    matrix: Matrix, arms: Sequence[str], bench_dir: Path, out: Path, agent: Agent, *,
    samples: int | None = None, per_world: int | None = None, concurrency: int = 1,
    progress: Callable[[str, int, int], None] | None = None, cohort: Needles | None = None,
) -> list[ArmRun]:
    """Run every arm in ``arms`` on the bench's chosen cases; return the scored runs.
    ``cohort`` adds a validation cohort's needles to the per-cell leak scan
    (:func:`~rungbench.causal.ablations.cells.run_rows`)."""
    bench = open_bench(bench_dir)
    cases = bench_cases(bench)
    oracles = bench_oracles(bench)
    chosen = select_cases(cases, per_world or matrix.items_per_world)
    source = {"bench": bench_dir.name, "cases": bench.digests[CASES],
              "matrix": matrix.name, "matrix_digest": matrix.digest}
    done = []
    for name in arms:
        arm = matrix.arm(name)
        done.append(run_arm(arm, chosen, cases, samples or matrix.samples, source, out, agent,
                            oracles, concurrency=concurrency, progress=progress,
                            cohort=cohort))
    return done


def run_arm(arm: Arm, chosen: Sequence[Any], cases: Sequence[Any], samples: int,
            source: dict[str, Any], out: Path, agent: Agent, oracles: Any, *,
            concurrency: int = 1,
            progress: Callable[[str, int, int], None] | None = None,
            cohort: Needles | None = None) -> ArmRun:
    """Create and execute one arm's run; return it scored."""
    schedule = arm_schedule(arm, chosen, cases, samples, source)
    run_dir = create_run(out, schedule, describe_agent(agent))
    hook = None if progress is None else (lambda d, t: progress(arm.name, d, t))
    summary = execute_run(run_dir, agent, validator=validate_ablation_answer,
                          toolbox=causal_toolbox, concurrency=concurrency, progress=hook)
    return ArmRun(arm.name, run_dir, summary, run_rows(run_dir, oracles, cases,
                                                           cohort=cohort))
