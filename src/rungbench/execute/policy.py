"""The registered retry sequence for reliability outcomes.

Seed 000 ("An effect must survive attempts to explain it away"): a failed request
may be retried only in the identical frozen cell under the fixed retry limit.
The policy is part of a run's identity (its JSON goes into the run manifest);
model failures are never retried (see :mod:`rungbench.agents.outcomes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rungbench.errors import InputError

POLICY_VERSION = "rungbench.retry/2"
"""Version 2 adds ``stop_after_systematic``; a version 1 policy (written before it) reads
back with it off (0), as it ran."""
EARLIER_VERSION = "rungbench.retry/1"
STOP_AFTER_SYSTEMATIC = 3
"""Default of :attr:`RetryPolicy.stop_after_systematic`."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often, and after what wait, a cell with a reliability failure is re-sent."""

    max_attempts: int = 4
    """Attempts per cell in each session (start or resume), the first one included; a cell
    still failing after them has no final outcome and is retried by the next resume."""
    backoff_s: tuple[float, ...] = (2.0, 8.0, 30.0)
    """Wait before attempt 2, 3, …; the last value repeats."""
    honor_retry_after: bool = True
    """Wait at least the server's Retry-After when it sends one."""
    max_wait_s: float = 120.0
    """Upper bound on any single wait, Retry-After included."""
    stop_after_systematic: int = STOP_AFTER_SYSTEMATIC
    """A session stops taking cells after this many cells in a row failed systematically
    (nothing listening, an unknown host, HTTP 401/403/404, an unknown model:
    :attr:`rungbench.agents.outcomes.CallFailure.systematic`); such a cell is not retried
    within the session. 0: never stop (every cell runs its whole retry sequence)."""
    max_retries: int | None = None
    """Retries of one cell over the whole run, every session counted (the run's event log
    holds the count): the cell is sent at most ``max_retries + 1`` times, and a failure of
    the attempt that reaches the cap is the cell's final outcome, a terminal provider
    failure no resume sends again. None: no run-wide cap (each session retries afresh)."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise InputError(
                f"max_attempts must be >= 1, got {self.max_attempts!r}", field="max_attempts"
            )
        if isinstance(self.stop_after_systematic, bool) or not isinstance(
                self.stop_after_systematic, int) or self.stop_after_systematic < 0:
            raise InputError(f"stop_after_systematic must be an integer >= 0, got "
                             f"{self.stop_after_systematic!r}", field="stop_after_systematic")
        if self.max_retries is not None and (isinstance(self.max_retries, bool) or not
                                             isinstance(self.max_retries, int)
                                             or self.max_retries < 0):
            raise InputError(f"max_retries must be an integer >= 0, got {self.max_retries!r}",
                             field="max_retries")
        if any(b < 0 for b in self.backoff_s) or self.max_wait_s < 0:
            raise InputError(
                f"waits must be non-negative, got {self.backoff_s!r}", field="backoff_s"
            )

    def wait_before(self, attempt: int, retry_after: float | None = None) -> float:
        """Return the seconds to wait before ``attempt`` (2, 3, …) after a reliability failure."""
        if attempt < 2:
            return 0.0
        base = self.backoff_s[min(attempt - 2, len(self.backoff_s) - 1)] if self.backoff_s else 0.0
        if self.honor_retry_after and retry_after is not None:
            base = max(base, retry_after)
        return min(base, self.max_wait_s)

    def to_json(self) -> dict[str, Any]:
        """Return the policy as recorded in the run manifest."""
        return {
            "version": POLICY_VERSION,
            "max_attempts": self.max_attempts,
            "backoff_s": list(self.backoff_s),
            "honor_retry_after": self.honor_retry_after,
            "max_wait_s": self.max_wait_s,
            "stop_after_systematic": self.stop_after_systematic,
            **({} if self.max_retries is None else {"max_retries": self.max_retries}),
        }

    def is_capped(self, attempt: int) -> bool:
        """Whether run-wide attempt number ``attempt`` is the last the cap allows."""
        return self.max_retries is not None and attempt >= self.max_retries + 1

    def is_last(self, attempt: int, prior_attempts: int) -> bool:
        """Whether ``attempt`` is the last one this session may send: the session's own
        limit, or the run-wide cap."""
        return attempt - prior_attempts >= self.max_attempts or self.is_capped(attempt)

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> RetryPolicy:
        """Rebuild a policy from :meth:`to_json` output."""
        if value.get("version") not in (POLICY_VERSION, EARLIER_VERSION):
            raise InputError(
                f"unknown retry policy version {value.get('version')!r}", field="policy.version"
            )
        return cls(
            max_attempts=int(value["max_attempts"]),
            backoff_s=tuple(float(b) for b in value["backoff_s"]),
            honor_retry_after=bool(value["honor_retry_after"]),
            max_wait_s=float(value["max_wait_s"]),
            stop_after_systematic=int(value.get("stop_after_systematic", 0)),
            max_retries=None if value.get("max_retries") is None
            else int(value["max_retries"]),
        )
