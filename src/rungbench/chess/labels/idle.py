"""The idle-host gate (seed 002, "A resumable process that cannot publish half a result").

The label stage is CPU-heavy; it must not compete with live evaluation suites whose
runtime is itself under measurement. The gate compares the one-minute load average
with a configured threshold before engine start, before every uncached search and
before publication, and refuses (``host_busy``) rather than waiting silently.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rungbench.errors import InputError, Reason, Refusal

LoadReader = Callable[[], float]
"""Returns the host's current one-minute load average."""


def one_minute_load() -> float:
    """Return the one-minute load average of this host."""
    return float(os.getloadavg()[0])


def default_max_load() -> float:
    """Return the default threshold: the number of CPUs (one runnable task per core)."""
    return float(os.cpu_count() or 1)


def valid_max_load(value: float) -> bool:
    """Whether ``value`` is a usable threshold: finite and not negative (nan disables nothing)."""
    return isinstance(value, int | float) and math.isfinite(value) and value >= 0


@dataclass(frozen=True)
class IdleGate:
    """A configured load-average threshold."""

    max_load: float = field(default_factory=default_max_load)
    """Refuse when the one-minute load average exceeds this."""
    read_load: LoadReader = one_minute_load
    """Where the load is read from (replaceable in tests)."""

    def __post_init__(self) -> None:
        if not valid_max_load(self.max_load):
            raise InputError(f"max_load must be a finite number >= 0, got {self.max_load!r}",
                             field="max_load")

    def check(self, moment: str, *, own: int = 0) -> float:
        """Return the load net of ``own`` if at most the threshold; else refuse naming ``moment``.

        ``own`` is the number of single-thread engine processes this stage itself runs
        (or just ran: the one-minute average still carries them); each adds up to one
        runnable task, so the stage does not refuse because of its own searches.
        """
        load = self.read_load()
        net = load - own
        if net > self.max_load:
            raise Refusal([Reason(
                "host_busy",
                f"load average {load:.2f} (net of {own} own engines: {net:.2f}) exceeds "
                f"{self.max_load:.2f} {moment}",
                subject=moment, data={"load": load, "own": own, "max_load": self.max_load},
            )], gate="idle host")
        return net

    def to_json(self) -> dict[str, Any]:
        """Return the recorded configuration of the gate."""
        return {"metric": "loadavg_1m", "max_load": self.max_load,
                "own_engines_discounted": True}
