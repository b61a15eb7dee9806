"""The label run's configuration, in a module of its own so that the runner
(:mod:`rungbench.chess.labels.label`) and publication (:mod:`rungbench.chess.labels.publish`)
both take it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass, field

from rungbench.chess.engine import EngineConfig
from rungbench.chess.labels.qualify import DEFAULT_COHORTS
from rungbench.errors import InputError

MAX_WORKERS = 64
"""Most engine processes a label run may start."""


@dataclass(frozen=True)
class LabelConfig:
    """Everything a label run is configured with (recorded in the stage)."""

    engine: EngineConfig = field(default_factory=EngineConfig)
    """The search contract."""
    cohorts: tuple[str, ...] = DEFAULT_COHORTS
    """Cohorts the pool must be jointly cleared against."""
    workers: int = 1
    """Engine processes searching in parallel."""

    def __post_init__(self) -> None:
        if isinstance(self.workers, bool) or not 1 <= self.workers <= MAX_WORKERS:
            raise InputError(f"workers must be in 1..{MAX_WORKERS}, got {self.workers!r}",
                             field="workers")
